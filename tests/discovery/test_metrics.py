"""VER / SR / cost aggregation, and evaluator agreement with human labels (real evaluator runs)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from veriforge.core.types import Trajectory
from veriforge.discovery.metrics import MetricsError, compute_metrics, evaluator_agreement, parse_label

_spec = importlib.util.spec_from_file_location(
    "_d3_task_loader", Path(__file__).with_name("test_env_task.py")
)
_loader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_loader)  # type: ignore[union-attr]
T = _loader.load_helper()


def episode(
    task: str,
    k: int,
    *,
    valid: bool,
    success: bool,
    infra: bool = False,
    cost: float | None = 0.01,
    attempts: int = 1,
) -> Trajectory:
    return Trajectory(
        id=f"{task}#{k}",
        task_id=task,
        reward=1.0 if success else 0.0,
        metadata={
            "valid_execution": valid,
            "success": success,
            "infrastructure_failure": infra,
            "llm_calls": attempts,
            "prompt_tokens": 100,
            "completion_tokens": 50,
            "cost_usd": cost,
            "unpriced_calls": 0 if cost is not None else attempts,
            "wall_s": 2.0,
            "attempts": attempts,
        },
    )


def test_rates_cost_and_time_over_a_task_set() -> None:
    trajs = [
        episode("a", 0, valid=True, success=True, attempts=2),
        episode("a", 1, valid=True, success=False, attempts=3),
        episode("b", 0, valid=False, success=False, attempts=3),
        episode("b", 1, valid=False, success=False, infra=True),
        episode("c", 0, valid=True, success=True),
    ]
    m = compute_metrics(trajs)
    assert (m.tasks, m.episodes, m.scored_episodes, m.infrastructure_failures) == (3, 5, 4, 1)
    assert m.valid_execution_rate == 0.75  # infrastructure failures are not the agent's
    assert m.success_rate == 0.5
    assert m.task_success_rate == round(2 / 3, 4)  # a and c solved at least once
    assert m.mean_attempts == 2.25
    assert m.prompt_tokens == 500 and m.completion_tokens == 250
    assert m.cost_usd == pytest.approx(0.05) and m.wall_s_total == 10.0 and m.wall_s_mean == 2.0
    assert m.per_task["a"] == {
        "episodes": 2,
        "scored": 2,
        "valid": 2,
        "successes": 1,
        "infrastructure_failures": 0,
        "success_rate": 0.5,
    }


def test_unpriced_calls_make_cost_unknown_not_zero() -> None:
    m = compute_metrics([episode("a", 0, valid=True, success=True, cost=None)])
    assert m.cost_usd is None and m.unpriced_calls == 1
    empty = compute_metrics([])
    assert empty.success_rate is None and empty.valid_execution_rate is None


def test_labels_parse() -> None:
    assert parse_label(" PASS ") is True and parse_label("0") is False and parse_label("incorrect") is False
    assert parse_label("maybe") is None


def test_evaluator_agreement_with_human_labels(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    T.make_task(tasks)
    preds = tmp_path / "preds"
    (preds / "right").mkdir(parents=True)
    (preds / "right" / "out.csv").write_text("group,mean\nc,1.0\na,2.0\nb,10.0\n")  # row order differs: fine
    (preds / "wrong.csv").write_text("group,mean\na,2.0\nb,11.0\nc,1.0\n")
    (preds / "nested" / "pred_results").mkdir(parents=True)
    (preds / "nested" / "pred_results" / "out.csv").write_text("group,mean\na,2.0000000001\nb,10\nc,1\n")
    (preds / "demo_means").mkdir()
    (preds / "demo_means" / "p7.csv").write_text("group,mean\na,2\n")  # an id under <instance_id>/
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "instance_id,prediction,human_label\n"
        "demo_means,right,1\n"
        "demo_means,wrong.csv,0\n"
        "demo_means,nested,correct\n"
        "demo_means,p7.csv,pass\n"  # the human is wrong here: the evaluator rightly fails it
        "demo_means,missing_pred,1\n"
        "other_task,right,1\n"
        "demo_means,right,unsure\n"
    )
    ag = evaluator_agreement(labels, tasks, predictions_dir=preds)
    d = ag.to_dict()
    assert d["rows"] == 7 and d["judged"] == 4
    assert ag.agreement == 0.75 and d["agreement_pct"] == 75.0
    assert ag.confusion == {"true_pass": 2, "false_pass": 0, "false_fail": 1, "true_fail": 1}
    errors = {e["prediction"]: e["error"] for e in d["errors"] if e["instance_id"] == "demo_means"}
    assert "not found" in errors["missing_pred"] and "human_label" in errors["right"]
    assert any("no task 'other_task'" in e["error"] for e in d["errors"])


def test_agreement_csv_needs_its_columns(tmp_path: Path) -> None:
    bad = tmp_path / "labels.csv"
    bad.write_text("instance_id,label\nx,1\n")
    with pytest.raises(MetricsError, match="human_label"):
        evaluator_agreement(bad, tmp_path)
    bad.write_text("instance_id,human_label\nx,1\n")
    with pytest.raises(MetricsError, match="prediction column"):
        evaluator_agreement(bad, tmp_path)
