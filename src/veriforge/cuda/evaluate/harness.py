"""``evaluate(task, candidate, backend)``: the one place that decides whether a candidate is correct.

Order of work, cheapest rejection first: cache lookup → static anti-cheat → inputs and reference
outputs for every configuration and trial → the back-end runs the candidate → every output of
every case is compared (poison, tolerance) → the "outputs must depend on inputs" check across
trials → dynamic findings → measurements (emulated/measured from the back-end, estimated from
the cost model on the CPU back-end). The result is stored in the run store under a key that
covers everything that can change it, so an unchanged candidate is never evaluated twice.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

from veriforge.core.hashing import canonical_json, content_hash
from veriforge.core.sourcefile import read_source
from veriforge.core.types import Candidate, InputResult, Task, Verdict
from veriforge.cuda.tasks.schema import TaskSpec

from .backend import (
    HARNESS_VERSION,
    BackendRun,
    CCase,
    CParam,
    CRequest,
    TimingOptions,
    TorchConfig,
    TorchRequest,
    get_backend,
)
from .compare import Comparison, compare
from .result import EvalResult

__all__ = ["DEFAULT_TRIALS", "evaluate", "evaluation_key", "resolve_candidate", "resolve_task"]

DEFAULT_TRIALS = 2
EVAL_KIND = "cuda-eval"


def resolve_task(task: TaskSpec | Task | str | Path) -> TaskSpec:
    """A TaskSpec from a TaskSpec, a core Task (``metadata["path"]`` or its id), a folder or an id."""
    from veriforge.cuda.tasks.load import find_task, load_task

    if isinstance(task, TaskSpec):
        return task
    if isinstance(task, Task):
        ref = task.metadata.get("path") or task.id
        return load_task(find_task(ref))
    return load_task(find_task(task))


def resolve_candidate(candidate: Candidate | str | Path, family: str) -> Candidate:
    """A Candidate from a Candidate, a source string, or a path to a source file."""
    language = "cuda" if family == "c2cuda" else "python"
    if isinstance(candidate, Candidate):
        return candidate
    if isinstance(candidate, Path):
        return Candidate(source=read_source(candidate), language=language, metadata={"path": str(candidate)})
    text = str(candidate)
    if "\n" not in text and len(text) < 4096 and Path(text).is_file():
        return Candidate(source=read_source(text), language=language, metadata={"path": text})
    return Candidate(source=text, language=language)


def _with_user_file_name(result: EvalResult, cand: Candidate) -> EvalResult:
    """Compiler messages name the candidate ``candidate.cu`` (its lines are already the user's);
    when the candidate was read from the user's own file, say that file instead, so
    ``my_kernel.cu:4:63: error`` points at it. Done on the way out, so cached results (stored
    under the source's hash, whatever its file was called) read the same."""
    path = str(cand.metadata.get("path") or "")
    if not path or not path.endswith((".cu", ".cuh")) or not path.isprintable():
        return result
    name = Path(path).name
    v = result.verdict
    if "candidate.cu" not in v.reason and not any("candidate.cu" in r.message for r in v.results):
        return result
    fixed = [r.model_copy(update={"message": r.message.replace("candidate.cu", name)}) for r in v.results]
    result.verdict = v.model_copy(update={"reason": v.reason.replace("candidate.cu", name), "results": fixed})
    return result


def _task_hash(spec: TaskSpec) -> str:
    from veriforge.cuda.tasks.reference import task_content_hash

    return task_content_hash(spec)


def _estimate_version() -> str:
    """What the cached estimated times depend on besides the candidate: the cost model and the
    whole-candidate rules (a stored result from an older model would carry stale estimates)."""
    from veriforge.cuda.costmodel import MODEL_VERSION

    from .estimate import ESTIMATE_VERSION

    return f"{ESTIMATE_VERSION}:{MODEL_VERSION}"


def evaluation_key(spec: TaskSpec, candidate: Candidate, backend: str, options: dict[str, Any]) -> str:
    """Content hash of everything that can change an evaluation's result."""
    return content_hash("cuda-eval", HARNESS_VERSION, _task_hash(spec), candidate.hash, backend,
                        canonical_json(options))


def evaluate(task: TaskSpec | Task | str | Path, candidate: Candidate | str | Path, backend: str = "cpu", *,
             store: Any = None, trials: int = DEFAULT_TRIALS, timeout: float | None = None, profile: bool = False,
             seed: int | None = None, configs: list[str] | None = None, memcheck: bool = False,
             estimate: bool = True, timing: TimingOptions | None = None,
             baseline: str | Path | None = None, secret: int | None = None) -> EvalResult:
    """Evaluate ``candidate`` on ``task`` with the ``backend`` (``"cpu"`` or ``"gpu"``).

    ``trials`` ≥ 2 runs per configuration with fresh inputs (trial ``t`` of config ``c`` is drawn
    from ``(c.seed, t)``; ``seed`` shifts every trial to other data); ``configs`` restricts the
    configurations; ``memcheck`` adds an AddressSanitizer check (CPU) of every access;
    ``estimate`` adds the cost model's time on the CPU back-end; without a ``seed``, every trial
    after the first uses inputs drawn from a fresh secret (``result.details["input_secret"]``;
    pass it back as ``secret=`` to reproduce a verdict exactly); ``baseline`` (C→CUDA: a source
    or path with the same entry) is timed next to the candidate by measuring back-ends (GPU) for a
    speed-up. With a ``store`` (RunStore) the result is cached and concurrent evaluations of the
    same key run once.
    """
    started = time.perf_counter()
    spec = resolve_task(task)
    cand = resolve_candidate(candidate, spec.family)
    backend_name = backend if isinstance(backend, str) else backend.name
    if trials < 2:
        raise ValueError("trials must be >= 2: the second trial is what catches outputs that ignore the inputs")
    # [[timing]] configurations: a measuring back-end verifies and times them like the others; the CPU
    # back-end only estimates them (they are too large to emulate), see estimate.check_timing.
    default = [c.name for c in spec.configs] + (spec.timing_names if backend_name != "cpu" else [])
    chosen = default if configs is None else list(configs)
    for name in chosen:
        spec.config(name)
    timing = timing or TimingOptions(profile=profile)
    options = {"trials": trials, "seed": seed, "configs": chosen, "memcheck": memcheck,
               "estimate": _estimate_version() if estimate else False, "profile": profile, "timing": timing}
    if timeout is not None:  # a limit can turn a verdict into a timeout: results under another limit differ
        options["timeout"] = timeout
    elif _base_timeout() != DEFAULT_BASE_TIMEOUT_S:  # so does a configured sandbox.timeout_s
        options["timeout_base"] = _base_timeout()
    from veriforge.cuda.evaluate.configured import overrides

    if limits := overrides():  # and configured sandbox.* limits (cpu_s, memory_mb, ...)
        options["sandbox_limits"] = limits
    baseline_source = None
    if baseline is not None:
        baseline_source = resolve_candidate(baseline, spec.family).source
        options["baseline"] = content_hash(baseline_source)
    key = evaluation_key(spec, cand, backend_name, options)

    def run() -> dict[str, Any]:
        drawn = None if seed is not None else (new_secret() if secret is None else int(secret))
        res = _evaluate_uncached(spec, cand, backend, trials=trials, timeout=timeout, seed=seed, configs=chosen,
                                 memcheck=memcheck, estimate=estimate, timing=timing, baseline=baseline_source,
                                 secret=drawn)
        if drawn is not None:
            res.details["input_secret"] = drawn
        res.key = key
        res.seconds = time.perf_counter() - started
        # Stored results are self-contained: what was evaluated travels with the verdict, so later
        # consumers (cost-model calibration on accumulated GPU timings, rankers) need no other copy.
        res.details.setdefault("candidate_source", cand.source)
        res.details.setdefault("task_family", spec.family)
        if spec.timing:
            res.details["timing_configs"] = spec.timing_names
        # the problem sizes every time and estimate was made for (tiny sizes are launch-overhead bound)
        res.details["sizes"] = {c.name: dict(c.variables) for c in (*spec.configs, *spec.timing)}
        return res.to_dict()

    if store is None:
        return _with_user_file_name(EvalResult.from_dict(run()), cand)
    hit = store.get_evaluation(key)
    if hit is not None:
        result = EvalResult.from_dict(hit)
        result.cached = True
        return _with_user_file_name(result, cand)
    fresh = {"value": False}

    def run_marked() -> dict[str, Any]:
        fresh["value"] = True
        return run()

    stored = store.evaluate_once(key, run_marked, kind=EVAL_KIND)
    result = EvalResult.from_dict(stored)
    result.cached = not fresh["value"]
    return _with_user_file_name(result, cand)


SECRET_TRIAL_BASE = 1 << 40
"""Trial numbers at or above this were drawn from a secret (never written into prompts or tasks)."""


DEFAULT_BASE_TIMEOUT_S = 60.0


def _base_timeout() -> float:
    """Base time limit of one candidate evaluation: the ``sandbox.timeout_s`` setting (default 60 s;
    ``--set sandbox.timeout_s=...``, ``veriforge.toml``). The call site adds a per-case allowance of
    at most the base (10 s per case by default), so a small setting bounds the whole evaluation.
    PyTorch tasks get twice the base (a framework import and a reference run per configuration)."""
    from veriforge.core.config import active_settings

    return float(active_settings().sandbox.timeout_s)


def _trial_numbers(trials: int, seed: int | None, secret: int | None = None) -> list[int]:
    """Trial numbers: ``seed`` shifts all of them (reproducible runs); otherwise trial 0 is the
    task's fixed trial (its reference outputs are cached) and every further trial is drawn from
    ``secret``, fresh for each evaluation, so outputs memorised from earlier runs cannot pass."""
    if seed is not None:
        base = 1000 * int(seed) + 17
        return [base + t for t in range(trials)]
    if secret is None:
        return list(range(trials))
    return [0] + [SECRET_TRIAL_BASE + (int(secret) * 64 + t) % (1 << 40) for t in range(1, trials)]


def new_secret() -> int:
    """A fresh secret for one evaluation's inputs (recorded in the result for reproduction)."""
    import secrets

    return secrets.randbelow(1 << 31)


def _evaluate_uncached(spec: TaskSpec, cand: Candidate, backend: Any, *, trials: int, timeout: float | None,
                       seed: int | None, configs: list[str], memcheck: bool, estimate: bool,
                       timing: TimingOptions, baseline: str | None = None, secret: int | None = None) -> EvalResult:
    be = get_backend(backend)
    base = EvalResult(verdict=Verdict.failed(reason="not evaluated"), task_id=spec.id, backend=be.name,
                      candidate_hash=cand.hash)
    why = be.unavailable_reason()
    if why:
        from .backend import BackendUnavailableError

        raise BackendUnavailableError(f"the {be.name} back-end cannot run here: {why}")
    if spec.family == "c2cuda":
        return _evaluate_c(spec, cand, be, base, trials=trials, timeout=timeout, seed=seed, configs=configs,
                           memcheck=memcheck, estimate=estimate, timing=timing, baseline=baseline, secret=secret)
    return _evaluate_torch(spec, cand, be, base, trials=trials, timeout=timeout, seed=seed, configs=configs,
                           timing=timing, secret=secret, estimate=estimate)


def _reject(base: EvalResult, reasons: list[str], kind: str, compiled: bool = True) -> EvalResult:
    base.verdict = Verdict.reject("; ".join(reasons), compiled=compiled)
    base.details["rejection"] = kind
    base.details["findings"] = reasons
    return base


EMULATION_LIMIT = "emulation limit"
"""How a verdict's reason starts when the CPU runtime ran out of time (``details["emulation_limit"]``)."""


def _backend_failure(base: EvalResult, run: BackendRun, results: list[InputResult], *,
                     emulated: bool = False) -> EvalResult:
    base.log = run.log
    if run.status == "compile_error":
        base.verdict = Verdict.compile_failed(run.message)
    elif run.status == "unsupported":
        base.verdict = Verdict.compile_failed(f"not runnable on this back-end: {run.message}")
        base.details["unsupported"] = True
    else:
        failed = (run.failed_case or "?/?").split("/")[0]
        results = [r for r in results if r.config != failed]
        reason = f"{run.status}: {run.message}"
        if run.status == "timeout" and emulated:
            # The CPU runtime runs a kernel 10-1000x slower than a GPU (fibers for barriers more):
            # running out of time there says the kernel is slow to emulate, not that it is wrong.
            base.details["emulation_limit"] = True
            reason = (f"{EMULATION_LIMIT}: {run.message} — not verified, not known to be wrong "
                      f"(verify it at smaller sizes, or on a GPU)")
        results.append(InputResult(config=failed, passed=False, message=run.message))
        base.verdict = Verdict.failed(results, reason)
    base.details["status"] = run.status
    if run.status == "crash":
        # how it ended (a signal's name, "exit status 0" for an early exit): every abnormal end of
        # the candidate's process is a crash verdict that says so, never merely "incorrect"
        base.details["crash"] = str(run.features.get("crash") or "crash")
    return base


def _evaluate_c(spec: TaskSpec, cand: Candidate, be: Any, base: EvalResult, *, trials: int, timeout: float | None,
                seed: int | None, configs: list[str], memcheck: bool, estimate: bool,
                timing: TimingOptions, baseline: str | None = None, secret: int | None = None) -> EvalResult:
    from veriforge.cuda.tasks.generate import make_case
    from veriforge.cuda.tasks.reference import reference_outputs

    from .anticheat_c import scan_c

    findings = scan_c(cand.source, spec)
    if findings:
        return _reject(base, findings, "static")
    params = [CParam(p.name, p.type, p.role) for p in spec.params]
    cases, refs = [], []
    for config in configs:
        for t in _trial_numbers(trials, seed, secret):
            case = make_case(spec, config, t)
            cases.append(CCase(config=config, trial=t, args=case.args, variables=dict(case.env)))
            refs.append(reference_outputs(spec, case, version=HARNESS_VERSION, cache=t < SECRET_TRIAL_BASE))
    first = _base_timeout()
    limit = timeout if timeout is not None else first + min(10.0, first) * len(cases)
    tolerances = {p.name: spec.tolerance.for_output(p.name, p.dtype) for p in spec.params if p.is_output}
    request = CRequest(task_id=spec.id, source=cand.source, entry=spec.entry, params=params, cases=cases,
                       timeout_s=limit, timing=timing, memcheck=memcheck, baseline_source=baseline,
                       tolerances=tolerances)
    if be.isolates("c2cuda"):
        run = be.run_c(request)
    else:
        from .isolation import run_isolated

        run = run_isolated(be.name, "run_c", request, limit)
    base.log = run.log
    base.measurements = list(run.measurements)
    base.features = dict(run.features)
    _note_isolation(base)
    problems = [p for c in run.cases for p in c.problems]
    if problems:  # dynamic findings (e.g. work left on a side stream) outrank any comparison
        return _reject(base, sorted(set(problems)), "dynamic")
    # Compare every finished case, even when a later one failed: the reasons are more useful.
    per_config: dict[str, list[Comparison]] = {}
    outputs_by_case = []
    for out, case, ref in zip(run.cases, cases, refs, strict=False):
        comps = []
        for p, arg in zip(spec.params, case.args, strict=True):
            if not p.is_output:
                continue
            tol = spec.tolerance.for_output(p.name, p.dtype)
            _note_tolerance(base, p.name, tol)
            comps.append(compare(p.name, out.outputs[p.name], ref[p.name], tol,
                                 poison=arg if p.role == "out" else None))
        per_config.setdefault(case.config, []).extend(comps)
        outputs_by_case.append((case, out, ref))
    results = _input_results(per_config)
    if not run.ok:
        return _backend_failure(base, run, results, emulated=be.name == "cpu")
    if not all(r.passed for r in results):
        base.verdict = Verdict.failed(results, _first_failure(results))
        return base
    dependence = _input_dependence(spec, outputs_by_case)
    if dependence:
        return _reject(base, [dependence], "dynamic")
    base.verdict = Verdict.passed(results)
    if estimate and be.name == "cpu":
        from veriforge.cuda.tasks.generate import case_scalars

        from .estimate import LazyInputs, estimate_candidate

        timing_cases, timing_inputs = [], {}
        for name in spec.timing_names:
            args = case_scalars(spec, name)
            if args is None:  # a custom generator may define scalars: draw the case now
                case = make_case(spec, name, 0)
                args = case.args
            timing_cases.append(CCase(config=name, trial=0, args=args, variables=dict(spec.config(name).variables)))

            def draw(name: str = name) -> dict[str, Any]:
                case = make_case(spec, name, 0)
                return {p.name: a for p, a in zip(spec.params, case.args, strict=True) if p.role == "in"}

            timing_inputs[name] = LazyInputs(draw, [p.name for p in spec.params if p.role == "in"])
        _record_estimate(base, estimate_candidate(spec, cand.source, cases, timing_cases=timing_cases,
                                                  timing_inputs=timing_inputs))
    return base


def _run_torch_split(be: Any, request: Any, limit: float) -> BackendRun:
    from .torchsplit import run_torch_split

    device = "cpu" if be.name == "cpu" else "cuda"
    run = run_torch_split(be.name, request, limit, device=device, label=be.label())
    timing = getattr(be, "run_torch_timing", None)
    if run.ok and timing is not None and request.timing.enabled and request.timing.trials > 0:
        from .isolation import run_isolated

        timed = run_isolated(be.name, "run_torch_timing", request, limit)
        if not timed.ok:
            run.status, run.message = timed.status, f"timing the candidate failed: {timed.message}"
        else:
            run.measurements = [m for m in run.measurements if m.provenance != "measured"] + timed.measurements
            if timed.cases and run.cases:
                run.cases[0].problems.extend(p for c in timed.cases for p in c.problems)
    return run


def _note_isolation(base: EvalResult) -> None:
    """Move the sandbox's record of what isolation was in force into the verdict's details."""
    iso = base.features.pop("isolation", None)
    if isinstance(iso, dict):
        base.details["isolation"] = {k: iso.get(k) for k in ("full", "missing", "user", "dropped_root",
                                                               "filesystem", "network", "pid_namespace",
                                                               "process_cleanup", "read_all_files", "strict", "uid")
                                     if k in iso}


def _note_tolerance(base: EvalResult, output: str, tol: tuple[float, float] | None) -> None:
    """Record the check each output was held to (``details["tolerances"]``), so an error figure
    can be read against it: ``{"rtol", "atol"}`` (``atol`` times the output's largest ``|ref|``),
    or ``"exact"``; ``max_rel_error`` is ``|err| / max(|ref|, atol * max|ref|)`` (compare.rel_floor)."""
    base.details.setdefault("tolerances", {})[output] = (
        "exact" if tol is None else {"rtol": tol[0], "atol": tol[1], "atol_scaled_by": "max |ref| of the output"})


def _input_results(per_config: dict[str, list[Comparison]]) -> list[InputResult]:
    results = []
    for config, comps in per_config.items():
        bad = [c for c in comps if not c.passed]
        abs_errs = [c.max_abs_error for c in comps if c.max_abs_error is not None]
        rel_errs = [c.max_rel_error for c in comps if c.max_rel_error is not None]
        results.append(InputResult(config=config, passed=not bad,
                                   max_abs_error=max(abs_errs) if abs_errs else None,
                                   max_rel_error=max(rel_errs) if rel_errs else None,
                                   message=bad[0].message if bad else ""))
    return results


def _first_failure(results: list[InputResult]) -> str:
    for r in results:
        if not r.passed:
            return f"wrong on config {r.config!r}: {r.message}"
    return "incorrect"


def _input_dependence(spec: TaskSpec, cases: list[tuple[Any, Any, dict]]) -> str:
    """A reason if some output stayed identical across trials whose reference outputs differ."""
    import numpy as np

    by_config: dict[str, list[tuple[Any, Any, dict]]] = {}
    for item in cases:
        by_config.setdefault(item[0].config, []).append(item)
    for config, items in by_config.items():
        for name in items[0][2]:
            for (_, out_a, ref_a), (_, out_b, ref_b) in itertools.pairwise(items):
                if np.array_equal(ref_a[name], ref_b[name], equal_nan=True):
                    continue
                if np.array_equal(out_a.outputs[name], out_b.outputs[name], equal_nan=True):
                    return (f"output does not depend on input: output {name!r} of config {config!r} was identical "
                            f"for two trials with different inputs whose reference outputs differ")
    return ""


def _evaluate_torch(spec: TaskSpec, cand: Candidate, be: Any, base: EvalResult, *, trials: int,
                    timeout: float | None, seed: int | None, configs: list[str],
                    timing: TimingOptions, secret: int | None = None, estimate: bool = True) -> EvalResult:
    from .anticheat_torch import scan_torch

    assert spec.folder is not None
    findings = scan_torch(cand.source, allowed_dtypes=spec.allowed_dtypes)
    if findings:
        return _reject(base, findings, "static")
    tconfigs = []
    for name in configs:
        cfg = spec.config(name)
        tconfigs.append(TorchConfig(name=name, seed=int(cfg.seed), overrides=cfg.variables))
    first = 2 * _base_timeout()
    limit = timeout if timeout is not None else first + min(20.0, first) * len(tconfigs) * trials
    request = TorchRequest(task_id=spec.id, reference_source=(spec.folder / "reference.py").read_text(),
                           candidate_source=cand.source, configs=tconfigs, trials=trials, timeout_s=limit,
                           timing=timing, allowed_dtypes=tuple(spec.allowed_dtypes),
                           trial_numbers=tuple(_trial_numbers(trials, seed, secret)))
    if be.isolates("torch2cuda"):
        run = be.run_torch(request)
    else:
        # The reference runs in a trusted child, the candidate in a confined one (torchsplit).
        run = _run_torch_split(be, request, limit)
    base.log = run.log
    base.measurements = list(run.measurements)
    base.features = dict(run.features)
    _note_isolation(base)
    problems = [p for c in run.cases for p in c.problems]
    if problems:
        return _reject(base, sorted(set(problems)), "dynamic")
    per_config: dict[str, list[Comparison]] = {}
    outputs_by_case = []
    for out in run.cases:
        comps = []
        for name, ref in out.reference.items():
            if name not in out.outputs:
                comps.append(Comparison(name, False, None, None, 1, 1,
                                        f"the candidate returned fewer outputs than the reference (no {name})"))
                continue
            dtype = str(ref.dtype)
            tol = spec.tolerance.for_output(name, dtype)
            _note_tolerance(base, name, tol)
            comps.append(compare(name, out.outputs[name], ref, tol))
        per_config.setdefault(out.config, []).extend(comps)
        outputs_by_case.append((out, out, out.reference))
    results = _input_results(per_config)
    if not run.ok:
        return _backend_failure(base, run, results, emulated=be.name == "cpu")
    if not all(r.passed for r in results):
        base.verdict = Verdict.failed(results, _first_failure(results))
        return base
    dependence = _input_dependence(spec, outputs_by_case)
    if dependence:
        return _reject(base, [dependence], "dynamic")
    base.verdict = Verdict.passed(results)
    if estimate and be.name == "cpu":
        _estimate_torch(spec, cand, base)
    return base


def _record_estimate(base: EvalResult, est: Any) -> None:
    """Keep a candidate's estimate: per configuration its time or unknown (with the reasons and a
    lower bound), status, worst-case parts, assumptions and launches; ``time_s`` measurements exist
    only for the complete configurations."""
    base.measurements.extend(est.measurements())
    base.features.update(est.features)
    base.details["estimate"] = est.to_dict()
    notes = est.notes()
    if notes:
        base.details["estimate_notes"] = notes


def _estimate_torch(spec: TaskSpec, cand: Candidate, base: EvalResult) -> None:
    """The cost model's time of a passed torch2cuda candidate, recorded like a C→CUDA candidate's."""
    from .estimate import estimate_torch_configs

    _record_estimate(base, estimate_torch_configs(spec, text=cand.source))
