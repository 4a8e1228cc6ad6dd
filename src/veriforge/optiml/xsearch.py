"""OptiML-X: Monte Carlo Tree Search over edits of a verified CUDA kernel.

A node is a verified program; an action is an edit from the built-in operators
(:class:`~veriforge.optiml.operators.BuiltinProposer`) and/or a model proposer (any
:class:`veriforge.search.Proposer`, e.g. the OptiML model proposer) — both can run in one search.
The search itself is :mod:`veriforge.search` (MCTS with UCT/PUCT and progressive widening,
dedupe by content hash, guardrails, re-measure of the top candidates, resume from the run store);
this module supplies what is CUDA-specific:

* :class:`KernelEvaluator` — the adapter from :func:`veriforge.cuda.evaluate.evaluate` (compile,
  verify on every configuration, measure or estimate) to a search :class:`Evaluation`:
  incorrect → rejected with the verifier's reason; verified but some configuration without a time
  of the search's provenance (e.g. an estimate left unknown) → kept as "verified, no score" with the
  reason (a rejected node: it ranks after every scored one, never an average over a subset);
  otherwise the composite objective (:mod:`.objective`) with the features, the per-config times
  and the bottleneck diagnosis (:mod:`.diagnosis`) in ``details`` for the next proposer.
  Re-measurements (suspicious speedups, the final top-k) run the verifier again on inputs drawn
  from a different seed, so a kernel that only works on the first inputs cannot win; and the
  would-be winner must also be correct at held-out sizes no proposer saw (:mod:`.heldout`), so a
  kernel that only works at the shown sizes cannot win either.
* :func:`resolve_inputs` — a task (bundled id or folder) plus a starting kernel (a ``.cu`` file, or
  the task's naive implementation). A standalone kernel without a task is refused with an
  explanation: nothing is optimised unverified.
* :func:`optimize` — runs the search and returns an :class:`OptimizeResult` (the search result,
  start vs best, the tree JSON enriched with each edit's effect on the objective).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veriforge.core import defaults
from veriforge.core.hashing import content_hash
from veriforge.core.sourcefile import read_source
from veriforge.core.types import Candidate
from veriforge.errors import ConfigError
from veriforge.optiml.diagnosis import Finding, diagnose, primary_bottleneck
from veriforge.optiml.heldout import HeldOut
from veriforge.optiml.objective import (
    ObjectiveWeights,
    composite_objective,
    no_score_reason,
    provenance_for_backend,
)
from veriforge.search.interfaces import Evaluation

if TYPE_CHECKING:
    from veriforge.core.store import RunStore
    from veriforge.cuda.tasks.schema import TaskSpec
    from veriforge.search.engine import SearchResult

__all__ = [
    "ALGORITHMS",
    "KernelEvaluator",
    "OptimizeInputError",
    "OptimizeResult",
    "XSearchSettings",
    "estimate_summary",
    "make_engine",
    "optimize",
    "resolve_inputs",
    "unscored",
]

ALGORITHMS = ("mcts", "random", "greedy")
EVALUATOR_VERSION = "optiml-x-eval/3"  # 2: every configuration needs a time; 3: a 0 s config (no launch) counts
#: Start of the rejection reason of a verified candidate without a score (tree.json, report).
UNSCORED_PREFIX = "verified, no score"
RECHECK_SEED = 7919  # a prime far from the default trial numbers: other inputs than the first check


class OptimizeInputError(ConfigError):
    """The inputs cannot be optimised under verification (no task, no kernel, wrong family)."""


@dataclass(frozen=True)
class XSearchSettings:
    """Settings of one OptiML-X run (defaults are the documented ones, docs/optiml.md).

    ``regression_tolerance`` 0.10: an edit that makes the objective more than 10 % worse than its
    parent is rejected (tuning steps are small; a big regression is a wrong direction).
    ``suspicious_factor`` 5: a child more than 5× better than its parent is re-verified on other
    inputs (different seed) before it is accepted. ``final_top_k`` 3 candidates are re-measured
    (and re-verified) before the winner is declared; ``tie_tolerance`` 1 %. ``eval_timeout_s``: wall
    seconds one candidate's verification may take (None: the harness's default, 60 s + 10 s per case);
    on the CPU back-end a candidate past it is an *emulation limit* (not verified, not called wrong).
    """

    algorithm: str = defaults.OPTIML_ALGORITHM
    max_evaluations: int | None = defaults.OPTIML_BUDGET
    max_seconds: float | None = None
    seed: int = defaults.OPTIML_SEED
    backend: str = defaults.CUDA_BACKEND
    gpu: str = defaults.CUDA_GPU
    selection: str = "puct"
    regression_tolerance: float | None = 0.10
    suspicious_factor: float | None = 5.0
    final_top_k: int = 3
    final_repeats: int = 1
    tie_tolerance: float = 0.01
    trials: int = 2
    weights: ObjectiveWeights = field(default_factory=ObjectiveWeights)
    heldout: bool = True
    eval_timeout_s: float | None = None

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ConfigError(f"algorithm must be one of {', '.join(ALGORITHMS)}, not {self.algorithm!r}")
        if self.backend not in ("cpu", "gpu"):
            raise ConfigError(f"backend must be 'cpu' or 'gpu', not {self.backend!r}")

    @property
    def provenance(self) -> str:
        return provenance_for_backend(self.backend)


ProgressFn = Callable[[dict[str, Any]], None]


class KernelEvaluator:
    """Compile + verify + measure one candidate kernel on a task, as a search evaluation.

    ``calls`` counts evaluator calls, ``fresh`` the evaluations the harness really ran (not
    answered by the run store) — tests use it to prove nothing is evaluated twice.
    """

    def __init__(self, spec: TaskSpec, settings: XSearchSettings, *, store: RunStore | None = None,
                 progress: ProgressFn | None = None, started: Callable[[Candidate], None] | None = None) -> None:
        from veriforge.cuda.tasks.reference import task_content_hash

        self.spec = spec
        self.settings = settings
        self.store = store
        self.progress = progress
        #: called with each candidate as its evaluation begins (a heartbeat can name a slow one)
        self.started = started
        self.calls = 0
        self.fresh = 0
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self.best: float | None = None
        self.bottleneck = ""
        #: held-out sizes for the final check (set by :func:`optimize` once the start is known)
        self.heldout: HeldOut | None = None
        self.fingerprint = content_hash(
            EVALUATOR_VERSION, task_content_hash(spec), settings.backend, settings.gpu, settings.provenance,
            str(settings.trials), str(sorted(settings.weights.to_dict().items())),
            *([f"timeout={settings.eval_timeout_s:g}"] if settings.eval_timeout_s is not None else []))

    def evaluate(self, state: Candidate) -> Evaluation:
        with self._lock:
            sample = self._seen.get(state.hash, 0)
            self._seen[state.hash] = sample + 1
        # First look: the task's own inputs. Re-measurements: other inputs (re-verification).
        return self._run(state, None if sample == 0 else RECHECK_SEED + sample)

    def heldout_check(self, state: Candidate) -> Evaluation:
        """Final check of a would-be winner: correct at sizes the proposers never saw (:mod:`.heldout`)."""
        if self.heldout is None:
            return Evaluation(ok=True, objective=None)
        return self.heldout.check(state)

    def recheck(self, state: Candidate, evaluation: Evaluation) -> Evaluation:
        """Guardrail check for a suspicious speedup: verify again on inputs from another seed."""
        return self._run(state, RECHECK_SEED)

    def _run(self, cand: Candidate, seed: int | None) -> Evaluation:
        from veriforge.cuda.evaluate import evaluate

        s = self.settings
        self.calls += 1
        if self.started is not None:
            self.started(cand)
        try:
            res = evaluate(self.spec, cand, backend=s.backend, store=self.store, trials=s.trials, seed=seed,
                           timeout=s.eval_timeout_s)
        except Exception as exc:  # a harness failure is this candidate's failure, not the search's
            return self._done(Evaluation.failed(f"evaluation failed: {type(exc).__name__}: {exc}"))
        if not res.cached:
            self.fresh += 1
        verified = sorted({r.config for r in res.verdict.results if r.passed})
        base = {"eval_key": res.key, "seed": seed, "verified_configs": verified}
        if not res.correct:
            why = res.verdict.reason or "incorrect"
            if res.details.get("emulation_limit"):  # slow to emulate is not wrong: say which it is
                return self._done(Evaluation.failed(why, details={**base, "emulation_limit": True}))
            return self._done(Evaluation.failed(f"incorrect: {why}", details=base))
        estimate = res.details.get("estimate") if s.provenance == "estimated" else None
        if estimate:
            base["estimate"] = estimate_summary(estimate)
        obj = composite_objective(res.measurements, res.features, s.provenance, s.weights, configs=verified,
                                  estimate=estimate)
        if obj is None:
            # Verified, but not every configuration has a time: no score (never a mean over the
            # configurations that have one). The node is kept with the reason and ranks after
            # every scored candidate.
            why = no_score_reason(res.measurements, s.provenance, verified, estimate) or f"no {s.provenance} time"
            kind = "estimate unknown" if s.provenance == "estimated" else f"no {s.provenance} time"
            return self._done(Evaluation.failed(f"{UNSCORED_PREFIX} ({kind}): {why}",
                                                details={**base, "verified": True, "unscored_reason": why}))
        findings = diagnose(res.features, gpu=s.gpu)
        details = {
            **base,
            "verified": True,
            "time_s": obj.time_s,
            "config_times": obj.config_times,
            "penalties": obj.penalties,
            "features": {k: v for k, v in res.features.items() if isinstance(v, int | float)},
            "findings": [f.to_dict() for f in findings],
            "bottleneck": primary_bottleneck(findings),
        }
        return self._done(Evaluation(ok=True, objective=obj.value, provenance=s.provenance, details=details))

    def _done(self, ev: Evaluation) -> Evaluation:
        if ev.ok and ev.objective is not None and (self.best is None or ev.objective < self.best):
            self.best = ev.objective
            self.bottleneck = str(ev.details.get("bottleneck", ""))
        if self.progress is not None:
            self.progress({"calls": self.calls, "best": self.best, "bottleneck": self.bottleneck,
                           "ok": ev.ok, "objective": ev.objective, "reason": ev.rejected_reason})
        return ev


def estimate_summary(estimate: dict[str, Any]) -> dict[str, Any]:
    """The parts of the harness's ``details["estimate"]`` a search keeps per node: overall status and,
    per configuration, status, time, lower bound and the unknown and worst-case parts."""
    records = estimate.get("configs") or {}
    order = [n for n in estimate.get("config_names") or [] if n in records]
    configs = {}
    for name in order + [n for n in records if n not in order]:
        rec = records[name]
        configs[name] = {k: rec.get(k) for k in ("status", "time_s", "lower_bound_s", "unknown", "worst_case")}
    return {"gpu": estimate.get("gpu"), "model": estimate.get("model"), "status": estimate.get("status"),
            "complete": estimate.get("complete"), "configs": configs}


def unscored(node: dict[str, Any]) -> str | None:
    """The reason a tree.json node (or its evaluation's details) was verified but left without a score."""
    ev = node.get("evaluation") if "evaluation" in node else node
    details = (ev or {}).get("details") or {}
    return details.get("unscored_reason")


# ---------------------------------------------------------------------------------------------
# Inputs


def _task_folder_near(kernel: Path) -> Path | None:
    for folder in (kernel.parent, kernel.parent.parent):
        if (folder / "task.toml").is_file():
            return folder
    return None


def resolve_inputs(target: str | Path | None, task: str | Path | None = None) -> tuple[TaskSpec, Candidate, str]:
    """(task spec, starting candidate, label) from a kernel file and/or a task.

    * ``target`` a ``.cu`` file: its task is ``task``, else the task folder it lives in (the file's
      folder or its parent, as for ``impls/naive.cu``); without one, :class:`OptimizeInputError`.
    * ``target`` a task id or folder (or ``None`` with ``task``): start from the task's naive
      implementation (lowest quality).
    """
    from veriforge.cuda.tasks import TaskFormatError, find_task, load_task

    def load(ref: str | Path) -> TaskSpec:
        try:
            spec = load_task(find_task(ref, prefer="c2cuda"))
        except TaskFormatError as exc:
            raise OptimizeInputError(str(exc)) from None
        if spec.family != "c2cuda":
            raise OptimizeInputError(f"task {spec.id} is a {spec.family} task; OptiML-X optimises CUDA kernels "
                                     "of c2cuda tasks (a solve() entry verified against reference.c)")
        return spec

    if target is not None and str(target).endswith((".cu", ".cuh")):
        path = Path(target)
        if not path.is_file():
            raise OptimizeInputError(f"kernel file {path} does not exist")
        folder = Path(task) if task is not None else _task_folder_near(path.resolve())
        if folder is None:
            raise OptimizeInputError(
                f"{path}: no task found for this kernel. OptiML-X only optimises under verification, and "
                "verification needs a task (a reference implementation and input configurations): pass "
                "--task ID_OR_FOLDER (a bundled task id such as matmul_fp32, or a folder with task.toml; "
                "see docs/tasks.md), or --kernel NAME --grid EXPR --block EXPR --param NAME=VALUE to use the "
                "original kernel as the reference (docs/optiml.md, 'Your own kernel'). Nothing was optimised.")
        spec = load(folder)
        return spec, Candidate(source=read_source(path), metadata={"path": str(path)}), path.name
    ref = target if target is not None else task
    if ref is None:
        raise OptimizeInputError("nothing to optimise: give a kernel file (.cu) with --task, or a task id")
    spec = load(ref)
    if not spec.implementations:
        raise OptimizeInputError(f"task {spec.id} bundles no implementation to start from; give a kernel file")
    naive = min(spec.implementations, key=lambda i: (i.quality, i.name))
    assert spec.folder is not None
    path = spec.folder / naive.file
    return spec, Candidate(source=path.read_text(), metadata={"path": str(path), "impl": naive.name}), \
        f"{spec.id}/{naive.name}"


# ---------------------------------------------------------------------------------------------
# The search


@dataclass
class OptimizeResult:
    """Everything one OptiML-X run produced."""

    spec: TaskSpec
    start_label: str
    settings: XSearchSettings
    search: SearchResult[Candidate]
    evaluator_calls: int
    fresh_evaluations: int
    heldout: dict[str, Any] | None = None
    #: what proposers dropped without making a node (malformed model replies, failed model calls,
    #: unchanged or duplicate code), as ``{"proposer", "node", "reason"}``
    proposer_skips: list[dict[str, Any]] = field(default_factory=list)
    #: model calls per proposer that calls a model (``{"name": calls}``)
    proposer_calls: dict[str, int] = field(default_factory=dict)

    @property
    def start(self) -> Any:
        return self.search.initial

    @property
    def best(self) -> Any:
        return self.search.best

    @property
    def start_time(self) -> float:
        return float(self.start.evaluation.details["time_s"])

    @property
    def best_time(self) -> float:
        return float(self.best.evaluation.details["time_s"])

    @property
    def speedup(self) -> float:
        return self.start_time / self.best_time if self.best_time > 0 else float("nan")

    def model_calls(self) -> dict[str, Any]:
        """Model calls made and failed over the run: ``{"calls", "failed", "all_failed", "first_error"}``.

        A search keeps going when model calls fail (the built-in operators still propose), so the
        count has to be shown: a run whose every model call failed is not the run the user asked for.
        """
        failed = [s for s in self.proposer_skips if s.get("kind") == "call_failed"]
        calls = sum(self.proposer_calls.values())
        return {"calls": calls, "failed": len(failed), "all_failed": calls > 0 and len(failed) >= calls,
                "first_error": str(failed[0].get("reason")) if failed else None}

    def findings(self, node: Any) -> list[Finding]:
        return [Finding.from_dict(f) for f in (node.evaluation.details.get("findings") or [])]

    def tree_json(self) -> dict[str, Any]:
        """The search tree with, per node, the edit's evidence, verdict and effect on the objective."""
        data = self.search.tree_json()
        by_id = {n["id"]: n for n in data.get("nodes", [])}
        for node in by_id.values():
            ev = node.get("evaluation") or {}
            parent = by_id.get(node.get("parent"))
            pev = (parent or {}).get("evaluation") or {}
            obj, pobj = ev.get("objective"), pev.get("objective")
            node["verdict"] = node.get("status")
            why = unscored(node)
            node["score"] = {"scored": obj is not None, "unscored_reason": why,
                             "estimate_status": ((ev.get("details") or {}).get("estimate") or {}).get("status")}
            if why is not None:
                node["verdict"] = "verified, no score"
            elif (ev.get("details") or {}).get("emulation_limit"):
                node["verdict"] = "emulation limit (not verified, not known to be wrong)"
            node["effect"] = {
                "objective": obj,
                "parent_objective": pobj,
                "relative_change": (obj / pobj - 1.0) if obj is not None and pobj else None,
                "time_s": (ev.get("details") or {}).get("time_s"),
            }
        data["emulation_limited"] = [
            {"id": n["id"], "reason": n.get("reason") or ""} for n in by_id.values()
            if ((n.get("evaluation") or {}).get("details") or {}).get("emulation_limit")]
        data["unscored"] = [{"id": n["id"], "reason": n["score"]["unscored_reason"]} for n in by_id.values()
                            if n["score"]["unscored_reason"] is not None]
        data["best_estimate"] = (self.best.evaluation.details or {}).get("estimate")
        data["task"] = self.spec.id
        data["start"] = self.start_label
        data["heldout"] = self.heldout
        data["proposer_skips"] = list(self.proposer_skips)
        data["proposer_calls"] = dict(self.proposer_calls)
        data["model_calls"] = self.model_calls()
        data["provenance"] = self.settings.provenance
        data["settings"] = {k: v for k, v in self.settings.__dict__.items() if k != "weights"}
        data["settings"]["weights"] = self.settings.weights.to_dict()
        return data


def make_engine(settings: XSearchSettings, proposers: Sequence[Any], evaluator: Any,
                store: RunStore | None = None, run_id: str | None = None, task_id: str = "") -> Any:
    """The search engine of ``settings.algorithm`` over ``evaluator`` (a :class:`KernelEvaluator`, or
    any search evaluator: tests plant synthetic objectives through the same wiring)."""
    from veriforge.search import MCTS, Guardrails, HillClimb, MCTSConfig, RandomSearch, SearchConfig

    cfg = SearchConfig(
        max_evaluations=settings.max_evaluations, max_seconds=settings.max_seconds, seed=settings.seed,
        tie_tolerance=settings.tie_tolerance, final_top_k=settings.final_top_k,
        final_repeats=settings.final_repeats, proposals_per_round=64,
        final_check=getattr(evaluator, "heldout_check", None) if settings.heldout else None,
        guardrails=Guardrails(regression_tolerance=settings.regression_tolerance,
                              suspicious_factor=settings.suspicious_factor,
                              check=getattr(evaluator, "recheck", None)))
    kwargs = {"store": store, "run_id": run_id, "fingerprint": getattr(evaluator, "fingerprint", None),
              "run_config": {"task": task_id, "system": "optiml-x"}}
    if settings.algorithm == "mcts":
        return MCTS(list(proposers), evaluator, cfg, mcts=MCTSConfig(selection=settings.selection), **kwargs)
    cls = RandomSearch if settings.algorithm == "random" else HillClimb
    return cls(list(proposers), evaluator, cfg, **kwargs)


def optimize(target: str | Path | None = None, *, task: str | Path | None = None,
             settings: XSearchSettings | None = None, proposers: Sequence[Any] | None = None,
             store: RunStore | None = None, run_id: str | None = None,
             progress: ProgressFn | None = None,
             started: Callable[[Candidate], None] | None = None,
             resolved: tuple[TaskSpec, Candidate, str] | None = None) -> OptimizeResult:
    """Run OptiML-X on ``target`` (kernel file or task; see :func:`resolve_inputs`).

    ``resolved``: the (task spec, starting candidate, label) already built, e.g. a user's own kernel
    whose original is the reference (:func:`veriforge.optiml.user_kernel.build_user_task`).

    ``proposers`` defaults to the built-in operators; pass ``[BuiltinProposer(), model_proposer]``
    to search with both. With ``store`` and ``run_id`` an interrupted run resumes where it stopped
    (same settings required; the budget may grow).
    """
    from veriforge.optiml.operators import BuiltinProposer

    settings = settings or XSearchSettings()
    spec, start, label = resolved if resolved is not None else resolve_inputs(target, task)
    evaluator = KernelEvaluator(spec, settings, store=store, progress=progress, started=started)
    evaluator.heldout = HeldOut(spec, start, backend=settings.backend, trials=settings.trials, store=store)
    props = list(proposers) if proposers else [BuiltinProposer()]
    engine = make_engine(settings, props, evaluator, store, run_id, spec.id)
    from veriforge.search.errors import SearchError

    try:
        result = engine.run_sync(start)
    except SearchError as exc:
        if "initial state was rejected" in str(exc):
            why = str(exc)
            path = str((start.metadata or {}).get("path") or "")
            if path.endswith((".cu", ".cuh")):  # compiler messages name the user's file, not candidate.cu
                why = why.replace("candidate.cu", Path(path).name)
            raise OptimizeInputError(f"the starting kernel {label} cannot be optimised: {why}") from None
        raise
    skips = [{"proposer": getattr(p, "name", type(p).__name__), **s} for p in props
             for s in getattr(p, "skipped", None) or []]
    calls = {getattr(p, "name", type(p).__name__): int(p.calls) for p in props if hasattr(p, "skipped")}
    return OptimizeResult(spec, label, settings, result, evaluator.calls, evaluator.fresh,
                          heldout=evaluator.heldout.to_json() if settings.heldout else None,
                          proposer_skips=skips, proposer_calls=calls)
