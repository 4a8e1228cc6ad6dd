"""Schedulers and the concurrent tournament runner, against comparisons with a known truth."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from veriforge.errors import LLMError
from veriforge.rank.errors import ScheduleError
from veriforge.rank.outcomes import Outcome
from veriforge.rank.ratings import bradley_terry, kendall_tau
from veriforge.rank.tournament import AllPairs, SwissRounds, TopKRefresh, run_tournament


def strength_compare(strength, calls=None):
    """A noiseless judge: the stronger item always wins."""

    async def compare(a, b):
        if calls is not None:
            calls.append((a, b))
        await asyncio.sleep(0)
        return Outcome(a=a, b=b, winner="a" if strength[a] > strength[b] else "b")

    return compare


ITEMS16 = [f"p{k:02d}" for k in range(16)]
STRENGTH16 = {x: (k * 7) % 16 for k, x in enumerate(ITEMS16)}  # a scrambled order
BEST16 = max(STRENGTH16, key=STRENGTH16.get)


async def test_all_pairs_compares_every_pair_once_and_orders_correctly():
    items = ITEMS16[:8]
    result = await run_tournament(items, strength_compare(STRENGTH16), AllPairs())
    assert result.comparisons == 28 and len(result.rounds) == 1
    assert len({frozenset(p) for p in result.rounds[0]}) == 28
    assert kendall_tau(result.ratings.scores, {x: STRENGTH16[x] for x in items}) == 1.0


async def test_swiss_finds_the_top_with_far_fewer_comparisons():
    result = await run_tournament(ITEMS16, strength_compare(STRENGTH16), SwissRounds(seed=1))
    all_pairs = 16 * 15 // 2
    assert len(result.rounds) == 5  # ceil(log2 16) + 1
    assert result.comparisons <= 5 * 8 < all_pairs / 2
    assert result.ranking()[0] == BEST16
    pairs = [frozenset(p) for r in result.rounds for p in r]
    assert len(pairs) == len(set(pairs))  # never a repeated pairing
    for rnd in result.rounds:
        assert len({x for p in rnd for x in p}) == 2 * len(rnd)  # each item at most once per round
    # later rounds pair items of similar standing: the top two of the final table have met
    top2 = frozenset(result.ranking()[:2])
    assert top2 in pairs
    # and the ranking is far better than chance
    assert kendall_tau(result.ratings.scores, STRENGTH16) > 0.6


async def test_swiss_is_deterministic():
    r1 = await run_tournament(ITEMS16, strength_compare(STRENGTH16), SwissRounds(seed=4))
    r2 = await run_tournament(ITEMS16, strength_compare(STRENGTH16), SwissRounds(seed=4))
    assert r1.rounds == r2.rounds and r1.ratings == r2.ratings


async def test_topk_refresh_only_compares_newcomers_with_the_top_and_each_other():
    strength = {"o1": 1, "o2": 2, "o3": 3, "o4": 4, "o5": 5, "o6": 6, "n1": 10, "n2": 0, "n3": 3.5}
    old = [f"o{k}" for k in range(1, 7)]
    prior = [Outcome(a=a, b=b, winner="a" if strength[a] > strength[b] else "b")
             for a, b in itertools.combinations(old, 2)]
    calls = []
    result = await run_tournament(list(strength), strength_compare(strength, calls),
                                  TopKRefresh(["n1", "n2", "n3"], k=3), prior=prior)
    judged = {frozenset(p) for p in calls}
    expected = {frozenset((n, t)) for n in ("n1", "n2", "n3") for t in ("o6", "o5", "o4")}
    expected |= {frozenset(p) for p in itertools.combinations(("n1", "n2", "n3"), 2)}
    assert judged == expected and result.comparisons == 12
    assert result.ranking()[0] == "n1"
    assert len(result.all_outcomes) == len(prior) + 12
    with pytest.raises(ScheduleError):
        await run_tournament(old, strength_compare(strength), TopKRefresh(["zz"]))


async def test_budget_caps_comparisons():
    result = await run_tournament(ITEMS16, strength_compare(STRENGTH16), AllPairs(), budget=5)
    assert result.comparisons == 5
    swiss = await run_tournament(ITEMS16, strength_compare(STRENGTH16), SwissRounds(), budget=12)
    assert swiss.comparisons == 12 and [len(r) for r in swiss.rounds] == [8, 4]


async def test_comparisons_run_concurrently_within_the_limit():
    in_flight = 0
    peak = 0

    async def slow_compare(a, b):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return Outcome(a=a, b=b, winner="a" if STRENGTH16[a] > STRENGTH16[b] else "b")

    result = await run_tournament(ITEMS16[:8], slow_compare, AllPairs(), concurrency=3)
    assert peak == 3
    # outcomes keep the scheduled order whatever order the calls finished in
    assert [(o.a, o.b) for o in result.outcomes] == result.rounds[0]


async def test_failed_comparisons_are_recorded_not_fatal():
    async def flaky(a, b):
        if "p03" in (a, b):
            raise LLMError("server keeps failing")
        return Outcome(a=a, b=b, winner="a" if STRENGTH16[a] > STRENGTH16[b] else "b")

    items = ITEMS16[:5]
    result = await run_tournament(items, flaky, AllPairs())
    assert result.failures == 4
    failed = [o for o in result.outcomes if o.failed]
    assert all(o.winner == "tie" and "server keeps failing" in o.reason for o in failed)
    assert result.ratings.games["p03"] == 0  # failures are not evidence
    with pytest.raises(LLMError):
        await run_tournament(items, flaky, AllPairs(), on_error="raise")

    async def buggy(a, b):
        raise KeyError(a)  # a bug, not a model failure: must surface

    with pytest.raises(KeyError):
        await run_tournament(items, buggy, AllPairs())


async def test_outcomes_for_the_wrong_pair_are_rejected_and_flipped_ones_fixed():
    async def flipped(a, b):
        return Outcome(a=b, b=a, winner="a")  # says b won, in its own frame

    result = await run_tournament(["x", "y"], flipped, AllPairs(seed=None))
    assert (result.outcomes[0].a, result.outcomes[0].winner) == ("x", "b")

    async def wrong(a, b):
        return Outcome(a="x", b="z", winner="a")

    with pytest.raises(ScheduleError):
        await run_tournament(["x", "y", "z"], wrong, AllPairs(seed=None))


async def test_elo_method_and_prior_outcomes():
    prior = [Outcome(a="p00", b="p01", winner="a")] * 3  # prior says p00 > p01 (against the truth)
    items = ITEMS16[:4]
    result = await run_tournament(items, strength_compare(STRENGTH16), AllPairs(), prior=prior,
                                  method="elo", rating_options={"k": 16})
    assert result.ratings.method == "elo" and result.ratings.params["k"] == 16
    assert result.comparisons == 5  # the pair already compared is skipped
    fitted = bradley_terry(result.all_outcomes)
    assert fitted.games["p00"] == 3 + 2
