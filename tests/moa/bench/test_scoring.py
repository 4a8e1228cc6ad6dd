"""Scoring: gold answers of every bundled item score correct; wrong and unparseable ones do not; code
runs its tests in the sandbox and a hanging program is a timeout, not a hang."""

from __future__ import annotations

import time

import pytest

from veriforge.moa.bench import SUITES, Item, load_suite, score, score_async, summarize

TEXT_SUITES = [s for s in SUITES if SUITES[s].kind != "code"]


def _as_reply(item: Item) -> str:
    kind = SUITES[item.suite].kind
    if kind == "number":
        return f"Let me work it out step by step.\n#### {item.answer}"
    if kind == "latex":
        return f"Working... so the result is $\\boxed{{{item.answer}}}$."
    if kind == "yesno":
        return f"Thinking about the facts. Answer: {'yes' if item.answer == 'True' else 'no'}"
    return f"After reasoning, the answer is: {item.answer}"


@pytest.mark.parametrize("suite", TEXT_SUITES)
def test_gold_answers_score_correct_and_a_wrong_one_does_not(suite: str) -> None:
    items = load_suite(suite)
    assert len(items) >= 10
    for item in items:
        s = score(item, _as_reply(item))
        assert s.correct and not s.parse_failed, (item.id, s)
    wrong = {
        "number": "#### 999999",
        "latex": r"\boxed{999999}",
        "truth": "Answer: False",
        "yesno": "Answer: no",
        "choice": "Answer: A",
    }[SUITES[suite].kind]
    results = [score(item, wrong) for item in items]
    assert sum(r.correct for r in results) < len(items)
    assert not any(r.parse_failed for r in results)


def test_parse_failures_count_as_wrong_and_are_reported() -> None:
    item = load_suite("gsm8k", limit=1)[0]
    s = score(item, "I refuse to answer.")
    assert (s.correct, s.parsed, s.parse_failed) == (False, None, True)
    summary = summarize([s, score(item, f"#### {item.answer}")])
    assert (summary.n, summary.correct, summary.parse_failures, summary.accuracy) == (2, 1, 1, 0.5)


def test_prontoqa_uncertain_is_wrong_not_a_parse_failure() -> None:
    item = load_suite("prontoqa", limit=1)[0]
    s = score(item, "The statement cannot be determined.")
    assert (s.correct, s.parsed, s.parse_failed) == (False, "Uncertain", False)


def test_choice_by_text_scores() -> None:
    item = load_suite("mmlu", limit=1)[0]  # gold B = Nitrogen
    assert score(item, "It is nitrogen, roughly 78 percent.").correct
    assert not score(item, "Final answer: Oxygen").correct


@pytest.mark.parametrize("suite", ["humaneval", "mbpp"])
def test_reference_solutions_pass_and_broken_code_fails(suite: str) -> None:
    items = load_suite(suite)
    for item in items[:4]:
        body = item.answer if suite == "mbpp" else item.meta["prompt"] + item.answer
        s = score(item, f"Here you go:\n```python\n{body}\n```")
        assert s.correct, (item.id, s.detail)
        head, _, tail = body.rpartition("return ")  # break the last return: the tests must notice
        bad = score(item, f"```python\n{head}return None and {tail}\n```")
        assert not bad.correct and not bad.parse_failed, item.id


def test_humaneval_body_only_completion_is_accepted() -> None:
    item = load_suite("humaneval", limit=1)[0]
    assert score(item, "```python\n" + item.answer + "```").correct


def test_infinite_loop_is_a_timeout_failure() -> None:
    item = load_suite("mbpp", limit=1)[0]
    start = time.monotonic()
    s = score(item, "```python\ndef list_product(nums):\n    while True:\n        pass\n```", timeout_s=1.5)
    assert not s.correct and not s.parse_failed and "timeout" in s.detail
    assert time.monotonic() - start < 15


async def test_async_scoring_matches_sync() -> None:
    item = load_suite("mbpp", limit=1)[0]
    good = await score_async(item, f"```python\n{item.answer}\n```")
    none = await score_async(item, "no code here")
    assert good.correct and none.parse_failed
