"""CudaPerf's rankers: feature rankers learn and round-trip, the LM ranker takes real RewardTrainer
steps, the filter keeps the best, and reward shaping never breaks the reward's invariants."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from veriforge.cudaperf.pairs import TimedProgram, kfold_by_task, pairs_from_programs
from veriforge.cudaperf.ranker import (
    FeatureRanker,
    RankerError,
    check_shaping_weight,
    filter_candidates,
    load_ranker,
    pairwise_accuracy,
    ranker_shaping,
    shape_reward,
)
from veriforge.cudaperf.reward import PRESETS, Reward, RewardConfig


def _kernel(shuffles: int, atomics: int, pad: int) -> str:
    body = "".join(f"  v += __shfl_down_sync(0xffffffff, v, {1 << k});\n" for k in range(shuffles))
    body += "".join("  atomicAdd(out, v);\n" for _ in range(atomics))
    body += "".join(f"  int unused{k} = {k};\n" for k in range(pad))
    return f"__global__ void k(float* out, const float* x) {{\n  float v = x[threadIdx.x];\n{body}}}\n"


def _synthetic(n_tasks: int = 24, seed: int = 0) -> list:
    """Programs whose time falls with warp shuffles and rises with atomics (the truth a ranker must find);
    ``pad`` lines are noise."""
    rng = random.Random(seed)
    progs = []
    for t in range(n_tasks):
        for j in range(5):
            sh, at, pad = rng.randint(0, 5), rng.randint(0, 4), rng.randint(0, 6)
            time_s = 1e-5 * math.exp(-0.5 * sh + 0.6 * at)
            progs.append(TimedProgram(task=f"t{t}", name=f"p{j}", source=_kernel(sh, at, pad), times={"c": time_s}))
    return pairs_from_programs(progs)


@pytest.mark.parametrize("kind", ["logistic", "ranknet"])
def test_feature_ranker_learns_held_out_tasks_and_round_trips(kind: str, tmp_path: Path) -> None:
    pairs = _synthetic()
    train, test = kfold_by_task(pairs, k=4)[0]
    ranker = FeatureRanker(kind, features="text").fit(train)
    acc = pairwise_accuracy(ranker.pair_scores(test))
    assert acc >= 0.9, acc
    chance = pairwise_accuracy(FeatureRanker(kind, features="text").fit(
        [type(p)(**{**p.__dict__, "faster": p.slower, "slower": p.faster}) for p in train]).pair_scores(test))
    assert chance <= 0.1  # trained on flipped labels it ranks backwards: the labels are what it learns
    path = ranker.save(tmp_path / "r.json")
    back = load_ranker(path)
    srcs = [p.faster.source for p in test[:5]] + [p.slower.source for p in test[:5]]
    assert back.score(srcs) == pytest.approx(ranker.score(srcs))
    best = filter_candidates(srcs, back, keep=2)
    assert len(best) == 2 and back.score(best) == sorted(back.score(srcs), reverse=True)[:2]


def test_ranker_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(RankerError, match="kind"):
        FeatureRanker("xgboost")
    ranker = FeatureRanker("logistic").fit(_synthetic(6))
    with pytest.raises(RankerError, match="pass the task"):
        ranker.score(["__global__ void k() {}"])
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    with pytest.raises(RankerError, match="not a feature ranker"):
        load_ranker(bad)
    with pytest.raises(RankerError, match="no ranker"):
        load_ranker(tmp_path / "missing.json")
    with pytest.raises(RankerError, match="keep"):
        filter_candidates(["a"], ranker, keep=0)


def test_feature_ranker_scores_real_sources_with_the_task_analysis() -> None:
    from veriforge.cuda.evaluate.harness import resolve_task

    spec = resolve_task("c2cuda/sum_reduce")
    srcs = {i.name: (spec.folder / i.file).read_text() for i in spec.implementations}
    # times from the bundled quality labels (no harness run needed for this check)
    progs = [TimedProgram(task="c2cuda/sum_reduce", name=i.name, source=srcs[i.name],
                          times={"large": 4.0 ** -i.quality}) for i in spec.implementations]
    pairs = pairs_from_programs(progs)
    assert all(p.faster.features["analysis.analysis_available"] == 1.0 for p in pairs)
    ranker = FeatureRanker("logistic").fit(pairs)
    scores = dict(zip(srcs, ranker.score(list(srcs.values()), task=spec, config="large"), strict=True))
    assert scores["warp_shuffle"] > scores["shared_tree"] > scores["atomic"]


# ------------------------------------------------------------------------------------- shaping


class _Const:
    """A ranker that scores by a lookup (for adversarial shaping tests)."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table

    def score(self, sources, *, task=None, config=None):
        return [self.table.get(s, 0.0) for s in sources]


def _correct(value: float, speedup: float | None, speed: float) -> Reward:
    return Reward(value, "correct", True, speedup, "estimated", {"correct": 0.5, "speed": speed})


