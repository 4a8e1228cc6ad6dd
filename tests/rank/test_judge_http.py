"""End to end over real HTTP: PairwiseJudge + tournament against a local OpenAI-compatible server."""

from __future__ import annotations

import re

from veriforge.llm import create_client
from veriforge.llm.testing import FakeOpenAIServer
from veriforge.rank.judge import PairwiseJudge
from veriforge.rank.tournament import AllPairs, run_tournament


def correctness_judge(body, sample_index):
    """Prefers the response containing the right answer (42), in whichever position it is."""
    user = body["messages"][-1]["content"]
    a = re.search(r"\[Response A\]\n(.*?)\n\n\[Response B\]", user, re.S).group(1)
    b = re.search(r"\[Response B\]\n(.*?)\n\nWhich", user, re.S).group(1)
    if ("42" in a) == ("42" in b):
        return "Neither stands out. [[tie]]"
    return '{"winner": "A"}' if "42" in a else "Response B is better."


async def test_reviewer_ranks_the_correct_trace_first_over_http():
    responses = {"t1": "The answer is 36.", "t2": "6*7 is 42.", "t3": "I think 48.", "t4": "Maybe 13."}
    with FakeOpenAIServer(replies=correctness_judge, models=["judge-model"]) as server:
        client = create_client(f"judge-model@{server.base_url}")
        judge = PairwiseJudge(client)
        result = await run_tournament(responses, judge.comparer("What is 6*7?", responses), AllPairs())
        await client.aclose()
        bodies = [r.body for r in server.chat_requests]
    assert result.ranking()[0] == "t2"
    assert result.comparisons == 6 and result.failures == 0
    assert len(bodies) == 12  # two orders per comparison
    assert all(b["temperature"] == 0.0 for b in bodies)
    wins = [o for o in result.outcomes if o.decisive]
    assert len(wins) == 3 and all(o.winner_id == "t2" and o.consistent for o in wins)
    # both orders went over the wire: every response was shown first at least once
    first = re.compile(r"\[Response A\]\n(.*?)\n")
    shown_first = {first.search(b["messages"][-1]["content"]).group(1) for b in bodies}
    assert set(responses.values()) <= shown_first
    assert result.usage.total > 0
