"""PairwiseJudge with the scripted back-end: both orders, bias cancellation, parse failures."""

from __future__ import annotations

import json
import re

import pytest

from veriforge.llm import LLMClient, ScriptedBackend, create_client
from veriforge.rank.errors import RankError
from veriforge.rank.judge import PairwiseJudge, combine_verdicts
from veriforge.rank.ratings import kendall_tau
from veriforge.rank.tournament import AllPairs, SwissRounds, run_tournament

QUESTION = "What is 6 * 7?"
GOOD = "6 * 7 = 42. quality=9"
BAD = "6 * 7 = 36. quality=2"


def shown(request):
    """(Response A text, Response B text) as the judge saw them."""
    user = request.messages[-1].content
    m = re.search(r"\[Response A\]\n(.*?)\n\n\[Response B\]\n(.*?)\n\nWhich", user, re.S)
    assert m, user
    return m.group(1), m.group(2)


def quality(text):
    return int(re.search(r"quality=(\d+)", text).group(1))


def fair_judge(seen=None):
    """Prefers the response with the higher quality, wherever it is shown."""

    def reply(request, i):
        a, b = shown(request)
        if seen is not None:
            seen.append((a, b))
        if quality(a) == quality(b):
            return "They are the same. [[tie]]"
        return "Response A is better." if quality(a) > quality(b) else "After checking the arithmetic: [[B]]"

    return reply


def client_for(fn):
    return LLMClient(ScriptedBackend(fn, name="judge"), model="scripted-judge")


async def test_fair_judge_prefers_the_better_answer_in_either_order():
    seen = []
    judge = PairwiseJudge(client_for(fair_judge(seen)))
    first = await judge.judge(QUESTION, GOOD, BAD, a="good", b="bad")
    second = await judge.judge(QUESTION, BAD, GOOD, a="bad", b="good")
    assert first.winner == "a" and first.winner_id == "good" and first.consistent
    assert second.winner == "b" and second.winner_id == "good" and not second.failed
    # the two calls of one comparison show the responses in both orders
    assert seen[:2] == [(GOOD, BAD), (BAD, GOOD)]
    orders = [(j.order, j.shown_first, j.verdict, j.winner) for j in first.judgements]
    assert orders == [("ab", "good", "A", "a"), ("ba", "bad", "B", "a")]
    assert first.source == "reviewer"


async def test_position_biased_judge_is_cancelled_to_a_tie():
    judge = PairwiseJudge(client_for(lambda request, i: "Clearly [[A]]"))
    outcome = await judge.judge(QUESTION, GOOD, BAD, a="good", b="bad")
    assert outcome.winner == "tie" and not outcome.failed
    assert outcome.consistent is False and "inconsistent" in outcome.reason
    assert [j.raw for j in outcome.judgements] == ["Clearly [[A]]", "Clearly [[A]]"]
    # asked in one order only, the same bias turns into a (documented) win for whoever is first
    one_order = PairwiseJudge(client_for(lambda request, i: "[[A]]"), both_orders=False)
    assert (await one_order.judge(QUESTION, BAD, GOOD)).winner == "a"


async def test_biased_judge_from_a_scripted_file_gives_an_all_tie_ranking(tmp_path):
    script = tmp_path / "biased.jsonl"
    script.write_text(json.dumps({"text": "Response A is better."}) + "\n")
    judge = PairwiseJudge(create_client(f"scripted:{script}"))
    responses = {f"r{k}": f"answer {k}. quality={k}" for k in range(4)}
    result = await run_tournament(responses, judge.comparer(QUESTION, responses), AllPairs())
    assert all(o.winner == "tie" and not o.failed for o in result.outcomes)
    assert len(set(result.ratings.scores.values())) == 1  # no one ranked above anyone else


async def test_unparseable_replies_are_failures_never_wins():
    judge = PairwiseJudge(client_for(lambda request, i: "Both are interesting in their own way."))
    outcome = await judge.judge(QUESTION, GOOD, BAD)
    assert outcome.failed and outcome.winner == "tie"
    assert "order ab" in outcome.reason and "order ba" in outcome.reason

    def half_broken(request, i):
        a, _ = shown(request)
        return "[[A]]" if a == GOOD else "hmm"  # only the (good, bad) order is readable

    outcome = await PairwiseJudge(client_for(half_broken)).judge(QUESTION, GOOD, BAD)
    assert outcome.failed and outcome.winner == "tie"
    assert outcome.judgements[0].winner == "a" and outcome.judgements[1].winner is None
    assert "order ba" in outcome.reason and "order ab" not in outcome.reason


async def test_usage_is_the_sum_of_both_calls():
    judge = PairwiseJudge(client_for(fair_judge()))
    outcome = await judge.judge(QUESTION, GOOD, BAD)
    per_call = [j.usage.total for j in outcome.judgements]
    assert all(t > 0 for t in per_call)
    assert outcome.usage.total == sum(per_call)
    assert judge.client.totals.total_tokens == outcome.usage.total


async def test_custom_template_parse_rule_and_braces():
    template = 'Q: {question}\nFIRST: {response_a}\nSECOND: {response_b}\nReply JSON {"pick": "A|B"}'
    prompts = []

    def reply(request, i):
        prompts.append(request.messages[-1].content)
        first = request.messages[-1].content.split("FIRST: ")[1].split("\n")[0]
        return "PICK=A" if "42" in first else "PICK=B"

    judge = PairwiseJudge(client_for(reply), template=template, parse=r"PICK=([AB])", system=None)
    code = "int f() { return {question}; }  // 42"
    outcome = await judge.judge(QUESTION, code, BAD)
    assert outcome.winner == "a"
    assert f"FIRST: {code}" in prompts[0]  # braces and placeholders inside responses are left alone
    assert '{"pick": "A|B"}' in prompts[0]
    with pytest.raises(RankError):
        PairwiseJudge(client_for(reply), template="Q: {question} {response_a}")

    def exploding_rule(text):
        raise ValueError("bad rule")

    broken = PairwiseJudge(client_for(reply), template=template, parse=exploding_rule, system=None)
    outcome = await broken.judge(QUESTION, GOOD, BAD)
    assert outcome.failed and "bad rule" in outcome.reason


async def test_judge_drives_a_swiss_tournament_to_the_true_order():
    responses = {f"r{k}": f"candidate answer {k}. quality={(k * 5) % 8}" for k in range(8)}
    judge = PairwiseJudge(client_for(fair_judge()))
    compare = judge.comparer(QUESTION, responses)
    result = await run_tournament(responses, compare, SwissRounds(), concurrency=4)
    truth = {k: quality(v) for k, v in responses.items()}
    assert result.ranking()[0] == max(truth, key=truth.get)
    assert kendall_tau(result.ratings.scores, truth) > 0.6
    assert judge.client.totals.calls == 2 * result.comparisons
    assert result.usage.total == judge.client.totals.total_tokens


def test_combine_rule_table():
    assert combine_verdicts(["a", "a"]) == ("a", False, "consistent")
    assert combine_verdicts(["tie", "tie"])[0] == "tie"
    assert combine_verdicts(["a", "tie"])[:2] == ("tie", False)
    assert combine_verdicts(["a", None])[:2] == ("tie", True)
