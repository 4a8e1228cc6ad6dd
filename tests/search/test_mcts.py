"""MCTS on synthetic problems: planted optimum, determinism, dedupe, widening, concurrency."""

from __future__ import annotations

import asyncio
import json

import pytest

from veriforge.search import (
    MCTS,
    Edit,
    Evaluation,
    FunctionProposer,
    HillClimb,
    MCTSConfig,
    RandomSearch,
    SearchConfig,
    SearchError,
    SearchTree,
)
from veriforge.search.interfaces import JsonCodec
from veriforge.search.synthetic import DeceptiveLattice, LatticeEvaluator, StepProposer

LATTICE = DeceptiveLattice(dims=3, size=10, start=(2, 2, 2), local=(1, 1, 2), best=(9, 9, 5),
                           local_floor=2.0, local_slope=0.3, global_floor=1.0, global_slope=0.1)


def _run(cls, seed, budget=150, **kw):
    ev = LatticeEvaluator(LATTICE)
    cfg = SearchConfig(max_evaluations=budget, seed=seed, final_top_k=0)
    return cls([StepProposer(LATTICE)], ev, cfg, **kw).run_sync(LATTICE.start), ev


def test_lattice_is_deceptive():
    # Greedy is trapped in the local basin: that is what makes the next test meaningful.
    result, _ = _run(HillClimb, 0)
    assert result.best.state == LATTICE.local
    assert result.stats.stop_reason == "converged"


def test_mcts_finds_planted_optimum_more_often_than_random():
    seeds = range(4)
    mcts_hits = sum(_run(MCTS, s)[0].best.state == LATTICE.best for s in seeds)
    puct_hits = sum(_run(MCTS, s, mcts=MCTSConfig(selection="puct"))[0].best.state == LATTICE.best
                    for s in seeds)
    random_hits = sum(_run(RandomSearch, s)[0].best.state == LATTICE.best for s in seeds)
    assert mcts_hits == 4 and puct_hits == 4
    assert random_hits == 0


def test_budget_counts_unique_evaluations_and_each_state_once():
    result, ev = _run(MCTS, 1, budget=60)
    assert result.stats.unique_evaluations == 60 == len(result.tree)
    assert ev.total_calls == 60 and max(ev.calls.values()) == 1
    assert result.stats.duplicates > 0  # neighbours of neighbours come back to seen points
    assert result.stats.stop_reason == "budget"


def test_same_seed_same_tree_other_seed_other_tree():
    a, _ = _run(MCTS, 3, budget=40)
    b, _ = _run(MCTS, 3, budget=40)
    assert a.tree.to_json() == b.tree.to_json()
    r1, _ = _run(RandomSearch, 1, budget=40)
    r2, _ = _run(RandomSearch, 2, budget=40)
    assert r1.tree.to_json() != r2.tree.to_json()


def _counter_proposer(width):
    """Children of integer n: n*10+1 .. n*10+width (never repeats, never runs out)."""
    return FunctionProposer("count",
                            lambda node, k: [Edit(node.state * 10 + i, f"+{i}") for i in range(1, width + 1)])


def _flat_eval(state):
    return Evaluation(ok=True, objective=1.0 + (state % 7) / 100)


def test_widening_zero_alpha_makes_a_chain_and_alpha_one_a_star():
    cfg = SearchConfig(max_evaluations=12, final_top_k=0)
    chain = MCTS([_counter_proposer(3)], _flat_eval, cfg, mcts=MCTSConfig(widening_alpha=0.0)).run_sync(1)
    assert all(len(n.children) <= 1 for n in chain.tree)
    assert max(n.depth for n in chain.tree) == 11
    star = MCTS([_counter_proposer(50)], _flat_eval, cfg, mcts=MCTSConfig(widening_alpha=1.0)).run_sync(1)
    assert len(star.tree.root.children) == 11


