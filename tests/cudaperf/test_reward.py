"""The CudaPerf reward on real evaluations: correctness gates, speed and structure order, cheats never pay."""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.core.types import Measurement, Verdict
from veriforge.cuda.evaluate import evaluate
from veriforge.cuda.evaluate.harness import resolve_task
from veriforge.cuda.evaluate.result import EvalResult
from veriforge.cudaperf.reward import (
    PRESETS,
    RewardConfig,
    RewardError,
    compute_score,
    extract_code,
    outcome,
    reward,
    trl_reward,
)

TESTS = Path(__file__).parents[1]
CHEATS = TESTS / "cuda" / "evaluate" / "cheats" / "c2cuda"
VEC = TESTS / "cuda" / "tasks" / "data" / "c2cuda" / "vec_scale_add"


def test_config_refuses_shapes_that_pay_for_failure() -> None:
    with pytest.raises(RewardError, match="being wrong pays more"):
        RewardConfig(correct=0.1, speed=0.5)  # worst correct 0.1 - 0.5 - 0.05 < wrong -0.3
    with pytest.raises(RewardError, match="ordered"):
        RewardConfig(cheat=-0.2)  # a cheat would cost less than a compile failure
    with pytest.raises(RewardError, match="unknown reward shape"):
        RewardConfig(shape="mine")


@pytest.fixture(scope="module")
def sum_reduce():
    spec = resolve_task("c2cuda/sum_reduce")
    results = {impl.name: evaluate(spec, spec.folder / impl.file) for impl in spec.implementations}
    return spec, results


def test_bundled_strategies_are_ordered_and_every_correct_one_beats_every_failure(sum_reduce) -> None:
    spec, results = sum_reduce
    base = results[spec.implementations[0].name]
    rewards = {name: reward(r, base) for name, r in results.items()}
    by_quality = sorted(spec.implementations, key=lambda i: i.quality)
    values = [rewards[i.name].value for i in by_quality]
    assert values == sorted(values) and values[-1] > values[0]  # naive atomic < shared tree < warp shuffle
    assert all(r.correct and r.outcome == "correct" for r in rewards.values())
    assert rewards[by_quality[-1].name].speedup > 5  # per-element atomics serialise
    cfg = PRESETS["veriforge"]
    assert min(values) > max(cfg.wrong, cfg.timeout, cfg.crash, cfg.compile_error, cfg.cheat)


@pytest.mark.parametrize("path", sorted(CHEATS.glob("*.cu"))[:8], ids=lambda p: p.stem)
def test_cheats_never_earn_more_than_an_honest_wrong_answer(path: Path) -> None:
    memcheck = "// memcheck" in path.read_text()
    res = evaluate(VEC, path, configs=["small"], memcheck=memcheck)
    r = reward(res, 1e-5)
    assert not r.correct and r.value <= PRESETS["veriforge"].wrong, (path.name, r)


def test_unknown_time_is_the_worst_speed_not_a_neutral_one() -> None:
    verdict = Verdict.passed()
    known = EvalResult(verdict, [Measurement(name="time_s", value=2e-5, unit="s", provenance="estimated",
                                             backend="cost-model-v2:H100-SXM", details={"config": "a"})])
    hidden = EvalResult(verdict, [Measurement(name="time_s_lower_bound", value=1e-6, unit="s",
                                              provenance="estimated", backend="cost-model-v2:H100-SXM",
                                              details={"config": "a", "configs": ["a"]})])
    slow = reward(known, 1e-5)  # 2x slower than the baseline
    unknown = reward(hidden, 1e-5)
    assert unknown.terms["speed"] == -PRESETS["veriforge"].speed and unknown.value < slow.value
    assert "time unknown" in unknown.reason or "estimate" in unknown.reason


