"""Baselines share the engine's interfaces and budget accounting."""

from __future__ import annotations

from veriforge.search import BeamSearch, HillClimb, RandomSearch, SearchConfig
from veriforge.search.synthetic import DeceptiveLattice, LatticeEvaluator, StepProposer

SMOOTH = DeceptiveLattice(dims=2, size=8, start=(0, 0), local=(7, 0), best=(7, 7), local_floor=3.0,
                          local_slope=0.05, global_floor=1.0, global_slope=0.1)


def test_hill_climb_reaches_the_optimum_of_a_smooth_landscape_and_stops():
    ev = LatticeEvaluator(SMOOTH)
    cfg = SearchConfig(max_evaluations=500, final_top_k=0)
    res = HillClimb([StepProposer(SMOOTH)], ev, cfg).run_sync((0, 0))
    assert res.best.state == (7, 7)
    assert res.stats.stop_reason == "converged" and res.stats.unique_evaluations < 500
    assert max(ev.calls.values()) == 1
    # The path from the initial state to the winner only ever improves.
    objectives = [n.objective for n in res.best.path()]
    assert objectives == sorted(objectives, reverse=True)


def test_beam_and_random_respect_the_budget():
    for cls in (BeamSearch, RandomSearch):
        ev = LatticeEvaluator(SMOOTH)
        cfg = SearchConfig(max_evaluations=30, final_top_k=0)
        res = cls([StepProposer(SMOOTH)], ev, cfg).run_sync((0, 0))
        assert res.stats.unique_evaluations == 30 == ev.total_calls
        assert res.algorithm == cls.algorithm


def test_beam_keeps_width_states_per_generation():
    cfg = SearchConfig(max_evaluations=40, final_top_k=0)
    res = BeamSearch([StepProposer(SMOOTH)], LatticeEvaluator(SMOOTH), cfg, width=2).run_sync((0, 0))
    expanded_by_depth: dict[int, set[int]] = {}
    for n in res.tree:
        if n.children:
            expanded_by_depth.setdefault(n.depth, set()).add(n.id)
    assert all(len(ids) <= 2 for ids in expanded_by_depth.values())
    assert res.best.objective < SMOOTH.objective((0, 0))