def test_shaping_is_bounded_and_only_for_correct_candidates() -> None:
    cfg = PRESETS["veriforge"]
    best_failure = max(cfg.wrong, cfg.timeout, cfg.crash, cfg.compile_error, cfg.cheat)
    worst = _correct(cfg.correct - cfg.speed - cfg.slower, 0.01, -cfg.speed)
    for diff in (-1e9, -5.0, 0.0, 5.0, 1e9, math.inf):
        shaped = shape_reward(worst, diff, 0.0, weight=cfg.structure)
        assert shaped.value > best_failure  # every correct candidate still beats every failure
        assert abs(shaped.terms.get("ranker", 0.0)) < cfg.structure / 2
    up = shape_reward(worst, 3.0, 0.0)  # default weight: the structure weight
    assert up.terms["ranker"] == pytest.approx(cfg.structure * (1 / (1 + math.exp(-3.0)) - 0.5))
    assert up.value == pytest.approx(worst.value + up.terms["ranker"])
    for kind, value in (("wrong", cfg.wrong), ("cheat", cfg.cheat), ("compile_error", cfg.compile_error)):
        failure = Reward(value, kind, False, terms={"failure": value})
        assert shape_reward(failure, 1e9, -1e9) == failure  # failures are never lifted
    # unknown speed is the worst speed: no bonus for making the estimate unknown
    unknown = _correct(0.1, None, -cfg.speed)
    assert shape_reward(unknown, 10.0, 0.0).value == unknown.value
    assert shape_reward(unknown, -10.0, 0.0).value < unknown.value
    # a candidate 1.15x faster by the reward's own time wins whatever the ranker says
    term = cfg.speed * math.log(1.15) / math.log(cfg.max_speedup)
    slow, fast = _correct(0.5, 1.0, 0.0), _correct(0.5 + term, 1.15, term)
    assert shape_reward(fast, -1e9, 0.0).value > shape_reward(slow, 1e9, 0.0).value


def test_shaping_weights_that_break_invariants_are_refused() -> None:
    check_shaping_weight(PRESETS["veriforge"].structure)
    with pytest.raises(RankerError, match="structure weight"):
        check_shaping_weight(2 * PRESETS["veriforge"].structure)  # a prediction would outweigh the structure terms
    with pytest.raises(RankerError, match="best failure"):
        check_shaping_weight(0.3, RewardConfig(correct=0.5, speed=0.4, slower=0.05, structure=0.5, wrong=-0.05,
                                               timeout=-0.1, crash=-0.1, compile_error=-0.2, cheat=-1.0))
    with pytest.raises(RankerError, match="finite"):
        check_shaping_weight(-0.01)
    check_shaping_weight(0.5, "kevin")
    with pytest.raises(RankerError):
        check_shaping_weight(0.7, "kevin")


def test_shaping_on_real_evaluations_keeps_order_and_cheats_stay_down() -> None:
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.evaluate.harness import resolve_task
    from veriforge.cudaperf.reward import reward

    spec = resolve_task("c2cuda/sum_reduce")
    src = {i.name: (spec.folder / i.file).read_text() for i in spec.implementations}
    res = {n: evaluate(spec, spec.folder / i.file, configs=["small", "odd"]) for n, i in
           ((i.name, i) for i in spec.implementations)}
    cheat_src = ("__global__ void k(float* out) { out[0] = 0; }\n"
                 "void solve(const float* x, float* out, int n) { float s = 0; for (int i = 0; i < n; ++i) s += x[i];"
                 " cudaMemcpy(out, &s, sizeof(float), cudaMemcpyHostToDevice); k<<<1, 1>>>(out); }\n")
    cheat = evaluate(spec, cheat_src, configs=["small", "odd"])
    base = res["atomic"]
    # an adversarial ranker: loves the cheat and the slowest program, hates the fastest
    adversary = _Const({cheat_src: 1e6, src["atomic"]: 50.0, src["warp_shuffle"]: -50.0})
    shaper = ranker_shaping(adversary, src["atomic"])
    plain = {n: reward(r, base) for n, r in res.items()}
    shaped = {n: shaper(plain[n], src[n]) for n in res}
    c = reward(cheat, base)
    assert not c.correct and shaper(c, cheat_src) == c  # a cheat gains nothing from the ranker
    assert min(r.value for r in shaped.values()) > max(c.value, PRESETS["veriforge"].wrong)
    assert "ranker" in shaped["warp_shuffle"].terms and shaped["warp_shuffle"].terms["ranker"] < 0
    assert shaped["warp_shuffle"].value > shaped["atomic"].value  # the estimated speed still decides


# ------------------------------------------------------------------------------------- LM ranker


def test_lm_ranker_takes_real_reward_trainer_steps(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    from transformers import Qwen2ForSequenceClassification

    from veriforge.cudaperf.lm_ranker import LMRanker
    from veriforge.llm.testing import tiny_qwen2_config, tiny_tokenizer

    pairs = _synthetic(4)[:8]
    texts = [LMRanker.text(p.faster.source) for p in pairs] + [LMRanker.text(p.slower.source) for p in pairs]
    tok = tiny_tokenizer(texts, vocab_size=300, full_byte_alphabet=True)
    torch.manual_seed(0)
    model = Qwen2ForSequenceClassification(tiny_qwen2_config(tok, num_labels=1))
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    lm = LMRanker.train(pairs, output_dir=tmp_path / "trainer", model=model, tokenizer=tok, max_steps=2,
                        batch_size=2, learning_rate=1e-2, max_length=128)
    losses = [h["loss"] for h in lm.log_history if "loss" in h]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
    changed = [k for k, v in lm.model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert "score.weight" in changed and any(k.startswith("model.layers.") for k in changed)
    srcs = [p.faster.source for p in pairs[:3]]
    scores = lm.score(srcs)
    assert len(scores) == 3 and all(math.isfinite(s) for s in scores)
    lm.save(tmp_path / "lm")
    back = load_ranker(tmp_path / "lm")
    assert back.score(srcs) == pytest.approx(scores, abs=1e-5)
    assert filter_candidates(srcs, back, keep=1) == [srcs[max(range(3), key=lambda i: scores[i])]]
