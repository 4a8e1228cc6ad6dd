"""Evaluator validation: good evaluators are accepted, each kind of bad evaluator is rejected
with the control it got wrong. Evaluators run in the sandbox, as separate processes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from veriforge.discovery.evalcheck import EvalCheckError, negative_controls, validate_evaluator
from veriforge.discovery.evalsynth import synthesize

SUMMARY = b"group,mean,std,n\na,1.5,0.25,10\nb,2.25,0.5,12\nc,3.0,0.75,8\n"


def make_task(root: Path, outputs: dict[str, bytes], eval_code: str | None = None) -> Path:
    task = root / "task"
    for rel, data in outputs.items():
        p = task / "gold_results" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    if eval_code is None:
        eval_code = synthesize(task / "gold_results", list(outputs)).code
    (task / "eval").mkdir(parents=True)
    (task / "eval" / "eval_summary.py").write_text(eval_code)
    (task / "task.json").write_text(
        json.dumps(
            {
                "instance_id": "t",
                "eval_script_name": "eval_summary.py",
                "output_fname": f"pred_results/{next(iter(outputs))}",
                "veriforge": {"outputs": [f"pred_results/{k}" for k in outputs], "version": 1},
            }
        )
    )
    return task


def test_synthesized_table_evaluator_is_accepted(tmp_path):
    v = validate_evaluator(make_task(tmp_path, {"summary.csv": SUMMARY}), reruns=2)
    assert v.ok, v.reasons
    names = [c.name for c in v.controls]
    assert names == [
        "gold",
        "missing_file",
        "empty_file",
        "perturbed_value",
        "columns_shuffled",
        "columns_renamed",
        "rows_dropped",
        "constant_output",
        "wrong_type",
    ]
    assert v.controls[0].got_pass is True and all(c.got_pass is False for c in v.controls[1:])
    assert all(len(c.verdicts) == 2 and c.ok for c in v.controls)
    assert json.loads(json.dumps(v.to_dict()))["ok"] is True


def _png() -> bytes:
    im = Image.new("RGB", (120, 90), "white")
    ImageDraw.Draw(im).line([(10, 80), (50, 20), (110, 60)], fill="blue", width=3)
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def test_every_output_type_gets_controls_and_passes(tmp_path):
    arr = io.BytesIO()
    np.save(arr, np.linspace(0, 1, 12).reshape(3, 4))
    outputs = {
        "metrics.json": json.dumps({"accuracy": 0.8125, "per_class": [0.5, 0.75]}).encode(),
        "field.npy": arr.getvalue(),
        "fig.png": _png(),
        "energy.txt": b"42.125\n",
    }
    v = validate_evaluator(make_task(tmp_path, outputs), reruns=1)
    assert v.ok, v.reasons
    names = {c.name for c in v.controls}
    for rel in outputs:
        for control in ("missing_file", "empty_file", "perturbed_value", "constant_output", "wrong_type"):
            assert f"{control}:{rel}" in names
    assert {"keys_renamed:metrics.json", "rows_dropped:metrics.json", "shape_changed:field.npy"} <= names


ALWAYS_PASS = 'def eval(pred_dir="pred_results", gold_dir="gold_results"):\n    return True, "looks fine"\n'

COLUMNS_ONLY = '''
import csv, os
def eval(pred_dir="pred_results", gold_dir="gold_results"):
    p = os.path.join(pred_dir, "summary.csv")
    if not os.path.exists(p) or os.path.getsize(p) == 0:
        return False, "missing"
    with open(p) as f:
        header = next(csv.reader(f), [])
    return set(header) >= {"group", "mean", "std", "n"}, "columns checked"
'''

RANDOM = '''
import os
def eval(pred_dir="pred_results", gold_dir="gold_results"):
    return os.urandom(1)[0] % 2 == 0, "coin flip"
'''

CRASHES = '''
def eval(pred_dir="pred_results", gold_dir="gold_results"):
    raise RuntimeError("evaluator bug")
'''


def test_always_pass_evaluator_is_rejected_naming_controls(tmp_path):
    v = validate_evaluator(make_task(tmp_path, {"summary.csv": SUMMARY}, ALWAYS_PASS), reruns=1)
    assert not v.ok
    failed = {r.split(":")[0] for r in v.reasons}
    assert {"missing_file", "empty_file", "perturbed_value", "wrong_type"} <= failed
    assert "gold" not in failed


def test_evaluator_ignoring_values_fails_the_perturbation_controls(tmp_path):
    v = validate_evaluator(make_task(tmp_path, {"summary.csv": SUMMARY}, COLUMNS_ONLY), reruns=1)
    assert not v.ok
    failed = {r.split(":")[0] for r in v.reasons}
    assert failed == {"perturbed_value", "columns_shuffled", "rows_dropped", "constant_output"}


def test_nondeterministic_evaluator_is_rejected(tmp_path):
    v = validate_evaluator(make_task(tmp_path, {"summary.csv": SUMMARY}, RANDOM), reruns=3)
    assert not v.ok
    assert any("verdict changed across 3 runs" in r for r in v.reasons)


def test_crashing_evaluator_is_rejected_on_gold(tmp_path):
    v = validate_evaluator(make_task(tmp_path, {"summary.csv": SUMMARY}, CRASHES), reruns=1)
    assert not v.ok
    gold = v.controls[0]
    assert gold.crashed and gold.got_pass is False and "evaluator bug" in gold.message
    assert v.reasons[0].startswith("gold: expected PASS")
    # crashing on a negative control counts as failing it (recorded as a crash)
    assert all(c.ok and c.crashed for c in v.controls[1:])


def test_hanging_evaluator_times_out(tmp_path):
    hang = 'import time\ndef eval(pred_dir="pred_results", gold_dir="gold_results"):\n    time.sleep(30)\n'
    task = make_task(tmp_path, {"energy.txt": b"1.5\n"}, hang)
    v = validate_evaluator(task, reruns=1, timeout_s=1)
    assert not v.ok and v.controls[0].got_pass is None
    assert "timed out" in v.reasons[0]


def test_controls_that_change_nothing_are_not_applicable(tmp_path):
    gold = tmp_path / "g"
    gold.mkdir()
    (gold / "one.csv").write_bytes(b"value\n1.0\n")
    (gold / "twin.csv").write_bytes(b"a,b\n1,1\n2,2\n")
    plan = synthesize(gold, ["one.csv", "twin.csv"]).plan
    cases, skipped = negative_controls(gold, plan)
    names = [c[0] for c in cases]
    assert "columns_shuffled:one.csv" not in names and "rows_dropped:one.csv" not in names
    assert "columns_shuffled:twin.csv" not in names  # identical columns: rotating names changes nothing
    assert any(s.startswith("columns_shuffled:twin.csv") for s in skipped)
    for name, rel, files in cases[1:]:
        assert files[rel] != (gold / rel).read_bytes(), name


def test_broken_task_folders_raise(tmp_path):
    with pytest.raises(EvalCheckError, match=r"task\.json"):
        validate_evaluator(tmp_path)
    task = make_task(tmp_path, {"summary.csv": SUMMARY})
    (task / "eval" / "eval_summary.py").unlink()
    with pytest.raises(EvalCheckError, match="evaluator"):
        validate_evaluator(task)
