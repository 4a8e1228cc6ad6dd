"""A tiny hand-made D3-Gym task folder (schema of docs/d3gym.md) shared by the env/agent/metrics/export
tests, and a check that it is a sound task: its evaluator passes the gold output and fails the
negative controls, exactly as the build pipeline would demand.

Other test modules load this file with :func:`load_helper` (test modules are not a package)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

DATA = "group,value\na,1\na,3\nb,10\nc,-2\nc,4\n"
GOLD = "group,mean\na,2.0\nb,10.0\nc,1.0\n"

EVAL = """
import csv, os

def _read(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {r["group"]: float(r["mean"]) for r in rows}

def eval(pred_dir="pred_results", gold_dir="gold_results"):
    p = os.path.join(pred_dir, "out.csv")
    if not os.path.exists(p):
        return False, "EVAL-SECRET: out.csv missing"
    try:
        pred = _read(p)
    except Exception as exc:
        return False, f"EVAL-SECRET: unreadable prediction: {exc!r}"
    gold = _read(os.path.join(gold_dir, "out.csv"))
    if pred.keys() != gold.keys():
        return False, f"EVAL-SECRET: groups {sorted(pred)} != {sorted(gold)}"
    bad = [k for k in gold if abs(pred[k] - gold[k]) > 1e-6]
    return (not bad), ("EVAL-SECRET: all means match" if not bad else f"EVAL-SECRET: wrong means for {bad}")
"""

GOLD_PROGRAM = """
import csv, os
from collections import defaultdict
GOLD_PROGRAM_MARKER = 1
groups = defaultdict(list)
with open("datasets/data.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        groups[row["group"]].append(float(row["value"]))
os.makedirs("pred_results", exist_ok=True)
with open("pred_results/out.csv", "w") as fh:
    fh.write("group,mean\\n")
    for g in sorted(groups):
        fh.write(f"{g},{sum(groups[g]) / len(groups[g])}\\n")
"""

GOOD = GOLD_PROGRAM.replace("GOLD_PROGRAM_MARKER = 1\n", "")
BUGGY = GOOD.replace('row["value"]', 'row["val"]')  # KeyError: 'val'
WRONG = GOOD.replace("/ len(groups[g])", "/ (len(groups[g]) + 1)")  # runs, wrong numbers
NOTHING = 'print("thinking about it")\n'


def make_task(
    root: Path,
    instance_id: str = "demo_means",
    *,
    lock: str = "numpy==1.26.4\n",
    venv_hint: str = "",
    timeout_s: float = 30,
) -> Path:
    """Write the task folder ``root/instance_id`` and return it."""
    d = root / instance_id
    (d / "datasets" / "tables").mkdir(parents=True, exist_ok=True)
    (d / "datasets" / "data.csv").write_text(DATA)
    (d / "datasets" / "tables" / "notes.txt").write_text("values are in arbitrary units\n")
    (d / "gold_program").mkdir(exist_ok=True)
    (d / "gold_program" / "compute_means.py").write_text(GOLD_PROGRAM)
    (d / "gold_results").mkdir(exist_ok=True)
    (d / "gold_results" / "out.csv").write_text(GOLD)
    (d / "eval").mkdir(exist_ok=True)
    (d / "eval" / "eval_compute_means.py").write_text(EVAL)
    (d / "env").mkdir(exist_ok=True)
    (d / "env" / "requirements.lock").write_text(lock)
    (d / "env" / "python_version").write_text("3.11.7\n")
    task = {
        "instance_id": instance_id,
        "domain": "Ecology",
        "subtask_categories": "Statistical Analysis",
        "github_name": "example/field-study",
        "task_inst": "Compute the mean measured value for every group and save the table.",
        "domain_knowledge": "Groups are field plots; values are biomass changes.",
        "dataset_folder_tree": "|-- data.csv\n|-- tables/\n    |-- notes.txt",
        "dataset_preview": "[START Preview of data.csv]\ngroup,value\na,1\na,3\n[END Preview of data.csv]",
        "src_file_or_path": "scripts/compute_means.py",
        "gold_program_name": "compute_means.py",
        "output_fname": "pred_results/out.csv",
        "eval_script_name": "eval_compute_means.py",
        "veriforge": {
            "outputs": ["out.csv"],
            "timeout_s": timeout_s,
            "entry": "python compute_means.py",
            "env": {"lock": "env/requirements.lock", "python": "3.11.7", "venv_hint": venv_hint},
            "eval_plan": {},
            "version": 1,
        },
    }
    (d / "task.json").write_text(json.dumps(task, indent=2))
    return d


def load_helper():
    """This module, importable from other test files under importlib import mode."""
    name = "_d3gym_test_task_helper"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return sys.modules[name]


def test_hand_made_task_is_sound(tmp_path):
    from veriforge.discovery.evalcheck import validate_evaluator

    d = make_task(tmp_path)
    val = validate_evaluator(d, reruns=1, max_workers=2)
    assert val.ok, val.reasons
    names = {c.name for c in val.controls}
    assert {"gold", "missing_file", "empty_file", "perturbed_value"} <= names
