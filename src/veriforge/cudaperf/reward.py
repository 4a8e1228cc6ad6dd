"""The CudaPerf reward: verified correctness gates everything, then speed, then structure.

One implementation for every trainer (TRL ``reward_funcs`` via :func:`trl_reward`, verl via
:func:`compute_score`), computed from the harness's :class:`~veriforge.cuda.evaluate.result.EvalResult`
so the anti-cheat, the secret trials and the cost model's honesty rules all apply. An RL policy finds
every hole in a reward, so its shape is fixed by invariants the tests check:

* **every correct candidate beats every failure**: the worst correct reward (``correct - speed -
  slower``) is above the best failure (``wrong``), so being slow never pays less than being wrong;
* **failures are ordered**: a detected cheat < a compile failure < a crash or timeout <= wrong;
* **unknown speed is the worst speed**: a candidate whose time is unknown (the cost model could not
  count its work, or a configuration has no time) gets the lowest speed term, never a neutral one —
  otherwise making the estimate unknown would be a way to dodge the slow penalty;
* **structure never outweighs speed**: structure terms are fractions in [0, 1] weighted by
  ``structure`` (0.004, the speed term of a 1.1x speedup: structure decides only between candidates
  whose times are within ~10 % of each other, since the estimate already prices coalescing, bank
  conflicts and occupancy), and need a correct candidate. Arithmetic intensity is reported but weighted 0
  by default: a policy can raise it with useless FLOPs.

Speed is ``ln(baseline / time) / ln(max_speedup)`` clipped to [-1, 1] (a log-speedup, so 2x faster
and 2x slower are symmetric; ``max_speedup`` 10^4, because naive baselines such as single-address
atomics or per-output scans are 100-10^4x slower than good kernels at timing sizes, and a lower cap
stops ranking the good ones: at 1000, scatter_add's privatised and plain-atomic kernels, 4.6x apart,
earned the same capped term), on
the geometric mean over the task's ``[[timing]]`` configurations when it has them, else over *every*
configuration of one provenance
(:func:`veriforge.optiml.objective.score_time`): measured on a GPU back-end, estimated on the CPU one.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from veriforge.errors import VeriforgeError

__all__ = [
    "PRESETS",
    "Reward",
    "RewardConfig",
    "RewardError",
    "compute_score",
    "extract_code",
    "make_executor",
    "outcome",
    "reward",
    "structure_terms",
    "trl_reward",
]

class RewardError(VeriforgeError, ValueError):
    """A reward configuration or call that cannot be honoured (unknown preset, bad weight, no task)."""


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the reward. ``shape`` "veriforge" is ours; "kevin" and "kernelgym" reproduce
    published shapes for comparison (they do not keep every invariant of the module docstring)."""

    shape: str = "veriforge"
    correct: float = 0.596
    speed: float = 0.4
    # a tie-breaker worth the speed term of a 1.1x speedup (0.4 ln 1.1 / ln 1e4): the estimate already
    # prices coalescing, conflicts and occupancy, so structure must not overrule a real speed difference
    structure: float = 0.004
    slower: float = 0.05  # extra penalty for a correct candidate slower than the baseline ...
    slower_margin: float = 1.02  # ... by more than this factor (a 0.4 % estimate difference is not "slower")
    max_speedup: float = 1e4  # the speedup that earns the full speed term (naive baselines are 100-1e4x off)
    wrong: float = -0.3
    timeout: float = -0.4
    crash: float = -0.4
    compile_error: float = -0.5
    cheat: float = -1.0
    structure_weights: Mapping[str, float] = field(default_factory=lambda: {
        "coalescing": 1.0, "bank_conflicts": 1.0, "occupancy": 1.0, "synchronisation": 1.0, "intensity": 0.0})

    def __post_init__(self) -> None:
        if self.shape not in ("veriforge", "kevin", "kernelgym"):
            raise RewardError(f"unknown reward shape {self.shape!r}; known: veriforge, kevin, kernelgym")
        if not self.max_speedup > 1:
            raise RewardError("max_speedup must be above 1")
        if not self.slower_margin >= 1:
            raise RewardError("slower_margin must be >= 1")
        for name in ("correct", "speed", "structure", "slower"):
            if getattr(self, name) < 0:
                raise RewardError(f"reward weight {name} must be >= 0")
        if self.shape == "veriforge":
            worst_correct = self.correct - self.speed - self.slower
            best_failure = max(self.wrong, self.timeout, self.crash, self.compile_error, self.cheat)
            if worst_correct <= best_failure:
                raise RewardError(f"the worst correct reward ({worst_correct:g}) must beat the best failure "
                                  f"({best_failure:g}), or being wrong pays more than being slow")
            if not self.cheat < self.compile_error <= min(self.crash, self.timeout) <= self.wrong:
                raise RewardError("failures must be ordered: cheat < compile_error <= crash, timeout <= wrong")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["structure_weights"] = dict(self.structure_weights)
        return out


