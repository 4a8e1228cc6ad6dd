"""Instructions a solver can answer (issue 18 part 5): operations from the gold program's AST,
coverage of an instruction, the model solver check, and answerability in validation."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from veriforge.discovery.answerable import answerability, record_answerability
from veriforge.discovery.evalsynth import synthesize
from veriforge.discovery.instruction import template_instruction, write_instruction
from veriforge.discovery.progops import instruction_coverage, operation_steps, program_operations
from veriforge.llm import LLMClient, ScriptedBackend

pytest.importorskip("pandas")

ANALYSIS = """
import numpy as np
import pandas as pd
from scipy import stats
from sklearn.linear_model import LogisticRegression
import matplotlib.pyplot as plt

Z_CUT = 2.5
np.random.seed(7)
df = pd.read_csv("datasets/trial.csv", sep=";")
df = df.dropna(subset=["dose"])
df = df[np.abs(stats.zscore(df["response"])) < Z_CUT]
df = df[(df["age"] >= 18) & (df.site != "X")]
df["log_dose"] = np.log10(df["dose"] + 1)
summary = df.groupby(["site", "arm"])["response"].agg(["mean", "std"]).reset_index()
t, p = stats.ttest_ind(df[df.arm == "A"]["response"], df[df.arm == "B"]["response"], equal_var=False)
model = LogisticRegression(C=0.5, max_iter=1000).fit(df[["log_dose"]], df["responder"])
ax = plt.gca()
ax.scatter(df["log_dose"], df["response"], label="patients")
plt.savefig("pred_results/dose.png")
summary.to_csv("pred_results/summary.csv", index=False, float_format="%.4f")
"""


def test_operations_carry_their_constants():
    steps = operation_steps(ANALYSIS)
    expected = [
        "Use the random seed 7 (np.random.seed)",
        "Read the table 'datasets/trial.csv' (sep=';')",
        "Drop the rows with missing values (subset=['dose'])",
        "Keep only the rows where abs(zscore(`response`)) < 2.5",  # the module constant, inlined
        "Keep only the rows where (`age` >= 18) & (`site` != 'X')",  # df.site is the column `site`
        "Compute the column `log_dose` = log10(`dose` + 1)",
        "Group the rows by ['site', 'arm'] and compute agg(['mean', 'std']) of 'response'",
        "Compute ttest_ind(`response`[`arm` == 'A'], `response`[`arm` == 'B'], equal_var=False)",
        "Fit LogisticRegression(C=0.5, max_iter=1000)",
        "Plot a scatter plot of `log_dose`, `response`, label='patients'",
    ]
    for e in expected:
        assert e in steps, (e, steps)
    kinds = [op.kind for op in program_operations(ANALYSIS)]
    assert kinds.count("filter") == 2 and "group" in kinds and "model" in kinds and kinds[-1] == "write"
    assert program_operations("def broken(:\n") == []


def test_template_states_what_the_gold_does_and_vague_text_does_not():
    info = {"program_source": ANALYSIS, "outputs": ["pred_results/summary.csv"], "inputs": ["datasets/trial.csv"]}
    text = template_instruction(info)
    assert "abs(zscore(`response`)) < 2.5" in text and "C=0.5, max_iter=1000" in text
    cov = instruction_coverage(text, ANALYSIS)
    assert cov["ratio"] == 1.0 and cov["operations"] >= 9, cov
    vague = (
        "Remove outliers, compare the arms with a t-test, fit a logistic regression of responder on dose "
        "and save per-site, per-arm mean and std of response to pred_results/summary.csv."
    )
    cov = instruction_coverage(vague, ANALYSIS)
    assert cov["ratio"] < 0.5
    assert "Keep only the rows where abs(zscore(`response`)) < 2.5" in cov["missing"]
    assert "Fit LogisticRegression(C=0.5, max_iter=1000)" in cov["missing"]
    # Numbers count however they are written: 2.5 as "2.5", 18 as "18", 0.5 as "50%".
    said = "Keep rows with |z-score of response| below 2.5; adults (age 18 or more) not at site X."
    missing = instruction_coverage(said, ANALYSIS)["missing"]
    assert not any("zscore" in m or "`age`" in m for m in missing)


def test_model_instruction_that_skips_a_step_gets_it_appended():
    def fn(request, i):
        assert "abs(zscore(`response`)) < 2.5" in request.messages[-1].content  # the model is told
        return (
            "As clinicians we compare arms: read datasets/trial.csv, summarise response per site and arm "
            "(mean and std) and write pred_results/summary.csv."
        )

    client = LLMClient(ScriptedBackend(fn, name="instr"), use_cache=False)
    text = write_instruction({"program_source": ANALYSIS, "outputs": ["pred_results/summary.csv"]}, client=client)
    assert text.startswith("As clinicians")
    tail = text.split("Details of the analysis to follow exactly:")[1]
    assert "abs(zscore(`response`)) < 2.5" in tail and "LogisticRegression(C=0.5" in tail
    assert instruction_coverage(text, ANALYSIS)["ratio"] == 1.0


GOLD = """
import pandas as pd
LIMIT = 5
df = pd.read_csv("datasets/data.csv")
df = df[df["value"].abs() <= LIMIT]
out = df.groupby("group")["value"].mean().reset_index()
out.to_csv("pred_results/out.csv", index=False)
"""
DATA = "group,value\na,1\na,3\nb,2\nb,40\nc,-2\nc,4\nc,-30\n"


def make_task(root: Path, instruction: str | None) -> Path:
    d = root / "task"
    (d / "datasets").mkdir(parents=True)
    (d / "datasets" / "data.csv").write_text(DATA)
    (d / "gold_program").mkdir()
    (d / "gold_program" / "means.py").write_text(GOLD)
    (d / "pred_results").mkdir()
    subprocess.run([sys.executable, "gold_program/means.py"], cwd=d, check=True, timeout=120)
    (d / "pred_results").rename(d / "gold_results")
    s = synthesize(d / "gold_results", ["out.csv"], program_source=GOLD)
    s.write(d / "eval" / "eval_means.py")
    info = {"program_source": GOLD, "outputs": ["pred_results/out.csv"], "gold_dir": str(d / "gold_results")}
    task = {
        "instance_id": "means",
        "task_inst": instruction or template_instruction(info),
        "dataset_preview": "[START Preview of datasets/data.csv]\n" + DATA + "[END Preview of datasets/data.csv]",
        "gold_program_name": "means.py",
        "eval_script_name": "eval_means.py",
        "veriforge": {"outputs": ["out.csv"], "timeout_s": 60, "eval_plan": s.plan},
    }
    (d / "task.json").write_text(json.dumps(task))
    return d


def careful_solver(body, index):
    """Writes the program the instruction asks for: the outlier cut only if the instruction states it."""
    prompt = body["messages"][1]["content"]
    cut = re.search(r"`value`\.abs\(\) <= (\d+)", prompt)
    keep = f'df = df[df["value"].abs() <= {cut.group(1)}]\n' if cut else ""
    program = (
        "import pandas as pd\ndf = pd.read_csv('datasets/data.csv')\n" + keep + "df.groupby('group')['value']"
        ".mean().reset_index().to_csv('pred_results/out.csv', index=False)\n"
    )
    return f"Plan: as instructed.\n```python\n{program}```"


@pytest.mark.parametrize(
    ("instruction", "expected"),
    [(None, True), ("Compute the mean value per group of datasets/data.csv into pred_results/out.csv.", False)],
)
def test_solver_check_flags_instructions_that_omit_what_the_gold_does(tmp_path, instruction, expected):
    from veriforge.discovery.validate import validate_tasks
    from veriforge.llm import create_client
    from veriforge.llm.testing import FakeOpenAIServer

    task = make_task(tmp_path, instruction)
    with FakeOpenAIServer(careful_solver) as server:
        client = create_client(f"fake-model@{server.base_url}")
        result = answerability(task, client, max_debug_rounds=0, python=sys.executable)
        assert len(server.chat_requests) == 1
        assert "means.py" not in json.dumps(server.chat_requests[0].body)  # never shown the gold program
    assert result["method"] == "solver" and result["answerable"] is expected, result
    assert (result["coverage"]["ratio"] == 1.0) is expected  # read + group stated, the cut not
    if not expected:
        assert "differ" in result["solver"]["evaluator"] or "cell" in result["solver"]["evaluator"]
    record_answerability(task, result)
    (row,) = validate_tasks(tmp_path, reruns=1)
    assert row["ok"] and row["answerability"]["answerable"] is expected


def test_validation_reports_coverage_without_a_model(tmp_path):
    from veriforge.discovery.validate import validate_tasks

    make_task(tmp_path, "Compute the mean value per group of datasets/data.csv into pred_results/out.csv.")
    (row,) = validate_tasks(tmp_path, reruns=1)
    ans = row["answerability"]
    assert ans["method"] == "coverage" and ans["answerable"] is False
    assert ans["coverage"]["missing"] == ["Keep only the rows where `value`.abs() <= 5"]
