"""The propose → verify → feedback → revise loop."""

from __future__ import annotations

import pytest

from veriforge.core.types import Candidate
from veriforge.search import Verification, refine_sync
from veriforge.search.errors import SearchConfigError
from veriforge.search.refine import refine


def test_stops_at_first_success_and_records_feedback_each_turn():
    proposals = iter(["v1", "v2", "v3", "v4"])
    seen_histories = []

    def propose(traj):
        seen_histories.append([s.content for s in traj.steps])
        return next(proposals)

    def verify(c):
        return (c == "v3", {"v1": 0.1, "v2": 0.4, "v3": 0.9}[c], f"feedback on {c}")

    res = refine_sync(propose, verify, turns=5, task_id="t", prompt="write it")
    assert res.success and res.turns == 3 and res.best == "v3" and res.best_turn == 2
    kinds = [(s.role, s.kind) for s in res.trajectory.steps]
    assert kinds == [("user", "prompt")] + [("assistant", "proposal"), ("user", "feedback")] * 3
    assert [s.content for s in res.trajectory.steps if s.kind == "feedback"] == [
        "feedback on v1", "feedback on v2", "feedback on v3"]
    # Each proposal saw all previous feedback.
    assert seen_histories[2] == ["write it", "v1", "feedback on v1", "v2", "feedback on v2"]
    assert res.trajectory.reward == 0.9 and res.trajectory.step_rewards == [0.1, 0.4, 0.9]


async def test_best_so_far_when_no_turn_succeeds_and_repeats_are_not_reverified():
    calls = []

    async def propose(traj):
        n = len([s for s in traj.steps if s.kind == "proposal"])
        return Candidate(source=["a", "b", "a"][n])

    async def verify(c):
        calls.append(c.source)
        return Verification(ok=False, score={"a": 0.7, "b": 0.2}[c.source], feedback=f"slow {c.source}")

    res = await refine(propose, verify, turns=3)
    assert not res.success and res.turns == 3
    assert res.best.source == "a" and res.best_turn == 0
    assert calls == ["a", "b"]
    last = res.trajectory.steps[-1]
    assert "same candidate as turn 1" in last.content and last.metadata["repeat_of"] == 0
    assert res.trajectory.steps[0].candidate == Candidate(source="a").hash


def test_bad_arguments():
    with pytest.raises(SearchConfigError):
        refine_sync(lambda t: "x", lambda c: (True, 1.0, ""), turns=0)