PRESETS: dict[str, RewardConfig] = {
    "veriforge": RewardConfig(),
    # Kevin (Cognition, 2025): 0.3·correct + speedup·correct
    "kevin": RewardConfig(shape="kevin", correct=0.3, speed=1.0, structure=0.0, slower=0.0, wrong=0.0,
                          timeout=0.0, crash=0.0, compile_error=0.0, cheat=0.0),
    # KernelGYM: 0.3·compiled + 0.4·correct + 0.3·clip(speedup, 0, 3); penalties -0.5 (cheat),
    # -0.3 (crash/timeout), -0.1 (slower than the baseline) — our reading of the published shape
    "kernelgym": RewardConfig(shape="kernelgym", correct=0.4, speed=0.3, structure=0.0, slower=0.1, wrong=0.0,
                              timeout=-0.3, crash=-0.3, compile_error=0.0, cheat=-0.5),
}


@dataclass(frozen=True)
class Reward:
    """One candidate's reward and what it is made of (``terms``), with the outcome and reasons."""

    value: float
    outcome: str
    correct: bool
    speedup: float | None = None
    provenance: str | None = None
    terms: dict[str, float] = field(default_factory=dict)
    structure: dict[str, float] = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def outcome(result: Any) -> str:
    """``correct``, ``wrong``, ``timeout``, ``crash``, ``compile_error`` or ``cheat`` for an EvalResult."""
    v = result.verdict
    if v.correct:
        return "correct"
    if v.rejected or result.details.get("rejection"):
        return "cheat"
    if not v.compiled:
        return "compile_error"
    status = str(result.details.get("status") or "")
    reason = v.reason.lower()
    if status == "timeout" or reason.startswith("timeout"):
        return "timeout"
    if status in ("crash", "error") or reason.startswith("crash"):
        return "crash"
    return "wrong"


def _estimate_bounds(result: Any) -> set[str]:
    """What bounds the candidate's launches (memory, compute, latency) — at the timing sizes when
    the task has them: at the small verification sizes every launch is latency-bound, which would
    switch the occupancy term on for kernels that are memory-bound where speed is judged."""
    est = result.details.get("estimate") or {}
    configs = est.get("configs") or {}
    timing = [configs[n] for n in est.get("timing") or () if n in configs]
    bounds = set()
    for cfg in timing or configs.values():
        for launch in cfg.get("launches") or ():
            if launch.get("bound"):
                bounds.add(str(launch["bound"]))
    return bounds


def structure_terms(features: Mapping[str, Any], *, bounds: set[str] | None = None,
                    gpu: str = "H100-SXM") -> dict[str, float]:
    """Structure scores in [0, 1] from the shared feature vocabulary; a feature the source did not
    determine contributes nothing (never a guess).

    coalescing: mean global load/store efficiency; bank_conflicts: 1 / wavefronts per request;
    occupancy: theoretical occupancy, only when some launch is latency-bound (elsewhere more warps
    buy nothing); synchronisation (kernels with barriers only): 1 - divergent branches / (barriers +
    divergent branches); intensity: arithmetic intensity / the GPU's ridge point (capped at 1).
    """
    from veriforge.optiml.objective import _merged

    f = _merged(features)
    out: dict[str, float] = {}
    effs = f.get("global_load_efficiency", []) + f.get("global_store_efficiency", [])
    if effs:
        out["coalescing"] = min(1.0, max(0.0, sum(effs) / len(effs)))
    ways = f.get("shared_load_bank_conflict_ways", []) + f.get("shared_store_bank_conflict_ways", [])
    if ways:
        out["bank_conflicts"] = 1.0 / max(1.0, max(ways))
    occ = f.get("theoretical_occupancy")
    if occ and bounds is not None and "latency" in bounds:
        out["occupancy"] = min(1.0, max(0.0, min(occ)))
    divergent = sum(f.get("divergent_branches", []))
    barriers = sum(f.get("barriers", []))
    if f.get("divergent_branches") is not None and barriers:  # only kernels that synchronise
        out["synchronisation"] = 1.0 - min(1.0, divergent / max(1.0, barriers + divergent))
    ai = f.get("arithmetic_intensity")
    if ai:
        from veriforge.cuda.arch import get_gpu

        g = get_gpu(gpu)
        ridge = g.fp32_tflops * 1e12 / (g.dram_bandwidth_gbs * 1e9)
        out["intensity"] = min(1.0, max(ai) / ridge)
    return out


