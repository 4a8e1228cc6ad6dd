"""Bradley–Terry, Elo, win rate and ranking agreement on outcomes with a planted truth."""

from __future__ import annotations

import math
import random

import pytest

from veriforge.rank.errors import MixedSourcesError, RankError
from veriforge.rank.outcomes import Outcome
from veriforge.rank.ratings import (
    bradley_terry,
    elo,
    elo_expected,
    elo_update,
    fit_ratings,
    judgement_agreement,
    kendall_tau,
    outcome_agreement,
    pairwise_agreement,
    ranking,
    win_rate,
)

TRUE = {f"i{k}": 0.6 * k for k in range(8)}  # i7 strongest


def simulate(strengths, games_per_pair, seed=0):
    rng = random.Random(seed)
    ids = list(strengths)
    out = []
    for p, a in enumerate(ids):
        for b in ids[p + 1:]:
            prob = 1 / (1 + math.exp(-(strengths[a] - strengths[b])))
            for _ in range(games_per_pair):
                out.append(Outcome(a=a, b=b, winner="a" if rng.random() < prob else "b"))
    return out


def test_bradley_terry_recovers_planted_strengths():
    outcomes = simulate(TRUE, 40)
    r = bradley_terry(outcomes)
    assert r.ranking() == ranking(TRUE)
    assert kendall_tau(r.scores, TRUE) == 1.0
    # strength differences are recovered within a few standard errors
    for x in TRUE:
        diff_true = TRUE[x] - TRUE["i0"]
        diff_fit = r.scores[x] - r.scores["i0"]
        assert abs(diff_fit - diff_true) < 4 * math.hypot(r.stderr[x], r.stderr["i0"]) + 1e-9
    assert r.prob("i7", "i0") > 0.95
    assert r.games["i3"] == 7 * 40


def test_more_games_shrink_standard_errors():
    few = bradley_terry(simulate(TRUE, 5))
    many = bradley_terry(simulate(TRUE, 50))
    assert all(many.stderr[x] < few.stderr[x] for x in TRUE)


def test_undefeated_item_gets_a_finite_score_controlled_by_the_prior():
    outcomes = [Outcome(a="champ", b="other", winner="a")] * 5
    loose = bradley_terry(outcomes, prior=0.001)
    tight = bradley_terry(outcomes, prior=1.0)
    for r in (loose, tight):
        assert all(math.isfinite(v) for v in r.scores.values())
        assert r.scores["champ"] > r.scores["other"]
    assert loose.scores["champ"] - loose.scores["other"] > tight.scores["champ"] - tight.scores["other"]
    with pytest.raises(RankError):
        bradley_terry(outcomes, prior=0.0)


def test_ties_count_half():
    wins = [Outcome.from_score("a", "b", s) for s in (1, 1, 1, 0)]  # 3 points of 4
    ties = [Outcome.from_score("a", "b", s) for s in (1, 1, 0.5, 0.5)]  # also 3 of 4
    r1, r2 = bradley_terry(wins), bradley_terry(ties)
    assert r1.scores["a"] == pytest.approx(r2.scores["a"], abs=1e-9)
    assert r1.scores["a"] > 0 > r1.scores["b"]
    only_ties = bradley_terry([Outcome(a="a", b="b", winner="tie")] * 3)
    assert only_ties.scores["a"] == pytest.approx(only_ties.scores["b"])
    assert win_rate(ties).scores == {"a": 0.75, "b": 0.25}


def test_bradley_terry_is_deterministic_and_order_free():
    outcomes = simulate(TRUE, 10, seed=3)
    shuffled = list(outcomes)
    random.Random(9).shuffle(shuffled)
    a, b = bradley_terry(outcomes), bradley_terry(shuffled)
    assert a.ranking() == b.ranking()
    for x in TRUE:
        assert a.scores[x] == pytest.approx(b.scores[x], abs=1e-9)


def test_items_without_games_keep_the_prior():
    r = bradley_terry([Outcome(a="x", b="y", winner="a")], items=["x", "y", "z"], prior=0.25)
    assert r.scores["z"] == 0.0 and r.games["z"] == 0
    assert r.stderr["z"] == pytest.approx(2.0)  # 1/sqrt(0.25)
    with pytest.raises(RankError):
        bradley_terry([Outcome(a="x", b="q", winner="a")], items=["x", "y"])


