"""A search killed midway resumes from the run store without evaluating anything twice."""

from __future__ import annotations

import pytest

from veriforge.core.store import RunStore
from veriforge.search import MCTS, BeamSearch, HillClimb, ResumeError, SearchConfig, load_tree
from veriforge.search.interfaces import JsonCodec
from veriforge.search.synthetic import DeceptiveLattice, LatticeEvaluator, StepProposer

LATTICE = DeceptiveLattice(dims=3, size=10, start=(2, 2, 2), local=(1, 1, 2), best=(9, 9, 5),
                           local_floor=2.0, local_slope=0.3, global_floor=1.0, global_slope=0.1)
CFG = SearchConfig(max_evaluations=40, seed=5, final_top_k=3, final_repeats=1)


@pytest.fixture
def store(tmp_path):
    s = RunStore(tmp_path / "runs.sqlite")
    yield s
    s.close()


@pytest.mark.parametrize("cls", [MCTS, HillClimb, BeamSearch])
def test_killed_search_resumes_and_matches_uninterrupted_run(tmp_path, store, cls):
    reference = cls([StepProposer(LATTICE)], LatticeEvaluator(LATTICE), CFG).run_sync(LATTICE.start)

    crashing = LatticeEvaluator(LATTICE, fail_after=17)
    with pytest.raises(RuntimeError, match="simulated crash"):
        cls([StepProposer(LATTICE)], crashing, CFG, store=store, run_id="r1").run_sync(LATTICE.start)
    assert store.get_run("r1").status == "failed"
    stored = len(store.records("search.node", run_id="r1"))
    assert 1 <= stored <= 17

    resumed_eval = LatticeEvaluator(LATTICE)
    result = cls([StepProposer(LATTICE)], resumed_eval, CFG, store=store, run_id="r1").run_sync(LATTICE.start)
    # Nothing evaluated twice across the crash: every point once, except the final re-measures.
    total = crashing.calls + resumed_eval.calls
    assert set(total) == {n.state for n in result.tree}
    remeasured = {n.state for n in result.tree if len(n.samples) == 2}
    assert all(total[p] == (2 if p in remeasured else 1) for p in total)
    assert result.stats.unique_evaluations == len(reference.tree)
    assert result.stats.resumes == 1
    assert result.tree.to_json() == reference.tree.to_json()
    assert result.best.state == reference.best.state
    assert store.get_run("r1").status == "done"
    assert load_tree(store, "r1", JsonCodec(load=tuple)).to_json() == result.tree.to_json()


def test_resume_can_extend_the_budget(store):
    ev1 = LatticeEvaluator(LATTICE)
    small = SearchConfig(max_evaluations=10, seed=1, final_top_k=0)
    crash = LatticeEvaluator(LATTICE, fail_after=8)
    with pytest.raises(RuntimeError):
        MCTS([StepProposer(LATTICE)], crash, small, store=store, run_id="x").run_sync(LATTICE.start)
    bigger = SearchConfig(max_evaluations=25, seed=1, final_top_k=0)
    res = MCTS([StepProposer(LATTICE)], ev1, bigger, store=store, run_id="x").run_sync(LATTICE.start)
    assert res.stats.unique_evaluations == 25
    assert ev1.total_calls == 25 - 8


def test_resume_refuses_other_settings_or_start(store):
    crash = LatticeEvaluator(LATTICE, fail_after=3)
    with pytest.raises(RuntimeError):
        MCTS([StepProposer(LATTICE)], crash, CFG, store=store, run_id="y").run_sync(LATTICE.start)
    other = SearchConfig(max_evaluations=40, seed=6)
    with pytest.raises(ResumeError, match="seed"):
        MCTS([StepProposer(LATTICE)], LatticeEvaluator(LATTICE), other, store=store, run_id="y").run_sync(
            LATTICE.start)
    with pytest.raises(ResumeError, match="root"):
        MCTS([StepProposer(LATTICE)], LatticeEvaluator(LATTICE), CFG, store=store,
             run_id="y").run_sync((3, 3, 3))


def test_store_shares_evaluations_between_runs(store):
    ev = LatticeEvaluator(LATTICE)
    cfg = SearchConfig(max_evaluations=20, seed=0, final_top_k=0)
    MCTS([StepProposer(LATTICE)], ev, cfg, store=store).run_sync(LATTICE.start)
    again = LatticeEvaluator(LATTICE)
    res = MCTS([StepProposer(LATTICE)], again, cfg, store=store).run_sync(LATTICE.start)
    assert again.total_calls == 0 and res.stats.cache_hits == 20 and res.stats.unique_evaluations == 20


class _FinalCheck:
    """Rejects the first two would-be winners, then crashes once (a killed run), then accepts."""

    def __init__(self, crash_on: int | None = None):
        self.seen: list = []
        self.crash_on = crash_on

    def __call__(self, state):
        from veriforge.search import Evaluation

        self.seen.append(state)
        if self.crash_on is not None and len(self.seen) == self.crash_on:
            raise RuntimeError("simulated crash in the final check")
        if len(self.seen) <= 2 and self.crash_on != -1:
            return Evaluation.failed(f"wrong at a held-out size ({state})")
        return Evaluation(ok=True)


def test_final_check_results_survive_a_resume(store):
    first = _FinalCheck(crash_on=3)
    cfg = SearchConfig(max_evaluations=12, seed=2, final_top_k=0, final_check=first)
    with pytest.raises(RuntimeError, match="simulated crash in the final check"):
        MCTS([StepProposer(LATTICE)], LatticeEvaluator(LATTICE), cfg, store=store, run_id="fc").run_sync(LATTICE.start)
    assert len(first.seen) == 3
    again = _FinalCheck(crash_on=-1)   # accepts everything it is asked about
    cfg2 = SearchConfig(max_evaluations=12, seed=2, final_top_k=0, final_check=again)
    res = MCTS([StepProposer(LATTICE)], LatticeEvaluator(LATTICE), cfg2, store=store, run_id="fc").run_sync(
        LATTICE.start)
    rejected = {n.state for n in res.tree if (n.reason or "").startswith("failed the final check")}
    assert rejected == set(first.seen[:2])          # the two rejections were kept, not re-asked
    assert again.seen == [first.seen[2]]            # only the check that crashed runs again
    assert res.best.state == first.seen[2]
