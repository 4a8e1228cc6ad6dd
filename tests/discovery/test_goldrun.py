"""Gold runs in the sandbox and the infrastructure-vs-program failure classification."""

import sys
from pathlib import Path

import pytest

from veriforge.discovery.goldrun import classify_failure, run_gold

TB = 'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\n    foo()\n'


@pytest.mark.parametrize(
    ("stderr", "kind", "needle"),
    [
        (TB + "ModuleNotFoundError: No module named 'seaborn'", "infrastructure", "dependency"),
        (
            TB + "FileNotFoundError: [Errno 2] No such file or directory: 'datasets/x.csv'",
            "infrastructure",
            "missing data",
        ),
        (TB + "AttributeError: module 'numpy' has no attribute 'float'", "infrastructure", "API"),
        (TB + "KeyError: 'diffusivity'", "program", "KeyError"),
        (TB + "ZeroDivisionError: division by zero", "program", "ZeroDivisionError"),
        (
            TB + "FileNotFoundError: [Errno 2] No such file or directory: 'pred_results/a/b.csv'",
            "program",
            "pred",
        ),
    ],
)
def test_classify_exceptions(stderr, kind, needle):
    got_kind, reason = classify_failure("crashed", 1, stderr, [])
    assert got_kind == kind and needle in reason


def test_classify_other_endings():
    assert classify_failure("timeout", None, "", [])[0] == "program"
    assert classify_failure("memory", None, "MemoryError", [])[0] == "infrastructure"
    assert classify_failure("ok", 0, "", []) == ("program", "exited 0 but wrote no outputs")
    assert (
        classify_failure("crashed", 1, TB + "ModuleNotFoundError: No module named 'mylib'", [], {"mylib"})[0]
        == "program"
    )


def _task(tmp_path: Path, program: str) -> Path:
    task = tmp_path / "task"
    (task / "gold_program").mkdir(parents=True)
    (task / "datasets" / "data").mkdir(parents=True)
    (task / "datasets" / "data" / "n.txt").write_text("21\n")
    (task / "gold_program" / "prog.py").write_text(program)
    return task


def test_real_run_collects_outputs(tmp_path):
    task = _task(
        tmp_path,
        "n = int(open('datasets/data/n.txt').read())\n"
        "open('pred_results/answer.txt', 'w').write(str(2 * n))\n",
    )
    res = run_gold(task, "prog.py", sys.executable, ["pred_results/answer.txt"], timeout_s=60)
    assert res.ok and res.outputs == ["pred_results/answer.txt"]
    assert (task / "gold_results" / "answer.txt").read_text() == "42"


def test_real_runs_are_classified(tmp_path):
    task = _task(tmp_path, "import veriforge_missing_dep\n")
    res = run_gold(task, "prog.py", sys.executable, ["pred_results/a.txt"], timeout_s=60)
    assert not res.ok and res.failure == "infrastructure" and "veriforge_missing_dep" in res.reason
    (task / "gold_program" / "prog.py").write_text("d = {}\nprint(d['alpha'])\n")
    res = run_gold(task, "prog.py", sys.executable, ["pred_results/a.txt"], timeout_s=60)
    assert res.failure == "program" and res.reason == "KeyError: 'alpha'"
    (task / "gold_program" / "prog.py").write_text("print('no outputs')\n")
    res = run_gold(task, "prog.py", sys.executable, ["pred_results/a.txt"], timeout_s=60)
    assert res.failure == "program" and "no outputs" in res.reason
    assert not (task / "gold_results").exists()
