"""Task instructions: the template without a model, and the model path with a scripted model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from veriforge.discovery.instruction import analysis_steps, template_instruction, write_instruction
from veriforge.llm import LLMClient, LLMRequestError, ScriptedBackend

PROGRAM = """
import pandas as pd
from scipy import stats
from sklearn.linear_model import LogisticRegression

df = pd.read_csv("datasets/trial.csv").dropna()
summary = df.groupby("treatment")["response"].agg(["mean", "std"])
t, p = stats.ttest_ind(df[df.treatment == "A"].response, df[df.treatment == "B"].response)
model = LogisticRegression().fit(df[["dose"]], df["responder"])
summary.to_csv("pred_results/summary.csv")
np.save("pred_results/coef.npy", model.coef_)
"""


def _info(tmp_path: Path) -> dict:
    gold = tmp_path / "gold_results"
    gold.mkdir()
    (gold / "summary.csv").write_text("treatment,mean,std\nA,1.5,0.2\nB,2.5,0.3\n")
    np.save(gold / "coef.npy", np.zeros((1, 1)))
    return {
        "program_source": PROGRAM,
        "outputs": ["pred_results/summary.csv", "coef.npy"],
        "gold_dir": gold,
        "domain": "pharmacology",
    }


def test_analysis_steps_follow_the_program():
    assert analysis_steps(PROGRAM) == [
        "drop records with missing values",
        "group the records by 'treatment'",
        "aggregate per group",
        "run an independent two-sample t-test",
        "fit a logistic regression",
    ]
    assert analysis_steps("this is not python (") == []


def test_template_names_inputs_analysis_and_exact_outputs(tmp_path):
    text = write_instruction(_info(tmp_path))
    assert text == template_instruction(_info_again(tmp_path))
    assert text.startswith("In this pharmacology study, we have data in `datasets/trial.csv`.")
    assert "run an independent two-sample t-test" in text and "fit a logistic regression" in text
    assert (
        "`pred_results/summary.csv`: a comma-separated table with a header row and the columns "
        "`treatment`, `mean`, `std` (2 rows, one row per treatment)" in text
    )
    assert "`pred_results/coef.npy`: a NumPy .npy array of shape (1, 1) and dtype float64" in text


def _info_again(tmp_path: Path) -> dict:
    return {
        "program_source": PROGRAM,
        "outputs": ["pred_results/summary.csv", "coef.npy"],
        "gold_dir": tmp_path / "gold_results",
        "domain": "pharmacology",
    }


def test_template_falls_back_to_dataset_listing(tmp_path):
    d = tmp_path / "datasets"
    d.mkdir()
    (d / "obs.csv").write_text("x\n1\n")
    text = template_instruction({"outputs": ["out.txt"], "datasets_dir": d})
    assert "`datasets/obs.csv`" in text and "`pred_results/out.txt`" in text


def test_model_instruction_is_used_and_completed(tmp_path):
    seen = []

    def fn(request, i):
        seen.append(request.messages[-1].content)
        return (
            "As pharmacologists we want to know whether treatment B raises the response. Read "
            "datasets/trial.csv and write per-treatment means to pred_results/summary.csv."
        )

    client = LLMClient(ScriptedBackend(fn, name="instr"), use_cache=False)
    text = write_instruction(_info(tmp_path), client=client)
    assert text.startswith("As pharmacologists")
    assert "pharmacology scientist" in seen[0] and "ttest_ind" in seen[0]
    # the model forgot coef.npy: the exact output paragraph is appended
    assert "`pred_results/coef.npy`: a NumPy .npy array" in text


def test_model_failure_falls_back_to_template(tmp_path):
    def fn(request, i):
        raise LLMRequestError("boom", retryable=False)

    client = LLMClient(ScriptedBackend(fn, name="broken"), use_cache=False)
    assert write_instruction(_info(tmp_path), client=client) == template_instruction(_info_again(tmp_path))
