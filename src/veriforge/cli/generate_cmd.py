"""``veriforge generate "…task in words…" --task TASK --model MODEL``: OptiML-G, then OptiML-X.

OptiML-G asks the model for a plan and a kernel under each *thought* (implementation strategy),
compiles and verifies every candidate with feedback rounds, and keeps the best verified one; then,
unless ``--no-optimize``, OptiML-X searches over edits of it (built-in operators plus the model
proposer) under the same verification. A description alone cannot be verified, so a task (bundled
id or folder with a reference) is required: either as ``--task`` or as the argument itself.

Outputs under ``--out`` (default ``./optiml-<task>``): ``generated.cu`` (the winning thought's
kernel), ``generation.json`` (every thought's outcome, rounds and conversation),
``thoughts/<name>.cu``; after optimisation OptiML-X's ``best.cu``, ``tree.json`` (each edit with
its evidence, effect and verdict) and ``report.html``. Exit codes: 0 a verified kernel was
produced; 1 no thought produced one; 2 bad arguments or configuration (e.g. no model configured).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from veriforge.core import defaults


def _fail(text: str, code: int = 2) -> None:
    typer.echo(f"error: {text}", err=True)
    raise typer.Exit(code)


def _settings(ctx: typer.Context) -> Any:
    from veriforge.cli.main import state

    return state(ctx).settings()


def generate_cmd(
    ctx: typer.Context,
    request: Annotated[str, typer.Argument(help="the task in words (needs --task), or a task id/folder")],
    task: Annotated[str | None, typer.Option(
        "--task", "-t", help="task id or folder that verifies the kernel")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="model string (default: setting llm.model)")] = None,
    thoughts: Annotated[str | None, typer.Option(
        "--thoughts", help="comma-separated thought names (default: all)")] = None,
    thoughts_file: Annotated[Path | None, typer.Option(
        "--thoughts-file", help="TOML file adding/overriding thoughts")] = None,
    rounds: Annotated[int, typer.Option(
        "--rounds", "-k", help="turns per thought (compile/verify feedback)")] = 3,
    no_optimize: Annotated[bool, typer.Option(
        "--no-optimize", help="stop after generation (no OptiML-X)")] = False,
    budget: Annotated[int | None, typer.Option(
        "--budget", "-n", min=1, help="OptiML-X evaluations (incl. the start; default: setting optiml.budget, "
        f"{defaults.OPTIML_BUDGET})")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="output folder (default ./optiml-<task>)")] = None,
    backend: Annotated[str | None, typer.Option(
        "--backend", "-b", help="cpu (estimated time) or gpu (measured; default: setting cuda.backend, "
        f"{defaults.CUDA_BACKEND})")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="thoughts generated at once")] = 4,
    temperature: Annotated[float | None, typer.Option("--temperature", help="sampling temperature")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the outcome as JSON")] = False,
) -> None:
    """Generate a verified CUDA kernel with a Mixture of Thoughts, then optimise it by search."""
    from veriforge.errors import VeriforgeError

    backend = backend or _settings(ctx).cuda.backend
    budget = budget if budget is not None else _settings(ctx).optiml.budget
    if backend not in ("cpu", "gpu"):
        _fail(f"--backend must be cpu or gpu, got {backend!r}")
    store = None
    lock = None
    try:
        from veriforge.cli.preflight import check_model, prepare_out
        from veriforge.core.store import RunStore
        from veriforge.optiml.generator import (
            Generator,
            GeneratorConfig,
            resolve_client,
            resolve_generation_task,
        )
        from veriforge.optiml.thoughts import (
            default_thoughts,
            load_thoughts,
            parse_thought_names,
            select_thoughts,
        )

        settings = _settings(ctx)
        spec, words = resolve_generation_task(request, task)
        pool = load_thoughts(thoughts_file) if thoughts_file is not None else default_thoughts()
        chosen = select_thoughts(pool, parse_thought_names(thoughts))
        config = GeneratorConfig(rounds=rounds, concurrency=concurrency, backend=backend,
                                 temperature=temperature)
        out_dir = out if out is not None else Path(f"optiml-{spec.id}")
        quiet = as_json
        # before any model call: the output folder is usable and ours, and the model answers
        lock = prepare_out(out_dir, command="veriforge generate")
        store = RunStore.from_settings(settings)
        client = resolve_client(model, settings, store)
        checked = check_model(client.model, settings.llm)
        if not quiet:
            typer.echo(f"model {client.model}: {checked}")

        def on_event(kind: str, payload: dict[str, Any]) -> None:
            if quiet:
                return
            if kind == "round":
                typer.echo(f"  {payload['thought']:<16} turn {payload['turn'] + 1}: {payload['status']}")
            elif kind == "thought_done":
                typer.echo(f"  {payload['thought']:<16} done: {payload['status']}")

        if not quiet:
            typer.echo(f"OptiML-G: task {spec.id}, model {client.model}, thoughts "
                       f"{', '.join(t.name for t in chosen)}, {rounds} round(s) each")
        generator = Generator(client, spec, thoughts=chosen, config=config, store=store, on_event=on_event)
        result = _run(generator, words, client)
        paths = result.write(out_dir)
        summary: dict[str, Any] = {"generation": result.to_dict(), "out": str(out_dir),
                                   "files": {k: str(v) for k, v in paths.items()}}
        if not quiet:
            _print_generation(result)
        if not result.success:
            if as_json:
                typer.echo(json.dumps(summary, indent=2))
            else:
                typer.echo(f"no thought produced a verified kernel; details in {paths['json']}", err=True)
            raise typer.Exit(1)
        if not no_optimize:
            summary["optimization"] = _optimize(paths["kernel"], spec, client, store, budget, backend,
                                                out_dir, quiet)
    except VeriforgeError as exc:
        _fail(str(exc))
    finally:
        if store is not None:
            store.close()
        if lock is not None:
            lock.release()
    if as_json:
        typer.echo(json.dumps(summary, indent=2))


def _run(generator: Any, words: str | None, client: Any) -> Any:
    import asyncio

    async def main() -> Any:
        try:
            return await generator.run(words)
        finally:
            await client.aclose()

    return asyncio.run(main())


def _print_generation(result: Any) -> None:
    typer.echo("")
    for o in result.outcomes:
        mark = "*" if o.thought.name == result.winner else " "
        obj = f"{o.objective:.4g} ({o.provenance})" if o.objective is not None else "-"
        if o.objective is None and o.unscored_reason:
            obj = f"none: {o.unscored_reason}"[:300]
        typer.echo(f" {mark} {o.thought.name:<16} {o.status:<14} turns {len(o.rounds)}  objective {obj}")
    if result.winner:
        typer.echo(f"winning thought: {result.winner} (objective: {result.objective_name})")


def _optimize(kernel: Path, spec: Any, client: Any, store: Any, budget: int, backend: str, out_dir: Path,
              quiet: bool) -> dict[str, Any]:
    """OptiML-X on the generated kernel with the built-in operators and the model proposer; writes
    best.cu, tree.json and report.html (:func:`veriforge.optiml.report.write_outputs`)."""
    import threading

    from rich.console import Console

    from veriforge.cli.progress import StepProgress
    from veriforge.optiml.model_proposer import proposers_with_model
    from veriforge.optiml.report import model_calls_line, write_outputs
    from veriforge.optiml.xsearch import XSearchSettings, optimize

    settings = XSearchSettings(max_evaluations=budget, backend=backend)
    console = Console(stderr=quiet)
    with StepProgress(f"OptiML-X {kernel.name}", budget, console=console, quiet=quiet, prefix="optimize") as bar:

        def started(cand: Any) -> None:
            meta = getattr(cand, "metadata", None) or {}
            edit = meta.get("description") or meta.get("edit") or meta.get("operator") or "start"
            bar.started(threading.get_ident(), f"candidate {cand.hash[:10]} ({str(edit)[:60]})")

        def progress(p: dict[str, Any]) -> None:
            best = "best -" if p["best"] is None else f"best {p['best']:.4g}"
            bar.step(p["calls"], best + (f" · bottleneck: {p['bottleneck']}" if p["bottleneck"] else ""),
                     key=threading.get_ident())

        result = optimize(kernel, task=spec.folder, settings=settings, store=store, progress=progress,
                          started=started, proposers=proposers_with_model(client, spec))
    paths = write_outputs(result, out_dir)
    tree = result.tree_json()
    best_estimate = tree.get("best_estimate") or {}
    info = {"start_time_s": result.start_time, "best_time_s": result.best_time,
            "speedup": result.speedup, "provenance": settings.provenance,
            "estimate_status": best_estimate.get("status"), "unscored": tree.get("unscored") or [],
            "evaluations": result.evaluator_calls, "files": {k: str(v) for k, v in paths.items()},
            "run_id": result.search.run_id, "model_calls": result.model_calls()}
    if not quiet:
        status = f", estimate {best_estimate['status']}" if best_estimate.get("status") else ""
        typer.echo(f"OptiML-X: {result.start_time:.4g} s -> {result.best_time:.4g} s "
                   f"({settings.provenance}{status}), "
                   f"speedup {result.speedup:.2f}x after {result.evaluator_calls} evaluations, "
                   f"run {result.search.run_id}")
        if info["model_calls"]["failed"]:
            typer.echo(f"model calls: {model_calls_line(info['model_calls'])}")
        for u in info["unscored"][:5]:
            typer.echo(f"  verified, no score: #{u['id']}: {u['reason']}"[:400])
        for what, path in paths.items():
            typer.echo(f"{what:>7}: {path}")
    return info
