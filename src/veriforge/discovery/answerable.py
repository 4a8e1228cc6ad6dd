"""Can a careful solver answer a task from its instruction and data alone? (issue 18 part 5)

Two checks, recorded in ``task.json`` as ``veriforge.answerability`` and reported by ``d3gym
validate`` and the build report:

* **coverage** (always, no model): every operation of the gold program that shapes the
  outputs (row filters with their constants, groupings, computed columns, models and their
  parameters, seeds, plots; see :mod:`veriforge.discovery.progops`) must be stated in the
  instruction with its facts (column names, numbers). A missed operation is listed.
* **solver** (with a model): the model, given only what the environment shows an agent (the
  instruction, dataset previews and output paths; never the gold program), writes a program
  that :class:`veriforge.discovery.env.D3Env` runs and the task's own evaluator judges. A task
  whose instruction the solver cannot turn into passing outputs is flagged ``answerable:
  false``: kept, but flagged (a failing solver may be the model's fault, not the instruction's;
  the flag says "check this instruction", not "drop this task").

With a model the solver verdict decides ``answerable``; without one, the coverage does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from veriforge.discovery.errors import DiscoveryError
from veriforge.discovery.progops import instruction_coverage

__all__ = ["AnswerabilityError", "answerability", "record_answerability", "solver_check"]


class AnswerabilityError(DiscoveryError):
    """The task folder lacks what an answerability check needs (task.json, instruction, program)."""


def _task(task_dir: Path) -> tuple[dict[str, Any], str, str]:
    tj = task_dir / "task.json"
    if not tj.is_file():
        raise AnswerabilityError(f"{task_dir}: no task.json")
    task = json.loads(tj.read_text(encoding="utf-8"))
    inst = str(task.get("task_inst") or "")
    if not inst.strip():
        raise AnswerabilityError(f"{task_dir}: task.json has no task_inst")
    name = Path(str(task.get("gold_program_name") or "")).name
    prog = task_dir / "gold_program" / name if name else None
    source = prog.read_text(encoding="utf-8", errors="replace") if prog and prog.is_file() else ""
    return task, inst, source


def solver_check(
    task_dir: Path | str,
    client: Any,
    *,
    max_debug_rounds: int = 1,
    python: str | None = None,
) -> dict[str, Any]:
    """One solver episode on the task as an agent sees it; ``answerable`` when the evaluator passes.

    ``max_debug_rounds`` lets the solver fix execution errors (as an agent may); what the
    analysis is must still come from the instruction. A model or sandbox failure is reported as
    ``infrastructure`` with ``answerable: None`` (no verdict on the instruction).
    """
    from veriforge.discovery.agent import BaselineAgent
    from veriforge.discovery.env import D3Env
    from veriforge.discovery.evalsynth.model import run_sync

    env = D3Env(Path(task_dir), max_debug_rounds=max_debug_rounds, python=python)
    traj = run_sync(BaselineAgent(client, temperature=0.0).run_episode(env))
    meta = traj.metadata or {}
    infra = bool(meta.get("infrastructure_failure"))
    last = env.history[-1] if env.history else {}
    return {
        "answerable": None if infra and traj.reward != 1.0 else traj.reward == 1.0,
        "attempts": int(meta.get("attempts") or 0),
        "infrastructure": infra,
        "evaluator": str(last.get("eval_message") or meta.get("failure_reason") or "")[:500],
        "failure": str(last.get("failure_reason") or "")[:300],
    }


def answerability(
    task_dir: Path | str,
    client: Any = None,
    *,
    max_debug_rounds: int = 1,
    python: str | None = None,
) -> dict[str, Any]:
    """``{"answerable", "method", "coverage", "solver"?}`` for one task folder."""
    task_dir = Path(task_dir)
    _, inst, source = _task(task_dir)
    cov = instruction_coverage(inst, source)
    out: dict[str, Any] = {"coverage": cov, "method": "coverage", "answerable": cov["ratio"] == 1.0}
    if client is not None:
        solver = solver_check(task_dir, client, max_debug_rounds=max_debug_rounds, python=python)
        out["solver"] = solver
        if solver["answerable"] is not None:
            out.update(method="solver", answerable=solver["answerable"])
    return out


def record_answerability(task_dir: Path | str, result: dict[str, Any]) -> None:
    """Store ``result`` in ``task.json`` under ``veriforge.answerability`` (the task is kept)."""
    tj = Path(task_dir) / "task.json"
    task = json.loads(tj.read_text(encoding="utf-8"))
    task.setdefault("veriforge", {})["answerability"] = result
    tj.write_text(json.dumps(task, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