def _time(result: Any, provenance: str) -> tuple[float | None, str]:
    from veriforge.optiml.objective import score_time

    est = result.details.get("estimate") if provenance == "estimated" else None
    # A task's [[timing]] sizes decide speed when it has them (the verification sizes are small and
    # launch-bound, so strategies barely differ there); each must still have a time.
    only = (est or {}).get("timing") or result.details.get("timing_configs") or None
    ts = score_time(result.measurements, provenance, estimate=est, only=only)
    return ts.time_s, ts.reason or ""


def _time_lower_bound(result: Any, provenance: str) -> float | None:
    """The geometric mean over the scored configurations of each one's time, or its lower bound when
    the time is unknown (``time_s_lower_bound``); None if some configuration has neither."""
    if provenance != "estimated":
        return None
    est = result.details.get("estimate") or {}
    configs = est.get("configs") or {}
    names = list(est.get("timing") or ()) or list(est.get("config_names") or configs)
    values = []
    for name in names:
        c = configs.get(name) or {}
        v = c.get("time_s") if c.get("time_s") is not None else c.get("lower_bound_s")
        if v is None or v <= 0:
            return None
        values.append(float(v))
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def reward(result: Any, baseline: Any = None, *, config: RewardConfig | str = "veriforge",
           provenance: str | None = None, gpu: str = "H100-SXM") -> Reward:
    """The reward of one evaluated candidate against ``baseline`` (an EvalResult of the baseline
    kernel, its time in seconds, or None: then speed is not scored and the term is 0)."""
    cfg = PRESETS[config] if isinstance(config, str) and config in PRESETS else config
    if not isinstance(cfg, RewardConfig):
        raise RewardError(f"unknown reward preset {config!r}; known: {', '.join(PRESETS)}")
    kind = outcome(result)
    prov = provenance or ("measured" if getattr(result, "backend", "") == "gpu" else "estimated")
    compiled = bool(result.verdict.compiled)
    if kind != "correct":
        value = {"wrong": cfg.wrong, "timeout": cfg.timeout, "crash": cfg.crash,
                 "compile_error": cfg.compile_error, "cheat": cfg.cheat}[kind]
        if cfg.shape == "kernelgym" and compiled and kind != "cheat":
            value += 0.3  # its compile term is earned even when the result is wrong
        return Reward(value, kind, False, None, prov, {"failure": value}, {}, result.verdict.reason[:500])
    time_s, why = _time(result, prov)
    base = baseline
    if base is not None and not isinstance(base, int | float):
        base_result = base
        base, base_why = _time(base_result, prov)
        if base is None and time_s:
            # The baseline's time is unknown but bounded below (e.g. a CAS loop the model cannot count):
            # base_lb / time is a lower bound on the speedup, so the candidate is credited no more than
            # it has surely earned — never more.
            base = _time_lower_bound(base_result, prov)
            why = why or ("" if base is None else f"baseline time unknown ({base_why}); its lower bound is used, "
                          "so the speedup is a lower bound")
        why = why or (f"baseline: {base_why}" if base is None else "")
    speedup = (base / time_s) if (time_s and base) else None
    terms: dict[str, float] = {"correct": cfg.correct}
    if cfg.shape == "kevin":
        terms["speed"] = cfg.speed * (speedup if speedup is not None else 0.0)
    elif cfg.shape == "kernelgym":
        terms["compiled"] = 0.3
        terms["speed"] = cfg.speed * min(3.0, max(0.0, speedup if speedup is not None else 0.0))
        if speedup is not None and speedup < 1:
            terms["slower"] = -cfg.slower
    else:
        if baseline is None:
            s = 0.0  # no baseline: speed is not scored
        elif speedup is None:
            s = -1.0  # unknown time is the worst time, never a neutral one
            why = why or "time unknown"
        else:
            s = max(-1.0, min(1.0, math.log(speedup) / math.log(cfg.max_speedup)))
        terms["speed"] = cfg.speed * s
        if speedup is not None and speedup * cfg.slower_margin < 1:
            terms["slower"] = -cfg.slower
    struct: dict[str, float] = {}
    if cfg.structure > 0:
        struct = structure_terms(result.features, bounds=_estimate_bounds(result), gpu=gpu)
        weights = cfg.structure_weights
        total_w = sum(weights.get(k, 0.0) for k in struct)
        if total_w > 0:
            terms["structure"] = cfg.structure * sum(weights.get(k, 0.0) * v for k, v in struct.items()) / total_w
    return Reward(sum(terms.values()), "correct", True, speedup, prov, terms, struct, why)


