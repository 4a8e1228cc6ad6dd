"""Noisy evaluations: averaging, final re-measure, ties within tolerance."""

from __future__ import annotations

from collections import Counter

import pytest

from veriforge.search import MCTS, Edit, Evaluation, FunctionProposer, SearchConfig
from veriforge.search.synthetic import DeceptiveLattice, LatticeEvaluator, StepProposer


def _star(states):
    return FunctionProposer("star", lambda node, k: [Edit(s) for s in states] if node.depth == 0 else [])


class Scripted:
    """Each state returns its scripted measurements in turn (the last one repeats)."""

    def __init__(self, script):
        self.script = script
        self.calls = Counter()

    def evaluate(self, state):
        seq = self.script[state]
        value = seq[min(self.calls[state], len(seq) - 1)]
        self.calls[state] += 1
        return Evaluation(ok=True, objective=value)


def test_node_value_is_the_mean_of_repeats():
    ev = Scripted({"r": [1.0, 1.2, 1.1], "a": [0.5, 0.7, 0.6]})
    res = MCTS([_star(["a"])], ev, SearchConfig(max_evaluations=2, repeats=3, final_top_k=0)).run_sync("r")
    a = next(n for n in res.tree if n.state == "a")
    assert len(a.samples) == 3 and a.objective == pytest.approx(0.6)
    assert a.evaluation.details["samples"] == 3 and a.evaluation.details["objective_spread"] > 0


def test_final_remeasure_unmasks_a_lucky_measurement():
    script = {"r": [1.0], "lucky": [0.5, 1.0, 1.0, 1.0], "good": [0.8]}
    no_check = SearchConfig(max_evaluations=3, final_top_k=0)
    res = MCTS([_star(["lucky", "good"])], Scripted(script), no_check).run_sync("r")
    assert res.best.state == "lucky"
    ev = Scripted(script)
    cfg = SearchConfig(max_evaluations=3, final_top_k=2, final_repeats=3)
    res = MCTS([_star(["lucky", "good"])], ev, cfg).run_sync("r")
    assert res.best.state == "good"
    assert ev.calls["lucky"] == 4 and ev.calls["good"] == 4 and ev.calls["r"] == 1
    assert res.stats.remeasured == 2


def test_small_gaps_are_ties_won_by_fewer_edits():
    script = {"r": [1.0], "a": [0.99], "b": [0.7]}
    prop = FunctionProposer("p", lambda node, k: {"r": [Edit("a")], "a": [Edit("b")]}.get(node.state, []))
    tied = MCTS([prop], Scripted(script), SearchConfig(max_evaluations=2, final_top_k=0, tie_tolerance=0.02))
    assert tied.run_sync("r").best.state == "r"
    strict = MCTS([prop], Scripted(script), SearchConfig(max_evaluations=2, final_top_k=0, tie_tolerance=0.0))
    assert strict.run_sync("r").best.state == "a"


def test_noisy_lattice_still_converges_with_averaging():
    lat = DeceptiveLattice(dims=3, size=10, start=(4, 4, 4), local=(2, 2, 2), best=(9, 9, 9),
                           local_floor=2.0, local_slope=0.3, global_floor=1.0, global_slope=0.1)
    hits = 0
    for seed in range(3):
        ev = LatticeEvaluator(lat, noise=0.03, seed=seed)
        cfg = SearchConfig(max_evaluations=120, seed=seed, repeats=2, final_top_k=3, final_repeats=2)
        res = MCTS([StepProposer(lat)], ev, cfg).run_sync(lat.start)
        hits += lat.objective(res.best.state) <= lat.optimum * 1.1
    assert hits == 3
