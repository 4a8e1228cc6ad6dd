"""Unkeyed tables: rows are matched within the evaluator's tolerance, not sorted on rounded values.

Each case runs the *generated* evaluator script (as a task folder would), so a regression in the
runtime embedded in it fails here.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from veriforge.discovery.evalsynth import synthesize


def _evaluator(gold_dir: Path, gold_csv: str):
    gold_dir.mkdir(parents=True, exist_ok=True)
    (gold_dir / "t.csv").write_text(gold_csv)
    script = synthesize(gold_dir, ["pred_results/t.csv"])
    params = script.plan["outputs"][0]["params"]
    assert params["row_order"] == "unordered" and params["key_columns"] == [], params
    ns: dict = {"__name__": "eval_mod"}
    exec(compile(script.code, "eval.py", "exec"), ns)
    return ns["eval"]


def _judge(tmp_path: Path, gold_csv: str, pred_csv: str) -> tuple[bool, str]:
    ev = _evaluator(tmp_path / "gold", gold_csv)
    pred = tmp_path / "pred"
    pred.mkdir(exist_ok=True)
    (pred / "t.csv").write_text(pred_csv)
    return ev(str(pred), str(tmp_path / "gold"))


# Rounded to 4 significant digits both gold x values are 0.5, so a rounding sort orders the gold
# rows by y; 1.2e-6 of noise makes the prediction's first x round to 0.5001 and flips its order.
GOLD = "x,y\n0.50005,100.0\n0.500049,1.0\n"


def test_sub_tolerance_noise_that_flips_a_rounded_sort_still_passes(tmp_path):
    ok, msg = _judge(tmp_path, GOLD, "x,y\n0.5000502,1.0\n0.50005,100.0\n")
    assert ok, msg


def test_a_genuinely_wrong_value_still_fails_and_says_where(tmp_path):
    ok, msg = _judge(tmp_path, GOLD, "x,y\n0.5000502,1.0\n0.50005,100.5\n")
    assert not ok
    assert "no matching predicted row" in msg and "'y'" in msg and "100.5" in msg, msg


def test_shuffled_rows_with_noise_pass_and_one_corrupted_row_fails(tmp_path):
    rng = random.Random(7)
    rows = [(rng.uniform(0, 1), rng.uniform(-5, 5), rng.choice("abc")) for _ in range(300)]
    gold = "u,v,g\n" + "".join(f"{u!r},{v!r},{g}\n" for u, v, g in rows)
    noisy = [(u * (1 + rng.uniform(-1e-6, 1e-6)), v + rng.uniform(-1e-7, 1e-7), g) for u, v, g in rows]
    rng.shuffle(noisy)
    ok, msg = _judge(tmp_path, gold, "u,v,g\n" + "".join(f"{u:.9f},{v:.9f},{g}\n" for u, v, g in noisy))
    assert ok, msg
    u, v, g = noisy[0]
    noisy[0] = (u, v + 0.01, g)
    ok, msg = _judge(tmp_path, gold, "u,v,g\n" + "".join(f"{u:.9f},{v:.9f},{g}\n" for u, v, g in noisy))
    assert not ok and "1 gold row(s)" in msg, msg


@pytest.mark.parametrize(
    ("pred", "passes"),
    [
        # duplicates matched one to one, whatever the order and noise
        ("a,b\n1.0,2.0\n3.0,4.0000001\n1.0000001,2.0\n1.0,2.0\n", True),
        # the same multiset size but one duplicate replaced by another gold row: a row is missing
        ("a,b\n1.0,2.0\n3.0,4.0\n3.0,4.0\n1.0,2.0\n", False),
    ],
)
def test_duplicate_rows_are_matched_one_to_one(tmp_path, pred, passes):
    gold = "a,b\n1.0,2.0\n1.0,2.0\n3.0,4.0\n1.0,2.0\n"
    ok, msg = _judge(tmp_path, gold, pred)
    assert ok is passes, msg


def test_near_ties_need_a_matching_not_first_fit(tmp_path):
    # Rows 3/4 defeat the exact-sort fast path (noise flips their x order, y tells them apart).
    # Pred (1.00008, 10) is within rtol 1e-4 of both gold (1.0, 10) and (1.00015, 10); pred
    # (0.99995, 10) only of (1.0, 10). First-fit would give the first pred row gold (1.0, 10) and
    # leave the second without a partner; augmenting paths re-pair them.
    gold = "x,y\n1.0,10\n1.00015,10\n2.0,30\n2.00001,40\n"
    ok, msg = _judge(tmp_path, gold, "x,y\n1.00008,10\n0.99995,10\n2.000011,30\n2.0,40\n")
    assert ok, msg


def test_text_cells_still_exact_in_unkeyed_rows(tmp_path):
    gold = "g,x\na,1.0\na,2.0\nb,1.0\n"
    assert _judge(tmp_path, gold, "g,x\nb,1.0000001\na,2.0\na,1.0\n")[0]
    ok, msg = _judge(tmp_path, gold, "g,x\nb,2.0\na,2.0\na,1.0\n")
    assert not ok and "no matching predicted row" in msg, msg
