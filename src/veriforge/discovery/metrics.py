"""D3-Gym metrics: Valid Execution Rate, Success Rate, cost, time, and evaluator agreement.

Rates follow ScienceAgentBench: per episode, the *final* program after self-debug counts.

* **VER** (Valid Execution Rate): the program exited 0 and wrote every required output.
* **SR** (Success Rate): the hidden evaluator accepted the outputs.
* ``task_success_rate``: tasks with at least one successful episode (pass@n).

Episodes that failed for infrastructure reasons (a model server or the sandbox failed, not the
agent) are counted and reported but left out of the denominators: counting them as wrong answers
would blame the agent for the machine. Cost is the model's USD when every call had a price, else
``None`` with the number of unpriced calls (never a made-up zero).

:func:`evaluator_agreement` checks evaluators against human labels (the paper's evaluators agree
with human gold 87.5% of the time): a CSV of ``instance_id, prediction, human_label`` rows, each
prediction run through the task's evaluator in the sandbox.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.core.types import Trajectory
from veriforge.discovery.errors import DiscoveryError

__all__ = [
    "Agreement",
    "AgreementRow",
    "MetricsError",
    "TaskSetMetrics",
    "compute_metrics",
    "evaluator_agreement",
    "parse_label",
]

_TRUE = {"1", "true", "t", "yes", "y", "pass", "passed", "correct", "success", "ok"}
_FALSE = {"0", "false", "f", "no", "n", "fail", "failed", "incorrect", "wrong", "failure"}
_PRED_COLUMNS = ("prediction", "prediction_path", "prediction_id", "pred", "pred_path", "path", "id")


class MetricsError(DiscoveryError):
    """A labels file cannot be read (missing columns, no rows)."""


def _rate(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


@dataclass
class TaskSetMetrics:
    """Aggregates over the episodes of a task set (``None`` rates: nothing to divide by)."""

    tasks: int
    episodes: int
    scored_episodes: int
    infrastructure_failures: int
    valid_executions: int
    successes: int
    valid_execution_rate: float | None
    success_rate: float | None
    task_success_rate: float | None
    mean_attempts: float | None
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    unpriced_calls: int
    wall_s_total: float
    wall_s_mean: float | None
    per_task: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compute_metrics(trajectories: Iterable[Trajectory]) -> TaskSetMetrics:
    """VER, SR, pass@n, tokens, cost and time over agent trajectories (see module docstring)."""
    trajs = list(trajectories)
    per_task: dict[str, dict[str, Any]] = {}
    infra = valid = succ = calls = ptok = ctok = unpriced = attempts = 0
    cost = 0.0
    wall = 0.0
    for t in trajs:
        m = t.metadata
        row = per_task.setdefault(
            t.task_id, {"episodes": 0, "scored": 0, "valid": 0, "successes": 0, "infrastructure_failures": 0}
        )
        row["episodes"] += 1
        calls += int(m.get("llm_calls", 0))
        ptok += int(m.get("prompt_tokens", 0))
        ctok += int(m.get("completion_tokens", 0))
        unpriced += int(m.get("unpriced_calls", 0))
        cost += float(m.get("cost_usd") or 0.0)
        wall += float(m.get("wall_s", 0.0))
        if m.get("infrastructure_failure"):
            infra += 1
            row["infrastructure_failures"] += 1
            continue
        row["scored"] += 1
        attempts += int(m.get("attempts", 0))
        ok_exec = bool(m.get("valid_execution"))
        ok = bool(m.get("success")) and t.reward == 1.0
        valid += ok_exec
        succ += ok
        row["valid"] += ok_exec
        row["successes"] += ok
    scored = len(trajs) - infra
    solved = sum(1 for r in per_task.values() if r["successes"])
    scored_tasks = sum(1 for r in per_task.values() if r["scored"])
    for r in per_task.values():
        r["success_rate"] = _rate(r["successes"], r["scored"])
    return TaskSetMetrics(
        tasks=len(per_task),
        episodes=len(trajs),
        scored_episodes=scored,
        infrastructure_failures=infra,
        valid_executions=valid,
        successes=succ,
        valid_execution_rate=_rate(valid, scored),
        success_rate=_rate(succ, scored),
        task_success_rate=_rate(solved, scored_tasks),
        mean_attempts=round(attempts / scored, 3) if scored else None,
        llm_calls=calls,
        prompt_tokens=ptok,
        completion_tokens=ctok,
        cost_usd=None if unpriced else round(cost, 8),
        unpriced_calls=unpriced,
        wall_s_total=round(wall, 3),
        wall_s_mean=round(wall / len(trajs), 3) if trajs else None,
        per_task=per_task,
    )


# ------------------------------------------------------------------------- evaluator agreement
def parse_label(value: str) -> bool | None:
    """A human label as a verdict: ``1/true/pass/correct/...`` or ``0/false/fail/wrong/...``."""
    v = (value or "").strip().lower()
    return True if v in _TRUE else False if v in _FALSE else None


@dataclass
class AgreementRow:
    instance_id: str
    prediction: str
    human: bool | None
    evaluator: bool | None = None
    message: str = ""
    error: str = ""

    @property
    def agrees(self) -> bool | None:
        if self.human is None or self.evaluator is None:
            return None
        return self.human == self.evaluator


@dataclass
class Agreement:
    """Evaluator vs human: agreement over the rows both could judge, and the confusion counts
    (``true_pass``: both pass; ``false_pass``: evaluator passes what the human failed; ...)."""

    rows: list[AgreementRow]

    @property
    def judged(self) -> list[AgreementRow]:
        return [r for r in self.rows if r.agrees is not None]

    @property
    def agreement(self) -> float | None:
        j = self.judged
        return round(sum(1 for r in j if r.agrees) / len(j), 4) if j else None

    @property
    def confusion(self) -> dict[str, int]:
        c = {"true_pass": 0, "false_pass": 0, "false_fail": 0, "true_fail": 0}
        for r in self.judged:
            key = ("true_" if r.agrees else "false_") + ("pass" if r.evaluator else "fail")
            c[key] += 1
        return c

    @property
    def errors(self) -> list[AgreementRow]:
        return [r for r in self.rows if r.agrees is None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": len(self.rows),
            "judged": len(self.judged),
            "agreement": self.agreement,
            "agreement_pct": None if self.agreement is None else round(100 * self.agreement, 2),
            "confusion": self.confusion,
            "errors": [
                {"instance_id": r.instance_id, "prediction": r.prediction, "error": r.error}
                for r in self.errors
            ],
            "details": [{**asdict(r), "agrees": r.agrees} for r in self.rows],
        }


def _pred_column(header: list[str]) -> str:
    low = {h.strip().lower(): h for h in header}
    for c in _PRED_COLUMNS:
        if c in low:
            return low[c]
    raise MetricsError(
        f"labels CSV needs a prediction column (one of {', '.join(_PRED_COLUMNS)}); got {header}"
    )


def _load_prediction(ref: str, task: Any, bases: list[Path]) -> dict[str, bytes]:
    """A prediction as ``{path under pred_results/: bytes}``.

    ``ref`` is a path (absolute, or relative to one of ``bases``) or an id (a folder of that name
    under a base, or ``<base>/<instance_id>/<id>``). A folder holds the outputs (directly or in a
    ``pred_results/`` sub-folder); a single file stands for the task's main output.
    """
    cands = [Path(ref).expanduser()] if Path(ref).is_absolute() else []
    for b in bases:
        cands += [b / ref, b / task.instance_id / ref]
    for c in cands:
        if c.is_dir():
            root = c / "pred_results" if (c / "pred_results").is_dir() else c
            return {
                p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            }
        if c.is_file():
            return {task.outputs[0]: c.read_bytes()}
    raise FileNotFoundError(f"prediction {ref!r} not found (looked in {', '.join(str(b) for b in bases)})")


def evaluator_agreement(
    labels_csv: str | Path,
    tasks_dir: str | Path,
    *,
    predictions_dir: str | Path | None = None,
    python: str | None = None,
    timeout_s: float = 120.0,
    max_workers: int = 2,
) -> Agreement:
    """Run each labelled prediction through its task's evaluator and compare with the human label.

    CSV columns: ``instance_id``, a prediction column (``prediction``/``prediction_path``/
    ``prediction_id``...), ``human_label``. Predictions are looked up relative to
    ``predictions_dir`` (if given) and the CSV's folder. Rows whose task, prediction or label cannot
    be resolved are reported in :attr:`Agreement.errors` and left out of the agreement.
    """
    from veriforge.discovery.env import D3EnvError, evaluate_predictions, find_tasks, load_task

    path = Path(labels_csv)
    if not path.is_file():
        raise MetricsError(f"labels file not found: {path}")
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = list(reader.fieldnames or [])
        raw = list(reader)
    lower = {h.strip().lower(): h for h in header}
    for need in ("instance_id", "human_label"):
        if need not in lower:
            raise MetricsError(f"labels CSV needs a {need!r} column; got {header}")
    pcol = _pred_column(header)
    if not raw:
        raise MetricsError(f"{path}: no rows")
    tasks: dict[str, Any] = {}
    for d in find_tasks(tasks_dir):
        try:
            t = load_task(d)
        except D3EnvError:
            continue
        tasks[t.instance_id] = t
        tasks.setdefault(d.name, t)
    bases = [Path(predictions_dir).expanduser()] if predictions_dir else []
    bases.append(path.parent.resolve())

    def one(rec: dict[str, str]) -> AgreementRow:
        iid = (rec.get(lower["instance_id"]) or "").strip()
        ref = (rec.get(pcol) or "").strip()
        row = AgreementRow(iid, ref, parse_label(rec.get(lower["human_label"]) or ""))
        if row.human is None:
            row.error = f"unreadable human_label {rec.get(lower['human_label'])!r}"
            return row
        task = tasks.get(iid)
        if task is None:
            row.error = f"no task {iid!r} under {tasks_dir}"
            return row
        try:
            pred = _load_prediction(ref, task, bases)
        except (FileNotFoundError, OSError) as exc:
            row.error = str(exc)
            return row
        ev = evaluate_predictions(task, pred, python=python, timeout_s=timeout_s)
        if ev.infrastructure:
            row.error = f"evaluator could not run: {ev.message}"
            return row
        row.evaluator, row.message = ev.passed, ev.message
        return row

    with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
        rows = list(pool.map(one, raw))
    return Agreement(rows)
