"""``veriforge cudaperf train``: GRPO with multi-turn refinement from a ``cudaperf.toml``.

Registered into ``veriforge cudaperf`` by :mod:`veriforge.cli.cudaperf_cmd`. Nothing heavy is
imported until the command runs (torch, TRL and transformers load inside it), so ``veriforge
--help`` stays fast. Configuration errors print one ``error:`` block and exit with code 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from veriforge.errors import VeriforgeError


def _fail(text: str, code: int = 2) -> None:
    typer.echo(f"error: {text}", err=True)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add the ``train`` command to the ``cudaperf`` command group ``app``."""

    @app.command("train")
    def train_cmd(
        config: Annotated[Path, typer.Option("--config", "-f", help="The run's cudaperf.toml "
                                                                    "(docs/cudaperf-train.md).")],
        set_: Annotated[list[str] | None, typer.Option("--set", "-s", help="Override a key, e.g. --set "
                                                                           "rollout.turns=3 (TOML values).")] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate the config and list the tasks; "
                                                                "train nothing.")] = False,
        export_verl: Annotated[Path | None, typer.Option("--export-verl", help="Write the selected tasks as a "
                                                         "verl RL parquet file and exit (cluster scale).")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> None:
        """Train a policy to write fast CUDA with GRPO, multi-turn feedback and the unified reward."""
        try:
            from veriforge.cudaperf.config import load_config

            cfg = load_config(config, list(set_ or []))
            if dry_run or export_verl is not None:
                from veriforge.cudaperf.train import export_verl as write_verl
                from veriforge.cudaperf.train import resolve_tasks, task_ref

                specs = resolve_tasks(cfg.tasks)
                if export_verl is not None:
                    path = write_verl(cfg, export_verl)
                    typer.echo(f"wrote {len(specs)} task(s) in verl's RL layout to {path}")
                    return
                plan = {"model": cfg.model.name, "tasks": [task_ref(s) for s in specs], "turns": cfg.rollout.turns,
                        "gamma": cfg.rollout.gamma, "group_size": cfg.train.num_generations,
                        "steps": cfg.train.steps, "output_dir": cfg.output_dir, "executor": cfg.reward.executor,
                        "vllm": cfg.vllm.mode if cfg.vllm.enabled else None}
                typer.echo(json.dumps(plan, indent=2) if as_json else
                           "\n".join(f"{k}: {v}" for k, v in plan.items()))
                return
            from veriforge.cudaperf.train import train

            result = train(cfg, progress=lambda msg: typer.echo(msg, err=True))
        except VeriforgeError as exc:
            _fail(str(exc))
            return
        typer.echo(json.dumps(result.to_dict(), indent=2, default=str) if as_json else result.summary())
