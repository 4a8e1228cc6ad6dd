"""The shared types round-trip through JSON and refuse inconsistent states."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from veriforge.core.hashing import content_hash
from veriforge.core.types import (
    Candidate,
    InputResult,
    Measurement,
    Step,
    Task,
    Trajectory,
    Verdict,
)


def _roundtrip(obj):
    text = obj.to_json()
    back = type(obj).from_json(text)
    assert back == obj
    assert back.model_dump_json() == text
    return back


def test_task_roundtrip_keeps_nested_inputs():
    task = Task(id="vec_add", family="cuda", description="add two vectors",
                inputs={"small": {"n": 16}, "large": {"n": 1 << 20, "dtype": "float32"}},
                metadata={"source": "kernelbench", "level": 1})
    back = _roundtrip(task)
    assert back.inputs["large"]["n"] == 1 << 20


def test_task_requires_id_and_rejects_unknown_fields():
    with pytest.raises(ValidationError):
        Task(id="")
    with pytest.raises(ValidationError):
        Task.from_json('{"id": "t", "familly": "typo"}')


def test_candidate_hash_covers_source_and_language_not_metadata():
    a = Candidate(source="int main(){}", language="cpp", metadata={"model": "a", "temp": 0.2})
    b = Candidate(source="int main(){}", language="cpp", metadata={"model": "b"}, parent="p1")
    assert a.hash == b.hash == content_hash("cpp", "int main(){}")
    assert Candidate(source="int main(){}", language="cuda").hash != a.hash
    assert Candidate(source="int main(){ }", language="cpp").hash != a.hash
    back = _roundtrip(b)
    assert back.hash == b.hash and back.parent == "p1"
    assert Candidate(source="x").language == "cuda"


def test_verdict_constructors_and_roundtrip():
    ok = Verdict.passed([InputResult(config="small", passed=True, max_abs_error=1e-7, max_rel_error=0.0)])
    assert ok.compiled and ok.correct and not ok.rejected
    assert _roundtrip(ok).results[0].max_abs_error == 1e-7

    bad = Verdict.compile_failed("k.cu:3: error: expected ';'")
    assert not bad.compiled and not bad.correct and "expected ';'" in bad.reason
    _roundtrip(bad)

    wrong = Verdict.failed([InputResult(config="a", passed=True),
                            InputResult(config="b", passed=False, max_abs_error=3.0, message="mismatch")])
    assert wrong.compiled and not wrong.correct
    assert wrong.failed_configs == ["b"] and "b" in wrong.reason

    cheat = Verdict.reject("calls cublasSgemm instead of implementing the kernel")
    assert cheat.rejected and not cheat.correct and cheat.compiled
    assert _roundtrip(cheat).rejected


def test_verdict_from_results_decides_correctness():
    good = [InputResult(config="a", passed=True), InputResult(config="b", passed=True)]
    assert Verdict.from_results(good).correct
    assert not Verdict.from_results([*good, InputResult(config="c", passed=False)]).correct
    assert not Verdict.from_results([]).correct


@pytest.mark.parametrize("fields", [
    {"compiled": False, "correct": True},
    {"compiled": True, "correct": True, "rejected": True},
    {"compiled": True, "correct": True, "results": [{"config": "a", "passed": False}]},
])
def test_verdict_rejects_inconsistent_states(fields):
    with pytest.raises(ValidationError):
        Verdict(**fields)


def test_input_result_refuses_nan_errors():
    with pytest.raises(ValidationError):
        InputResult(config="a", passed=False, max_abs_error=float("nan"))


def test_measurement_roundtrip_and_provenance_validation():
    m = Measurement(name="kernel_time", value=12.5, unit="us", spread=0.3, provenance="measured",
                    backend="gpu:H100", samples=50, details={"clock_locked": True})
    back = _roundtrip(m)
    assert back.provenance == "measured" and back.details == {"clock_locked": True}
    for prov in ("emulated", "estimated"):
        assert Measurement(name="t", value=1, unit="ms", provenance=prov, backend="x").provenance == prov
    with pytest.raises(ValidationError):
        Measurement(name="t", value=1.0, unit="ms", provenance="guessed", backend="x")
    with pytest.raises(ValidationError):
        Measurement.from_json('{"name":"t","value":1.0,"unit":"ms","backend":"x"}')  # provenance missing


@pytest.mark.parametrize("bad", [
    {"value": float("nan")}, {"value": float("inf")}, {"spread": -1.0}, {"samples": 0},
])
def test_measurement_rejects_invalid_numbers(bad):
    fields = {"name": "t", "value": 1.0, "unit": "ms", "provenance": "estimated", "backend": "model"}
    with pytest.raises(ValidationError):
        Measurement(**{**fields, **bad})


def test_measurement_comparability_needs_same_provenance():
    a = Measurement(name="t", value=1.0, unit="ms", provenance="measured", backend="gpu")
    b = Measurement(name="t", value=2.0, unit="ms", provenance="measured", backend="gpu2")
    c = Measurement(name="t", value=2.0, unit="ms", provenance="estimated", backend="model")
    assert a.comparable_with(b) and not a.comparable_with(c)


def test_measurement_provenance_is_validated_on_assignment():
    m = Measurement(name="t", value=1.0, unit="ms", provenance="measured", backend="gpu")
    with pytest.raises(ValidationError):
        m.provenance = "made-up"  # type: ignore[assignment]


def test_trajectory_roundtrip_with_steps_verdicts_and_rewards():
    cand = Candidate(source="__global__ void k(){}")
    traj = Trajectory(id="ep-1", task_id="vec_add", metadata={"policy": "qwen"})
    traj.add("user", "write a kernel", kind="prompt")
    traj.add("assistant", cand.source, kind="proposal", candidate=cand.hash,
             verdict=Verdict.compile_failed("error"), reward=-1.0)
    traj.add("assistant", cand.source, kind="proposal", candidate=cand.hash,
             verdict=Verdict.passed([InputResult(config="a", passed=True)]), reward=0.5,
             measurements=[Measurement(name="t", value=3.0, unit="us", provenance="emulated",
                                       backend="cpu-runtime")])
    traj.reward = 0.5
    back = _roundtrip(traj)
    assert len(back.steps) == 3
    assert back.steps[1].verdict is not None and not back.steps[1].verdict.compiled
    assert back.steps[2].measurements[0].provenance == "emulated"
    assert back.step_rewards == [-1.0, 0.5]
    assert back.messages()[0] == {"role": "user", "content": "write a kernel"}
    assert isinstance(back.steps[0], Step)