# ---------------------------------------------------------------------------------------------
# Trainer adapters.

_FENCE = re.compile(r"```(?:cuda|cu|c\+\+|cpp|c)?[ \t]*\n(.*?)```", re.DOTALL)


_PY_FENCE = re.compile(r"```(?:python|py)[ \t]*\n(.*?)```", re.DOTALL)
_ANY_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


def extract_code(completion: Any, family: str = "c2cuda") -> str:
    """The candidate source of a model completion. C→CUDA: the last fenced ```cuda (c, cpp) block;
    PyTorch→CUDA: the last ```python block, else the last fenced block of any language; else the
    whole text (so a reply without the right fence still gets a verdict). Chat-format completions
    (a list of ``{"role", "content"}``) use the last message's content."""
    if isinstance(completion, list) and completion and isinstance(completion[-1], Mapping):
        completion = completion[-1].get("content", "")
    text = str(completion or "")
    blocks = _FENCE.findall(text) if family == "c2cuda" else (_PY_FENCE.findall(text) or _ANY_FENCE.findall(text))
    return (blocks[-1] if blocks else text).strip() + "\n"


class _Scorer:
    """Evaluate-and-reward with a cache keyed by task, candidate content and settings.

    With an ``executor`` (a :class:`~veriforge.cuda.evaluate.executor.Executor`: a process pool or a
    Ray cluster) each uncached evaluation runs as one job there — a worker keeps its own scorer (so a
    task's baseline is evaluated once per worker) and, given ``store_path``, shares the run store's
    evaluation cache; the trainer's process only keeps the content-hash cache of rewards."""

    def __init__(self, backend: str, config: RewardConfig | str, store: Any, gpu: str, jobs: int,
                 executor: Any = None, store_path: str | None = None) -> None:
        self.backend, self.config, self.store, self.gpu, self.jobs = backend, config, store, gpu, jobs
        self.executor, self.store_path = executor, store_path
        self._cache: dict[tuple[str, str], Reward] = {}
        self._baselines: dict[str, Any] = {}
        self._families: dict[str, str] = {}
        self._lock = threading.Lock()

    def baseline(self, task: str) -> Any:
        from veriforge.cuda.evaluate import evaluate
        from veriforge.cuda.evaluate.harness import resolve_task

        with self._lock:
            if task in self._baselines:
                return self._baselines[task]
        spec = resolve_task(task)
        if not spec.implementations or spec.folder is None:
            raise RewardError(f"task {task!r} has no implementation to serve as the speed baseline")
        res = evaluate(spec, spec.folder / spec.implementations[0].file, backend=self.backend, store=self.store)
        with self._lock:
            self._baselines[task] = res
        return res

    def family(self, task: str) -> str:
        """The task's family, read once per task (every reward asks for it)."""
        with self._lock:
            known = self._families.get(task)
        if known is not None:
            return known
        from veriforge.cuda.evaluate.harness import resolve_task

        family = resolve_task(task).family
        with self._lock:
            self._families[task] = family
        return family

    def score_completion(self, task: str, completion: Any) -> Reward:
        """The reward of a model completion: its code block for the task's family, scored."""
        try:
            family = self.family(task)
        except Exception as exc:
            raise RewardError(f"task {task!r}: {exc}") from exc
        return self.score(task, extract_code(completion, family))

    def score(self, task: str, source: str) -> Reward:
        from veriforge.core.types import Candidate
        from veriforge.cuda.evaluate import evaluate

        key = (task, hashlib.sha256(source.encode()).hexdigest())
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        if self.executor is not None:
            config = self.config if isinstance(self.config, str) else asdict(self.config)
            data = self.executor.submit(_score_job, task, source, self.backend, config, self.gpu,
                                        self.store_path).result()
            r = Reward(**data)
            with self._lock:
                self._cache[key] = r
            return r
        try:
            language = "cuda" if self.family(task) == "c2cuda" else "python"
            res = evaluate(task, Candidate(source=source, language=language), backend=self.backend, store=self.store)
            r = reward(res, self.baseline(task), config=self.config, gpu=self.gpu)
        except RewardError:
            raise
        except Exception as exc:  # the policy's text could not even be evaluated: a compile-level failure
            cfg = PRESETS.get(self.config, self.config) if isinstance(self.config, str) else self.config
            r = Reward(cfg.compile_error, "compile_error", False, reason=f"{type(exc).__name__}: {exc}"[:500])
        with self._lock:
            self._cache[key] = r
        return r

    def many(self, tasks: Sequence[str], completions: Sequence[Any]) -> list[Reward]:
        with ThreadPoolExecutor(max_workers=max(1, self.jobs)) as pool:
            return list(pool.map(self.score_completion, tasks, completions))


