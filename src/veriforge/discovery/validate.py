"""``d3gym validate``: re-run every task's evaluator checks (gold passes, negative controls fail)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from veriforge.discovery.build import REJECTED
from veriforge.discovery.errors import DiscoveryError

__all__ = ["task_dirs", "validate_tasks"]


def task_dirs(tasks: str | Path) -> list[Path]:
    """Task folders (with ``task.json``) directly under ``tasks``; rejected tasks are not tasks."""
    root = Path(tasks)
    if not root.is_dir():
        raise DiscoveryError(f"{root} is not a folder")
    return sorted(
        p for p in root.iterdir() if p.is_dir() and p.name != REJECTED and (p / "task.json").is_file()
    )


def _answerability(d: Path, task: dict[str, Any]) -> dict[str, Any] | None:
    """The build's recorded answerability (solver and coverage), else the coverage check now."""
    recorded = (task.get("veriforge") or {}).get("answerability")
    if isinstance(recorded, dict):
        return recorded
    from veriforge.discovery.answerable import answerability

    try:
        return answerability(d)
    except DiscoveryError as exc:
        return {"answerable": None, "method": "none", "reason": str(exc)}


def validate_tasks(tasks: str | Path, *, reruns: int = 2) -> list[dict[str, Any]]:
    """One result per task: ``{instance_id, ok, reasons, controls, answerability}`` (controls:
    name, expected, got; answerability: see :mod:`veriforge.discovery.answerable`)."""
    from veriforge.discovery.evalcheck import validate_evaluator

    results = []
    for d in task_dirs(tasks):
        task = json.loads((d / "task.json").read_text(encoding="utf-8"))
        iid = task.get("instance_id", d.name)
        try:
            val = validate_evaluator(d, reruns=reruns)
        except Exception as exc:  # a broken folder is a failed validation, not a crash of the whole run
            results.append(
                {"instance_id": iid, "ok": False, "reasons": [f"{type(exc).__name__}: {exc}"], "controls": []}
            )
            continue
        results.append(
            {
                "instance_id": iid,
                "ok": val.ok,
                "reasons": val.reasons,
                "controls": [
                    {"name": c.name, "expected_pass": c.expected_pass, "got_pass": c.got_pass}
                    for c in val.controls
                ],
                "answerability": _answerability(d, task),
            }
        )
    return results
