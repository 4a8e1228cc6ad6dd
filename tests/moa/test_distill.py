"""Reviewer distillation end to end on a tiny random model: teacher judgements → dataset → TRL reward
training → agreement with the teacher before and after (issue 7). Numbers on a random 2-layer model are
near chance; what is asserted is that every stage runs, the loss falls on a small repeated set, and the
report carries both agreement figures."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

from veriforge.llm import create_client
from veriforge.llm.backends.scripted import ScriptedBackend
from veriforge.moa.bench import extract_answer, generate_gsm8k
from veriforge.moa.distill import (
    DistillError,
    JudgedPair,
    RewardReviewer,
    agreement_with_teacher,
    collect_teacher_judgements,
    distill,
    load_traces,
    main_cli,
    make_pairs,
    read_judgements,
    split_by_question,
    train_reward_reviewer,
    write_judgements,
)
from veriforge.rank import PairwiseJudge

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ITEMS = generate_gsm8k(8, seed=11)
GOLD = {it.question: it.answer for it in ITEMS}


def _write_traces(path: Path) -> Path:
    """Per question: one right trace and two wrong ones (different wrong answers)."""
    lines = []
    for it in ITEMS:
        n = int(it.answer)
        for k, ans in enumerate((n, n + 3, n - 5)):
            text = f"I add everything up carefully. #### {ans}" if k == 0 else f"Quick guess. #### {ans}"
            lines.append(
                {
                    "question_id": it.id,
                    "question": it.question,
                    "id": f"t{k}",
                    "response": text,
                    "domain": "math",
                }
            )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _teacher_reply(prompt: str) -> str:
    """A teacher that knows the gold answers: prefers the response with the right number."""
    question = prompt.split("[Question]\n", 1)[1].split("\n\n[Response A]", 1)[0]
    a = prompt.split("[Response A]\n", 1)[1].split("\n\n[Response B]", 1)[0]
    b = prompt.split("[Response B]\n", 1)[1].split("\n\nWhich response", 1)[0]
    ok = [extract_answer("gsm8k", t) == GOLD[question] for t in (a, b)]
    return "Both checked. [[" + ("tie" if ok[0] == ok[1] else "A" if ok[0] else "B") + "]]"


def _scripted_teacher():
    def fn(request, i):
        return _teacher_reply(request.messages[-1].content)

    return PairwiseJudge(create_client("scripted:teacher", backend=ScriptedBackend(fn)))


def _tiny_reviewer(texts: list[str], seed: int = 0) -> RewardReviewer:
    """Byte-level BPE trained on the texts in ms + a random 2-layer Qwen2 with a 1-output head."""
    import torch
    from transformers import Qwen2ForSequenceClassification

    from veriforge.llm.testing import tiny_qwen2_config, tiny_tokenizer

    fast = tiny_tokenizer(texts, vocab_size=400, full_byte_alphabet=True)
    torch.manual_seed(seed)
    config = tiny_qwen2_config(fast, num_labels=1)
    return RewardReviewer(Qwen2ForSequenceClassification(config), fast, max_length=256)


def _corpus(traces: Path) -> list[str]:
    return [line for line in traces.read_text().splitlines()] * 2


def test_traces_pairs_and_split(tmp_path: Path) -> None:
    groups = load_traces(_write_traces(tmp_path / "traces.jsonl"))
    assert len(groups) == 8 and all(len(g["responses"]) == 3 for g in groups.values())
    pairs = make_pairs(groups, seed=0)
    assert len(pairs) == 8 * 3 and {p.a_id for p in pairs} == {"t0", "t1", "t2"}
    assert len(make_pairs(groups, max_pairs_per_question=2)) == 16
    judged = [JudgedPair(**{**p.__dict__, "verdict": "a"}) for p in pairs]
    train, test = split_by_question(judged, 0.25, seed=1)
    assert {j.question_id for j in train}.isdisjoint({j.question_id for j in test})
    assert len({j.question_id for j in test}) == 2 and len(train) + len(test) == len(judged)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q"}\n')
    with pytest.raises(DistillError, match="needs 'response'"):
        load_traces(bad)


async def test_teacher_judgements_dataset_round_trip(tmp_path: Path) -> None:
    pairs = make_pairs(load_traces(_write_traces(tmp_path / "t.jsonl")), seed=0)
    judged = await collect_teacher_judgements(_scripted_teacher(), pairs, teacher="scripted")
    by_ids = {(j.a_id, j.b_id): j.verdict for j in judged}
    # the right trace t0 wins every pair it is in, in either frame; wrong-vs-wrong is a tie
    assert all(v == ("a" if a == "t0" else "b" if b == "t0" else "tie") for (a, b), v in by_ids.items())
    assert all(j.consistent for j in judged) and not any(j.failed for j in judged)
    path = write_judgements(tmp_path / "judgements.jsonl", judged)
    row = json.loads(path.read_text().splitlines()[0])
    assert {"question", "response_a", "response_b", "verdict", "domain"} <= set(row)
    assert read_judgements(path) == judged
    teacher_vs_itself = agreement_with_teacher([j.outcome() for j in judged], judged)
    assert teacher_vs_itself.value == 1.0 and teacher_vs_itself.decisive_n == 16


def test_reward_training_loss_decreases_on_a_repeated_set(tmp_path: Path) -> None:
    traces = _write_traces(tmp_path / "t.jsonl")
    pairs = make_pairs(load_traces(traces), seed=0)[:6]
    judged = [
        JudgedPair(**p.__dict__, verdict="a" if p.a_id == "t0" else "b" if p.b_id == "t0" else "tie")
        for p in pairs
    ] * 4
    reviewer = _tiny_reviewer(_corpus(traces))
    result = train_reward_reviewer(
        reviewer,
        judged,
        tmp_path / "run",
        steps=6,
        learning_rate=3e-3,
        batch_size=8,
        use_cpu=True,
        save=False,
    )
    assert result.steps == 6 and len(result.losses) == 6
    assert result.skipped_ties == sum(1 for j in judged if j.verdict == "tie") > 0
    assert sum(result.losses[-2:]) / 2 < result.losses[0], result.losses
    outcomes = reviewer.judge_pairs([j for j in judged if j.decisive][:4])
    assert all(o.source == "reviewer" and o.reason.startswith("reward difference") for o in outcomes)


async def test_distill_end_to_end_reports_agreement_before_and_after(tmp_path: Path) -> None:
    traces = _write_traces(tmp_path / "t.jsonl")
    reviewer = _tiny_reviewer(_corpus(traces))
    report = await distill(
        _scripted_teacher(),
        traces,
        reviewer,
        tmp_path / "out",
        teacher_name="scripted",
        steps=3,
        learning_rate=3e-3,
        batch_size=8,
        use_cpu=True,
        save=False,
    )
    assert report.n_pairs == 24 and report.n_test == 6 and report.n_train == 18 and report.teacher_failed == 0
    for figure in (report.before, report.after):
        assert figure["n"] == 6 and figure["decisive_n"] == 4 and 0.0 <= figure["value"] <= 1.0
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert set(saved["before"]) == set(saved["after"]) == {"value", "n", "decisive_value", "decisive_n"}
    assert len(saved["train"]["losses"]) == 3 and (tmp_path / "out" / "judgements.jsonl").is_file()
    assert "before:" in report.summary() and "after:" in report.summary()


def test_main_cli_over_real_http_teacher_and_saved_base_model(tmp_path: Path) -> None:
    from veriforge.llm.testing import FakeOpenAIServer

    traces = _write_traces(tmp_path / "t.jsonl")
    base = tmp_path / "base"
    tiny = _tiny_reviewer(_corpus(traces))
    tiny.model.save_pretrained(base)
    tiny.tokenizer.save_pretrained(base)
    with FakeOpenAIServer(
        replies=lambda body, i: _teacher_reply(body["messages"][-1]["content"]), models=["teacher"]
    ) as server:
        report = main_cli(
            f"teacher@{server.base_url}",
            traces,
            base,
            tmp_path / "out",
            steps=2,
            learning_rate=3e-3,
            batch_size=8,
            max_pairs_per_question=2,
        )
        assert len(server.chat_requests) == 2 * 16  # both orders of every pair
    assert report.n_pairs == 16 and not math.isnan(report.after["value"])
    assert (tmp_path / "out" / "reviewer" / "config.json").is_file()
    reloaded = RewardReviewer.from_pretrained(tmp_path / "out" / "reviewer")
    assert re.fullmatch(r"-?\d+\.\d+", f"{reloaded.score('q', 'r'):.3f}")
    with pytest.raises(DistillError, match="not a local model directory"):
        RewardReviewer.from_pretrained(tmp_path / "nowhere")