_WORKER_SCORERS: dict[tuple[str, str, str, str | None], _Scorer] = {}


def _score_job(task: str, source: str, backend: str, config: Any, gpu: str, store_path: str | None
               ) -> dict[str, Any]:
    """One reward in a pool or Ray worker (module-level, so it pickles by reference)."""
    cfg = config if isinstance(config, str) else RewardConfig(**config)
    key = (backend, repr(cfg), gpu, store_path)
    scorer = _WORKER_SCORERS.get(key)
    if scorer is None:
        store = None
        if store_path:
            from veriforge.core.store import RunStore

            store = RunStore(store_path)
        scorer = _WORKER_SCORERS.setdefault(key, _Scorer(backend, cfg, store, gpu, 1))
    return asdict(scorer.score(task, source))


def make_executor(kind: Any, jobs: int, *, ray_address: str | None = "local") -> Any:
    """``"thread"`` → None (the scorer's own thread pool); ``"process"`` → a process pool of ``jobs``;
    ``"ray"`` → Ray tasks (``ray_address``: "local" starts a private cluster, "auto" joins one); an
    :class:`~veriforge.cuda.evaluate.executor.Executor` is used as it is."""
    if kind in (None, "thread"):
        return None
    from veriforge.cuda.evaluate.executor import Executor, LocalExecutor, RayExecutor

    if isinstance(kind, Executor):
        return kind
    if kind == "process":
        return LocalExecutor(jobs)
    if kind == "ray":
        return RayExecutor(ray_address, num_cpus=jobs if ray_address == "local" else None)
    raise RewardError(f"unknown reward executor {kind!r}; use thread, process or ray")


def trl_reward(*, backend: str = "cpu", config: RewardConfig | str = "veriforge", store: Any = None,
               gpu: str = "H100-SXM", jobs: int = 2, task_column: str = "task_id", executor: Any = "thread",
               ray_address: str | None = "local") -> Callable[..., list[float]]:
    """A TRL ``reward_funcs`` entry: ``f(prompts, completions, **columns) -> list[float]``.

    The dataset needs a ``task_id`` column (a bundled task id or a task folder); the code is the
    last fenced block of each completion; evaluations run ``jobs`` at a time — on threads (each
    evaluation is already an isolated subprocess), a process pool or a Ray cluster (``executor``) —
    and are cached by content (and by the run store when one is given; pool and Ray workers open
    the same store file)."""
    pool = make_executor(executor, jobs, ray_address=ray_address)
    store_path = str(store.path) if store is not None and pool is not None else None
    scorer = _Scorer(backend, config, store, gpu, jobs, executor=pool, store_path=store_path)

    def cudaperf_reward(prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float]:
        tasks = columns.get(task_column)
        if tasks is None:
            raise RewardError(f"the dataset has no {task_column!r} column naming each prompt's task")
        return [r.value for r in scorer.many(list(tasks), list(completions))]

    cudaperf_reward.__name__ = f"cudaperf_{config if isinstance(config, str) else config.shape}"
    return cudaperf_reward


_VERL: dict[tuple[str, str, str], _Scorer] = {}


def compute_score(data_source: str, solution_str: str, ground_truth: str,
                  extra_info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """verl's ``custom_reward_function``: ``ground_truth`` is the task id; ``extra_info`` may set
    ``backend`` and ``preset``. Returns ``{"score": float, ...}`` with the outcome and terms."""
    info = dict(extra_info or {})
    backend, preset = str(info.get("backend", "cpu")), str(info.get("preset", "veriforge"))
    gpu = str(info.get("gpu", "H100-SXM"))
    scorer = _VERL.setdefault((backend, preset, gpu), _Scorer(backend, preset, None, gpu, 1))
    r = scorer.score_completion(str(ground_truth), solution_str)
    return {"score": r.value, "outcome": r.outcome, "speedup": r.speedup, "data_source": data_source,
            **{f"term_{k}": v for k, v in r.terms.items()}}
