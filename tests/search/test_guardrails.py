"""Guardrails: incorrect and regressing edits are rejected, suspicious gains re-checked."""

from __future__ import annotations

from collections import Counter

import pytest

from veriforge.search import MCTS, Edit, Evaluation, FunctionProposer, Guardrails, SearchConfig

# States are names; the proposer offers a fixed menu of edits of the root only (and of "good").
MENU = {"root": ["broken", "slow", "good", "cheat"], "good": ["better"]}
TIMES = {"root": 1.0, "slow": 1.6, "good": 0.8, "better": 0.7, "cheat": 0.01}


def _proposer(seen):
    def propose(node, k):
        seen.append(node.state)
        return [Edit(s, description=f"to {s}") for s in MENU.get(node.state, [])]
    return FunctionProposer("menu", propose)


class Timer:
    """Objective per state; 'broken' is incorrect; 'cheat' is fast only on its first run."""

    fingerprint = "timer"

    def __init__(self):
        self.calls = Counter()

    def evaluate(self, state):
        self.calls[state] += 1
        if state == "broken":
            return Evaluation.failed("wrong answer on input 3")
        if state == "cheat" and self.calls[state] > 1:
            return Evaluation.failed("skipped the work: output not written")
        return Evaluation(ok=True, objective=TIMES[state], provenance="estimated")


def _search(guardrails=None, budget=6):
    seen: list[str] = []
    timer = Timer()
    cfg = SearchConfig(max_evaluations=budget, final_top_k=0, guardrails=guardrails or Guardrails())
    result = MCTS([_proposer(seen)], timer, cfg).run_sync("root")
    return result, timer, seen


def test_incorrect_and_regressing_edits_are_rejected_and_never_expanded():
    result, _, seen = _search()
    nodes = {n.state: n for n in result.tree}
    assert nodes["broken"].status == "rejected" and "wrong answer" in nodes["broken"].reason
    assert nodes["slow"].status == "rejected" and "regression" in nodes["slow"].reason
    assert nodes["good"].status == "accepted" and nodes["better"].status == "accepted"
    assert "broken" not in seen and "slow" not in seen
    assert result.best.state == "better"
    assert result.stats.rejected == 3  # broken, slow, cheat


def test_regression_guard_can_be_disabled():
    result, _, _ = _search(Guardrails(regression_tolerance=None))
    assert {n.state: n.status for n in result.tree}["slow"] == "accepted"


def test_suspicious_speedup_is_re_evaluated_before_acceptance():
    result, timer, _ = _search()
    cheat = {n.state: n for n in result.tree}["cheat"]
    assert timer.calls["cheat"] == 2 and timer.calls["good"] == 1  # only the 100x one re-run
    assert cheat.status == "rejected" and "not confirmed" in cheat.reason


def test_confirmed_suspicious_speedup_is_accepted_with_averaged_value():
    TIMES_FAST = dict(TIMES, cheat=0.05)

    class Honest(Timer):
        def evaluate(self, state):
            self.calls[state] += 1
            if state == "broken":
                return Evaluation.failed("wrong answer")
            return Evaluation(ok=True, objective=TIMES_FAST[state] * (1 + 0.1 * self.calls[state]))

    timer = Honest()
    cfg = SearchConfig(max_evaluations=6, final_top_k=0, guardrails=Guardrails(suspicious_repeats=2))
    result = MCTS([_proposer([])], timer, cfg).run_sync("root")
    cheat = {n.state: n for n in result.tree}["cheat"]
    assert cheat.status == "accepted" and timer.calls["cheat"] == 3
    assert cheat.objective == pytest.approx((0.055 + 0.06 + 0.065) / 3)
    assert any("suspicious" in note for note in cheat.notes)


def test_suspicious_check_callback_decides():
    checked = []

    def check(state, evaluation):
        checked.append((state, evaluation.objective))
        return Evaluation.failed("fails on the large input")

    timer = Timer()
    timer.calls["cheat"] = -10  # would pass re-evaluation; the callback must decide instead
    cfg = SearchConfig(max_evaluations=6, final_top_k=0, guardrails=Guardrails(check=check))
    result = MCTS([_proposer([])], timer, cfg).run_sync("root")
    cheat = {n.state: n for n in result.tree}["cheat"]
    assert checked == [("cheat", 0.01)]
    assert cheat.status == "rejected" and "large input" in cheat.reason


def test_final_check_rejects_the_would_be_winner_and_the_next_best_wins():
    checked: list[str] = []

    def final_check(state):
        checked.append(state)
        if state in ("better", "cheat"):
            return Evaluation.failed("wrong at a held-out size")
        return Evaluation(ok=True, objective=TIMES[state])

    cfg = SearchConfig(max_evaluations=6, final_top_k=0, guardrails=Guardrails(suspicious_factor=None),
                       final_check=final_check)
    result = MCTS([_proposer([])], Timer(), cfg).run_sync("root")
    nodes = {n.state: n for n in result.tree}
    assert checked == ["cheat", "better", "good"]   # best first; each node checked once
    assert result.best.state == "good"
    assert nodes["better"].status == "rejected" and nodes["better"].reason == \
        "failed the final check: wrong at a held-out size"
    assert "passed the final check" in nodes["good"].notes


def test_final_check_is_not_run_on_the_initial_state():
    def final_check(state):
        return Evaluation.failed("everything fails")

    cfg = SearchConfig(max_evaluations=6, final_top_k=0, guardrails=Guardrails(suspicious_factor=None),
                       final_check=final_check)
    result = MCTS([_proposer([])], Timer(), cfg).run_sync("root")
    assert result.best.state == "root"
    assert {n.state for n in result.tree if "final check" in (n.reason or "")} >= {"better", "good", "cheat"}
