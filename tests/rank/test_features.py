"""Pair construction from run times and the feature-based pairwise rankers on synthetic programs."""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.rank.errors import InsufficientDataError, MixedProvenanceError, MixedSourcesError, RankError
from veriforge.rank.features import (
    LogisticPairwiseRanker,
    RankNetRanker,
    TimedItem,
    make_pairs,
    pair_arrays,
    pairs_to_outcomes,
    split_pairs_by_task,
)
from veriforge.rank.outcomes import Outcome
from veriforge.rank.ratings import bradley_terry


def item(id, task, t, config=None, provenance="measured", features=(0.0,)):
    return TimedItem(id=id, task=task, time_s=t, features=features, config=config, provenance=provenance)


def test_pairs_need_the_speedup_margin():
    items = [item("fast", "t", 1.0), item("close", "t", 1.05), item("slow", "t", 1.2)]
    pairs = make_pairs(items)
    assert [(p.strong.id, p.weak.id) for p in pairs] == [("fast", "slow"), ("close", "slow")]
    assert pairs[0].speedup == pytest.approx(1.2)
    assert [(p.strong.id, p.weak.id) for p in make_pairs(items, min_speedup=1.15)] == [("fast", "slow")]
    with pytest.raises(RankError):
        make_pairs(items, min_speedup=0.9)


def test_pairs_stay_within_task_and_configuration():
    items = [
        item("a-small", "A", 1.0, "small"), item("b-small", "A", 2.0, "small"),
        item("a-large", "A", 10.0, "large"), item("b-large", "A", 5.0, "large"),
        item("c", "B", 100.0, "small"),
    ]
    pairs = make_pairs(items)
    assert {(p.strong.id, p.weak.id, p.config) for p in pairs} == {
        ("a-small", "b-small", "small"), ("b-large", "a-large", "large")}
    pooled = make_pairs(items, by_config=False)
    assert ("a-small", "a-large") in {(p.strong.id, p.weak.id) for p in pooled}
    assert all(p.task == "A" for p in pooled)  # task B's program is never paired with task A's


def test_provenances_and_bad_times_are_refused():
    with pytest.raises(MixedProvenanceError):
        make_pairs([item("x", "t", 1.0), item("y", "t", 2.0, provenance="estimated")])
    make_pairs([item("x", "t", 1.0), item("y", "u", 2.0, provenance="estimated")])  # different tasks: fine
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(RankError):
            make_pairs([item("x", "t", bad)])


def synthetic_programs(n_tasks=40, per_task=6, dim=8, seed=0, nonlinear=False):
    """Programs whose log run time is a hidden function of their features, plus timing noise."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=dim)
    items = []
    for t in range(n_tasks):
        base = rng.normal(0, 2)  # tasks differ in absolute time: only within-task order is learnable
        for config, scale in (("small", 0.0), ("large", 3.0)):
            for k in range(per_task):
                x = rng.normal(size=dim)
                speed = (x[0] ** 2 - x[1]) if nonlinear else x @ w
                log_t = base + scale - 0.5 * speed + rng.normal(0, 0.1)
                ident = f"t{t}-{config}-{k}"
                items.append(TimedItem(ident, f"task{t}", float(np.exp(log_t)), x.tolist(), config))
    return items


def test_logistic_ranker_reaches_high_heldout_accuracy_on_a_linear_truth():
    pairs = make_pairs(synthetic_programs())
    train, test = split_pairs_by_task(pairs, test_fraction=0.25, seed=0)
    assert {p.task for p in train}.isdisjoint({p.task for p in test})
    xs, xw, _ = pair_arrays(train)
    model = LogisticPairwiseRanker().fit(xs, xw)
    ts, tw, _ = pair_arrays(test)
    acc = model.pairwise_accuracy(ts, tw)
    assert acc >= 0.85
    assert model.pairwise_accuracy(tw, ts) == pytest.approx(1 - acc)  # swapping the pair flips it
    p = model.predict_proba(ts[0], tw[0])
    assert p + model.predict_proba(tw[0], ts[0]) == pytest.approx(1.0)
    assert model.rank(np.vstack([tw[0], ts[0]]))[0] == (1 if p > 0.5 else 0)
    # margin weighting is accepted and still learns the order
    xs, xw, wts = pair_arrays(train, margin_weighting="log")
    assert wts.mean() == pytest.approx(1.0) and wts.std() > 0
    weighted = LogisticPairwiseRanker().fit(xs, xw, weights=wts)
    assert weighted.pairwise_accuracy(ts, tw) >= 0.85


def test_untrained_or_unlearnable_models_are_near_chance():
    # labels unrelated to features: held-out accuracy must stay near 0.5 (the metric can fail)
    rng = np.random.default_rng(5)
    xa, xb = rng.normal(size=(400, 5)), rng.normal(size=(400, 5))
    model = LogisticPairwiseRanker().fit(xa[:300], xb[:300])
    assert 0.35 < model.pairwise_accuracy(xa[300:], xb[300:]) < 0.65


def test_ranknet_learns_an_interaction_a_linear_score_cannot():
    pairs = make_pairs(synthetic_programs(dim=3, nonlinear=True, seed=2))
    train, test = split_pairs_by_task(pairs, test_fraction=0.25, seed=1)
    xs, xw, _ = pair_arrays(train)
    ts, tw, _ = pair_arrays(test)
    linear = LogisticPairwiseRanker().fit(xs, xw).pairwise_accuracy(ts, tw)
    net = RankNetRanker(seed=0).fit(xs, xw)
    assert net.loss_curve_[-1] < net.loss_curve_[0] / 5
    deep = net.pairwise_accuracy(ts, tw)
    assert deep >= 0.9 and deep > linear + 0.05
    again = RankNetRanker(seed=0).fit(xs, xw).pairwise_accuracy(ts, tw)
    assert again == deep  # seeded: reproducible


def test_labels_can_say_the_second_item_is_better():
    rng = np.random.default_rng(3)
    xa, xb = rng.normal(size=(200, 4)), rng.normal(size=(200, 4))
    w = np.array([1.0, -2.0, 0.5, 0.0])
    y = ((xa - xb) @ w > 0).astype(float)
    model = LogisticPairwiseRanker().fit(xa[:150], xb[:150], y[:150])
    assert model.pairwise_accuracy(xa[150:], xb[150:], y[150:]) >= 0.9
    assert np.corrcoef(model.coef_ / model.scale_, w)[0, 1] > 0.95


def test_errors_for_missing_data_and_unfitted_models():
    with pytest.raises(InsufficientDataError):
        pair_arrays([])
    with pytest.raises(InsufficientDataError):
        LogisticPairwiseRanker().fit(np.zeros((0, 2)), np.zeros((0, 2)))
    with pytest.raises(RankError):
        LogisticPairwiseRanker().score([1.0, 2.0])
    with pytest.raises(InsufficientDataError):
        split_pairs_by_task(make_pairs([item("x", "t", 1.0), item("y", "t", 2.0)]))


def test_timing_pairs_become_verifier_outcomes():
    pairs = make_pairs([item("x", "t", 1.0), item("y", "t", 2.0), item("z", "t", 4.0)])
    outcomes = pairs_to_outcomes(pairs)
    assert all(o.source == "verifier" and o.winner == "a" for o in outcomes)
    assert bradley_terry(outcomes).ranking() == ["x", "y", "z"]
    with pytest.raises(MixedSourcesError):
        bradley_terry([*outcomes, Outcome(a="z", b="x", winner="a")])