def test_reviewer_and_verifier_outcomes_are_never_mixed_silently():
    reviewer = [Outcome(a="x", b="y", winner="a")] * 3
    verifier = [Outcome.from_verifier("x", "y", a_passed=False, b_passed=True)] * 3
    with pytest.raises(MixedSourcesError):
        bradley_terry(reviewer + verifier)
    by_reviewer = bradley_terry(reviewer + verifier, source="reviewer")
    by_verifier = bradley_terry(reviewer + verifier, source="verifier")
    assert by_reviewer.source == "reviewer" and by_reviewer.ranking()[0] == "x"
    assert by_verifier.source == "verifier" and by_verifier.ranking()[0] == "y"
    with pytest.raises(MixedSourcesError):
        elo(reviewer + verifier)


def test_failed_comparisons_are_skipped_unless_asked():
    good = [Outcome(a="x", b="y", winner="a")] * 2
    failed = [Outcome(a="x", b="y", winner="tie", failed=True, reason="unparseable")] * 4
    assert bradley_terry(good + failed).scores == bradley_terry(good).scores
    counted = bradley_terry(good + failed, include_failed=True)
    assert counted.scores["x"] < bradley_terry(good).scores["x"]  # ties pull the two together
    assert counted.games["x"] == 6


def test_elo_single_update_and_expectation():
    assert elo_update(1500, 1500, 1.0, k=32) == (1516.0, 1484.0)
    assert elo_expected(1600, 1400) == pytest.approx(1 / (1 + 10 ** -0.5))
    r = elo([Outcome(a="x", b="y", winner="a")], k=20, initial=1000)
    assert r.scores == {"x": 1010.0, "y": 990.0}
    tie = elo([Outcome(a="x", b="y", winner="tie")])
    assert tie.scores == {"x": 1500.0, "y": 1500.0}


def test_elo_depends_on_order_and_shuffles_damp_it():
    x_then_y = [Outcome(a="x", b="y", winner="a"), Outcome(a="x", b="y", winner="b")]
    forward = elo(x_then_y)
    backward = elo(list(reversed(x_then_y)))
    assert forward.scores["y"] > forward.scores["x"]  # the last game weighs more
    assert backward.scores["x"] > backward.scores["y"]
    averaged = elo(x_then_y, shuffles=200, seed=1)
    gap = abs(averaged.scores["x"] - averaged.scores["y"])
    assert gap < abs(forward.scores["x"] - forward.scores["y"]) / 4
    assert averaged == elo(x_then_y, shuffles=200, seed=1)  # deterministic for a seed
    total = sum(elo(simulate(TRUE, 3)).scores.values())
    assert total == pytest.approx(1500 * len(TRUE))  # zero-sum


def test_elo_and_win_rate_also_find_the_planted_top():
    outcomes = simulate(TRUE, 20)
    assert elo(outcomes, k=8, shuffles=5).ranking()[0] == "i7"
    assert win_rate(outcomes).ranking()[0] == "i7"
    assert kendall_tau(fit_ratings(outcomes, method="win_rate").scores, TRUE) > 0.9
    with pytest.raises(RankError):
        win_rate(outcomes).prob("i7", "i0")
    with pytest.raises(RankError):
        fit_ratings(outcomes, method="glicko")  # type: ignore[arg-type]


def test_kendall_tau_and_pairwise_agreement():
    truth = ["a", "b", "c", "d"]
    assert kendall_tau(truth, truth) == 1.0
    assert kendall_tau(truth, list(reversed(truth))) == -1.0
    one_swap = ["b", "a", "c", "d"]
    assert kendall_tau(truth, one_swap) == pytest.approx(4 / 6)
    assert pairwise_agreement(truth, one_swap) == pytest.approx(5 / 6)
    # scores with ties: tau-b; only strictly ordered pairs count for agreement
    assert pairwise_agreement({"a": 3, "b": 2, "c": 2}, ["a", "b", "c"]) == 1.0
    assert math.isnan(kendall_tau({"a": 1, "b": 1}, ["a", "b"]))
    # only shared items are compared
    assert kendall_tau(["a", "x", "b"], ["a", "b", "y"]) == 1.0


def test_outcome_and_judgement_agreement():
    scores = {"a": 2.0, "b": 1.0, "c": 0.0}
    outs = [Outcome(a="a", b="b", winner="a"), Outcome(a="c", b="a", winner="a"),
            Outcome(a="b", b="c", winner="tie")]
    assert outcome_agreement(outs, scores) == 0.5  # the tie is not decisive
    teacher = [Outcome(a="a", b="b", winner="a"), Outcome(a="b", b="c", winner="a"),
               Outcome(a="a", b="c", winner="tie")]
    student = [Outcome(a="b", b="a", winner="b"),  # same verdict, other frame
               Outcome(a="b", b="c", winner="b"),
               Outcome(a="c", b="a", winner="tie")]
    agr = judgement_agreement(student, teacher)
    assert (agr.n, agr.decisive_n) == (3, 2)
    assert agr.value == pytest.approx(2 / 3) and agr.decisive_value == 0.5
