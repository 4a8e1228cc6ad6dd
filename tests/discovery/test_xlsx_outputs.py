"""Excel outputs (pandas' ``to_excel``) are judged as tables by the generated evaluator, which
reads ``.xlsx`` with the standard library (a task's evaluator must not need openpyxl)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from veriforge.discovery.evalsynth import synthesize
from veriforge.discovery.evalsynth.runtime import xlsx_sheets

GOLD = pd.DataFrame({"P_Id": [1, 2, 3], "group": ["a", "b", "a"], "mean_rt": [0.512, 0.733, 0.618]})


def _run_eval(code: str, pred: Path, gold: Path, tmp_path: Path) -> tuple[bool, str]:
    """Run the generated evaluator as its own process, as a task folder would (no veriforge)."""
    script = tmp_path / "eval_xlsx.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, "-I", str(script), str(pred), str(gold)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode in (0, 1), proc.stderr
    import json

    ok, msg = json.loads(proc.stdout.strip().splitlines()[-1])
    return ok, msg


def test_an_excel_table_is_planned_as_a_table_and_judged_by_value(tmp_path):
    gold, pred = tmp_path / "gold_results", tmp_path / "pred_results"
    gold.mkdir()
    pred.mkdir()
    GOLD.to_excel(gold / "results.xlsx", index=False)
    assert xlsx_sheets(gold / "results.xlsx") == [
        ("Sheet1", [["P_Id", "group", "mean_rt"], ["1", "a", "0.512"], ["2", "b", "0.733"], ["3", "a", "0.618"]])
    ]
    script = synthesize(gold, ["pred_results/results.xlsx"])
    (entry,) = script.plan["outputs"]
    assert entry["kind"] == "table" and entry["params"]["key_columns"] == ["P_Id"]
    assert entry["reason"].startswith("Excel workbook, sheet 'Sheet1' as a table")
    # harmless: rows shuffled, columns reordered, another sheet name, the pandas index written, 1e-9 noise
    shuffled = GOLD.iloc[[2, 0, 1]][["mean_rt", "P_Id", "group"]].copy()
    shuffled["mean_rt"] += 1e-9
    shuffled.to_excel(pred / "results.xlsx", sheet_name="results")
    ok, msg = _run_eval(script.code, pred, gold, tmp_path)
    assert ok, msg
    wrong = GOLD.copy()
    wrong.loc[1, "mean_rt"] = 0.9
    wrong.to_excel(pred / "results.xlsx", index=False)
    ok, msg = _run_eval(script.code, pred, gold, tmp_path)
    assert not ok and "mean_rt" in msg
    GOLD.to_csv(pred / "results.xlsx", index=False)  # a CSV under the .xlsx name is no workbook
    ok, msg = _run_eval(script.code, pred, gold, tmp_path)
    assert not ok
    with pd.ExcelWriter(pred / "results.xlsx") as xw:  # the table split over two sheets
        GOLD.iloc[:2].to_excel(xw, sheet_name="A", index=False)
        GOLD.iloc[2:].to_excel(xw, sheet_name="B", index=False)
    ok, msg = _run_eval(script.code, pred, gold, tmp_path)
    assert not ok and "2 sheets" in msg


def test_a_workbook_of_several_sheets_is_left_to_a_model(tmp_path):
    from veriforge.discovery.evalsynth import UnsupportedOutputError

    gold = tmp_path / "gold_results"
    gold.mkdir()
    with pd.ExcelWriter(gold / "book.xlsx") as xw:
        GOLD.to_excel(xw, sheet_name="A", index=False)
        GOLD.to_excel(xw, sheet_name="B", index=False)
    with pytest.raises(UnsupportedOutputError, match="2 sheets"):
        synthesize(gold, ["pred_results/book.xlsx"])


PROGRAM = """
    import os
    import pandas as pd


    def process_directory(directory_path, output_file):
        rows = []
        for name in sorted(os.listdir(directory_path)):
            df = pd.read_csv(os.path.join(directory_path, name))
            rows.append({"P_Id": int(name[1:3]), "mean_rt": df["rt"].mean()})
        pd.DataFrame(rows).sort_values("P_Id").to_excel(output_file, index=False)


    def main():
        process_directory("exp/sessions", "exp/summary.xlsx")


    if __name__ == "__main__":
        main()
"""


def test_a_program_writing_excel_builds_into_a_validated_task(tmp_path, build_repo):
    repo = tmp_path / "repo"
    for rel, text in {
        "exp/sessions/s01.csv": "trial,rt\n1,0.5\n2,0.7\n",
        "exp/sessions/s02.csv": "trial,rt\n1,0.9\n2,1.1\n",
        "summarise.py": textwrap.dedent(PROGRAM),
    }.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    report = build_repo(repo)
    (task,) = report.tasks
    assert task.status == "built", task.reason
    gold = pd.read_excel(Path(task.task_dir) / "gold_results/summary.xlsx")
    assert gold.to_dict("list") == {"P_Id": [1, 2], "mean_rt": [0.6, 1.0]}


def test_validation_controls_of_an_excel_table_are_real_workbooks_the_evaluator_rejects(tmp_path):
    """CSV text under the .xlsx name would be rejected as unreadable and validate nothing: each
    control is a workbook, read back as a table, that fails for its own reason."""
    import io

    from veriforge.discovery.evalcheck import controls_for
    from veriforge.discovery.xlsxwrite import write_xlsx

    gold_dir, pred = tmp_path / "gold_results", tmp_path / "pred_results"
    gold_dir.mkdir()
    GOLD.to_excel(gold_dir / "results.xlsx", index=False)
    script = synthesize(gold_dir, ["pred_results/results.xlsx"])
    (entry,) = script.plan["outputs"]
    controls = dict(controls_for(entry, (gold_dir / "results.xlsx").read_bytes()))
    assert {"perturbed_value", "columns_renamed", "rows_dropped", "constant_output", "wrong_type"} <= set(controls)
    perturbed = pd.read_excel(io.BytesIO(controls["perturbed_value"]))  # a workbook openpyxl reads too
    assert perturbed.shape == GOLD.shape and not perturbed.equals(GOLD)
    assert len(pd.read_excel(io.BytesIO(controls["rows_dropped"]))) == 2
    for name in ("perturbed_value", "columns_renamed", "rows_dropped", "constant_output"):
        pred.mkdir(exist_ok=True)
        (pred / "results.xlsx").write_bytes(controls[name])
        ok, msg = _run_eval(script.code, pred, gold_dir, tmp_path)
        assert not ok and "unreadable" not in msg and "zip" not in msg.lower(), (name, msg)
    # the writer's own round trip: numbers stay numbers, text is escaped
    book = write_xlsx([["a", "b"], ["x<&>", "1.5"]])
    assert xlsx_sheets(io.BytesIO(book)) == [("Sheet1", [["a", "b"], ["x<&>", "1.5"]])]
    assert pd.read_excel(io.BytesIO(book))["b"].tolist() == [1.5]
