"""``moa bench --export-distill``: the grid's proposals and the Reviewer's comparisons, as the files
``moa distill`` reads (issue 17 part 1), and ``moa distill --judgements`` training on them."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from veriforge.cli.moa_cmd import app
from veriforge.core.store import RunStore
from veriforge.llm.testing import FakeOpenAIServer
from veriforge.moa.distill import load_traces, make_pairs, read_judgements
from veriforge.moa.memory import NS_OUTCOME, ReasoningMemory


@pytest.fixture
def exported(tmp_path, monkeypatch, gsm_reply):
    monkeypatch.chdir(tmp_path)
    with FakeOpenAIServer(replies=gsm_reply) as server:
        (tmp_path / "moa.toml").write_text(f'[[proposers]]\nmodel = "fake-model@{server.base_url}"\n\n'
                                           '[reviewer]\nbudget = "all_pairs"\n')
        result = CliRunner().invoke(app, ["bench", "--suite", "gsm8k", "--limit", "2", "--depth", "2", "--width", "2",
                                          "--methods", "moa,rem_moa", "--config", "moa.toml", "--out", "out",
                                          "--no-plots", "--export-distill", "distill"])
    assert result.exit_code == 0, result.output
    return tmp_path, RunStore(os.path.join(os.environ["VERIFORGE_HOME"], "runs.sqlite"))


def test_export_round_trips_through_the_distill_readers(exported):
    tmp, store = exported
    runs = [r for r in store.list_runs(kind="moa")]
    assert len(runs) == 4  # moa and rem_moa, two items each
    groups = load_traces(tmp / "distill" / "traces.jsonl")
    assert set(groups) == {r.id for r in runs}
    for run in runs:
        memory = ReasoningMemory.load(store, run.id)
        group = groups[run.id]
        assert group["question"] == run.config["question"]
        assert group["responses"] == {t.id: t.reasoning for t in memory.proposals()}  # 2 layers x 2 agents
        assert len(group["responses"]) == 4
    judged = read_judgements(tmp / "distill" / "judgements.jsonl")
    rem = [r.id for r in runs if "/rem_moa-" in r.id]
    stored = [store.records(NS_OUTCOME, run_id=rid) for rid in rem]
    skipped = sum(1 for recs in stored for r in recs if r.value.get("meta", {}).get("skipped"))
    assert skipped > 0  # equal answers were not sent to the reviewer ...
    assert len(judged) == sum(len(recs) for recs in stored) - skipped > 0  # ... and are no teacher verdicts
    assert {j.question_id for j in judged} == set(rem)
    for j in judged:
        memory = ReasoningMemory.load(store, j.question_id)
        assert (j.response_a, j.response_b) == (memory[j.a_id].reasoning, memory[j.b_id].reasoning)
        assert j.verdict in ("a", "b", "tie") and j.teacher.startswith("fake-model@")
    # the reviewer prefers "#### 4" whichever side it is on: decisive verdicts follow the answer
    decisive = [j for j in judged if j.verdict in ("a", "b")]
    assert decisive and all(("#### 4" in (j.response_a if j.verdict == "a" else j.response_b)) for j in decisive)
    assert make_pairs(groups)  # traces alone also make teacher pairs


def test_distill_trains_on_exported_judgements(exported):
    pytest.importorskip("trl")
    pytest.importorskip("tokenizers")
    import torch
    from transformers import Qwen2ForSequenceClassification

    from veriforge.llm.testing import tiny_qwen2_config, tiny_tokenizer

    tmp, _ = exported
    lines = (tmp / "distill" / "judgements.jsonl").read_text().splitlines()
    tokenizer = tiny_tokenizer(lines * 2, vocab_size=400, full_byte_alphabet=True)
    torch.manual_seed(0)
    Qwen2ForSequenceClassification(tiny_qwen2_config(tokenizer, num_labels=1)).save_pretrained(tmp / "base")
    tokenizer.save_pretrained(tmp / "base")
    result = CliRunner().invoke(app, ["distill", "--base-model", str(tmp / "base"), "--out", str(tmp / "student"),
                                      "--judgements", str(tmp / "distill" / "judgements.jsonl"), "--steps", "2",
                                      "--learning-rate", "3e-3", "--test-fraction", "0.5"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp / "student" / "report.json").read_text())
    assert report["n_pairs"] == len(lines) and report["teacher_failed"] == 0
    assert report["teacher"].startswith("given judgements")
    assert len(report["train"]["losses"]) == 2
    # no --data and no --judgements is a usage error, not a crash
    bad = CliRunner().invoke(app, ["distill", "--base-model", str(tmp / "base"), "--out", str(tmp / "x")])
    assert bad.exit_code == 2 and "--judgements" in bad.output