def test_a_baseline_with_unknown_time_credits_no_more_than_its_lower_bound() -> None:
    verdict = Verdict.passed()
    cand = EvalResult(verdict, [Measurement(name="time_s", value=2e-5, unit="s", provenance="estimated",
                                            backend="cost-model-v2:H100-SXM", details={"config": "a"})])
    est = {"config_names": ["a"], "configs": {"a": {"time_s": None, "lower_bound_s": 8e-5, "status": "unknown"}}}
    base = EvalResult(verdict, [Measurement(name="time_s_lower_bound", value=8e-5, unit="s", provenance="estimated",
                                            backend="cost-model-v2:H100-SXM", details={"config": "a"})],
                      details={"estimate": est})
    r = reward(cand, base)
    assert r.speedup == pytest.approx(4.0) and "lower bound" in r.reason  # at least 4x: the base takes >= 80 us
    assert r.value > reward(cand, 2e-5).value  # better than no speedup, ...
    assert r.value <= reward(cand, 8e-5).value + 1e-12  # ... never more than a baseline known at its bound


def _broken(spec_folder: Path) -> str:
    """A real implementation with one syntax error: it reaches the compiler."""
    impl = sorted((spec_folder / "impls").glob("*.cu"))[0].read_text()
    return impl.replace("{", "{ int broken = ;", 2).replace("{ int broken = ;", "{", 1)


def test_outcomes_and_compile_failure() -> None:
    res = evaluate(VEC, _broken(VEC), configs=["small"])
    assert outcome(res) == "compile_error" and reward(res, 1e-5).value == PRESETS["veriforge"].compile_error
    no_kernel = evaluate(VEC, "int main() { return 0; }\n", configs=["small"])  # the work is not in CUDA
    assert outcome(no_kernel) == "cheat" and reward(no_kernel, 1e-5).value == PRESETS["veriforge"].cheat


def test_published_shapes(sum_reduce) -> None:
    spec, results = sum_reduce
    base = results[spec.implementations[0].name]
    best = results[spec.implementations[-1].name]
    kevin = reward(best, base, config="kevin")
    assert kevin.value == pytest.approx(0.3 + kevin.speedup)
    gym = reward(best, base, config="kernelgym")
    assert gym.value == pytest.approx(0.3 + 0.4 + 0.3 * min(3.0, gym.speedup))


def test_trl_reward_func_and_verl_compute_score(sum_reduce, tmp_path) -> None:
    spec, _ = sum_reduce
    fast = (spec.folder / spec.implementations[-1].file).read_text()
    f = trl_reward(jobs=2)
    completions = [f"Here is my kernel:\n```cuda\n{fast}```\n", f"```cuda\n{_broken(spec.folder)}```"]
    values = f(["p1", "p2"], completions, task_id=["c2cuda/sum_reduce"] * 2)
    assert values[0] > 0.5 and values[1] == PRESETS["veriforge"].compile_error
    with pytest.raises(RewardError, match="task_id"):
        f(["p"], completions[:1])
    chat = [{"role": "assistant", "content": completions[0]}]
    assert extract_code(chat) == fast.strip() + "\n"
    out = compute_score("cudaperf", completions[0], "c2cuda/sum_reduce", {"preset": "veriforge"})
    assert out["score"] == pytest.approx(values[0]) and out["outcome"] == "correct" and out["speedup"] > 1


def test_rewards_in_a_process_pool_match_and_are_cached_by_content(sum_reduce, tmp_path) -> None:
    from veriforge.core.store import RunStore
    from veriforge.cudaperf.reward import make_executor

    spec, _ = sum_reduce
    fast = (spec.folder / spec.implementations[-1].file).read_text()
    completions = [f"```cuda\n{fast}```", f"```cuda\n{_broken(spec.folder)}```"]
    pool = make_executor("process", 2)
    try:
        store = RunStore(tmp_path / "runs.sqlite")
        f = trl_reward(executor=pool, store=store)
        values = f(["p1", "p2"], completions, task_id=["c2cuda/sum_reduce"] * 2)
        assert store.count_evaluations() >= 2  # the workers wrote the evaluations to the shared store
        # rewarded here from the same stored evaluations: the workers computed the same rewards
        local = trl_reward(store=store)(["p1", "p2"], completions, task_id=["c2cuda/sum_reduce"] * 2)
        assert values == pytest.approx(local) and values[0] > 0.5 > values[1]
    finally:
        pool.shutdown()
    # same content again: answered from the reward cache, without the (now closed) pool
    assert f(["p1"], completions[:1], task_id=["c2cuda/sum_reduce"]) == values[:1]
    with pytest.raises(RewardError, match="unknown reward executor"):
        make_executor("gpu-farm", 2)