def test_widening_bound_holds_everywhere():
    res, _ = _run(MCTS, 0, budget=120)
    from veriforge.search.selection import max_children
    for node in res.tree:
        if node.children:
            assert len(node.children) <= max(max_children(node.visits), 1)
    assert len(res.tree.root.children) >= 2


def test_duplicate_edits_are_not_evaluated_again():
    calls = []

    def evaluate(state):
        calls.append(state)
        return Evaluation(ok=True, objective=10.0 - state)

    # Two proposers that propose overlapping states, plus a no-op edit back to the parent.
    a = FunctionProposer("a", lambda node, k: [Edit(node.state + 1), Edit(node.state)])
    b = FunctionProposer("b", lambda node, k: [Edit(node.state + 1), Edit(max(node.state - 1, 0))])
    res = MCTS([a, b], evaluate, SearchConfig(max_evaluations=6, final_top_k=0)).run_sync(0)
    assert sorted(calls) == sorted(set(calls))
    assert res.stats.duplicates > 0
    assert {n.edit["proposer"] for n in res.tree if n.edit} <= {"a", "b"}


async def test_batch_evaluates_leaves_in_parallel_with_virtual_loss():
    active = 0
    peak = 0

    async def evaluate(state):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return Evaluation(ok=True, objective=1.0 + (state % 5) / 50)

    cfg = SearchConfig(max_evaluations=21, batch_size=4, final_top_k=0)
    res = await MCTS([_counter_proposer(6)], evaluate, cfg).run(1)
    assert peak == 4
    assert res.stats.unique_evaluations == 21
    assert all(n.virtual == 0 for n in res.tree)  # virtual loss fully removed


async def test_time_budget_stops_the_search():
    async def slow(state):
        await asyncio.sleep(0.02)
        return Evaluation(ok=True, objective=1.0)

    res = await MCTS([_counter_proposer(4)], slow, SearchConfig(max_evaluations=None, max_seconds=0.15,
                                                                 final_top_k=0)).run(1)
    assert res.stats.stop_reason == "time"
    assert 3 <= res.stats.unique_evaluations <= 12


def test_exhausted_space_stops_early():
    prop = FunctionProposer("few", lambda node, k: [Edit(s) for s in (1, 2, 3) if s > node.state])
    res = MCTS([prop], lambda s: Evaluation(ok=True, objective=4.0 - s),
               SearchConfig(max_evaluations=50)).run_sync(0)
    assert res.stats.stop_reason == "exhausted"
    assert res.stats.unique_evaluations == 4 and res.best.state == 3


def test_puct_follows_priors():
    order = []

    def prop(node, k):
        if node.depth > 0:
            return []
        return [Edit(1, prior=0.05), Edit(2, prior=0.9), Edit(3, prior=0.05)]

    def evaluate(s):
        order.append(s)
        return Evaluation(ok=True, objective=1.0)

    MCTS([FunctionProposer("p", prop)], evaluate, SearchConfig(max_evaluations=2, final_top_k=0),
         mcts=MCTSConfig(selection="puct")).run_sync(0)
    assert order == [0, 2]


def test_rejected_initial_state_is_an_error():
    with pytest.raises(SearchError, match="rejected by the evaluator: nope"):
        MCTS([_counter_proposer(2)], lambda s: Evaluation.failed("nope"), SearchConfig()).run_sync(1)


def test_tree_json_round_trip():
    res, _ = _run(MCTS, 2, budget=30)
    data = json.loads(json.dumps(res.tree_json()))
    assert data["best"] == res.best.id and data["algorithm"] == "mcts"
    node = data["nodes"][5]
    assert {"id", "parent", "edit", "key", "evaluation", "visits", "value", "status", "children"} <= set(node)
    assert node["edit"]["proposer"] == "step" and node["edit"]["description"].startswith("param")
    back = SearchTree.from_json(data, JsonCodec(load=tuple))
    assert back.to_json() == res.tree.to_json()
    assert back.nodes[5].state == res.tree.nodes[5].state
    assert back.root.visits == 30
