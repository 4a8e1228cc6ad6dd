"""Fit the cost model's constants to the GPU timings already in the run store.

Every GPU evaluation the harness caches (kind ``cuda-eval``, back-end ``gpu``) carries one
``measured`` ``time_s`` per configuration. Paired with the static analysis of the same candidate's
launches for that configuration, those timings are exactly what :func:`veriforge.cuda.costmodel.calibrate`
needs, so a machine that has ever run candidates on a GPU can tune the model for free:

>>> report = calibrate_from_store(RunStore(), "H100-SXM")
>>> report.fit_error.rms_log, report.default_rms_log, report.skipped
>>> save_constants(report.constants, "h100.json")
>>> costmodel.estimate(analysis_report, "H100-SXM", constants=load_constants("h100.json"))

The source is looked up (in order): the ``candidate_source`` the harness stores with every result
(older stores lack it), the
``sources`` argument (hash -> source, or a callable), then the implementations bundled with the
task. A measurement whose launches cannot be rebuilt, or that cannot be paired with one kernel
launch, is not guessed at: it is listed in :attr:`CalibrationReport.skipped` with the reason.

Pairing: the model prices one launch, the GPU times the whole entry call. A configuration whose
entry makes ``n`` launches of one identical configuration is paired as ``(report, time / n)``; one
that launches different kernels or shapes is skipped (its time cannot be split without the model).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veriforge.cuda.arch import GPU, get_gpu
from veriforge.cuda.costmodel import (
    DEFAULT_CONSTANTS,
    DEFAULT_FIT_PARAMS,
    CostConstants,
    CostInputs,
    CostModelError,
    FitError,
    calibrate,
    estimate,
    extract_inputs,
)

if TYPE_CHECKING:
    from veriforge.core.store import RunStore
    from veriforge.cuda.tasks.schema import TaskSpec

__all__ = [
    "CalibrationPair",
    "CalibrationReport",
    "NoCalibrationDataError",
    "calibrate_from_store",
    "launch_reports",
    "load_constants",
    "save_constants",
]

EVAL_KIND = "cuda-eval"  # the kind the harness stores evaluations under (harness.EVAL_KIND)
CONSTANTS_FORMAT = "veriforge-cost-constants"

SourceLookup = Mapping[str, str] | Callable[[str], str | None]
TaskFilter = Callable[[str], bool] | Collection[str]


class NoCalibrationDataError(CostModelError):
    """The store holds no GPU measurement that could be paired with an analysed launch.

    ``skipped`` lists why each candidate measurement was left out, so the caller can see what to fix.
    """

    def __init__(self, message: str, skipped: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.skipped = list(skipped)


@dataclass(frozen=True)
class CalibrationPair:
    """One measurement used in the fit, with where it came from and what the model says of it."""

    task_id: str
    candidate_hash: str
    config: str
    kernel: str
    launches: int  # identical launches the measured time was divided by
    measured_s: float  # per launch
    default_estimate_s: float
    fitted_estimate_s: float


@dataclass(frozen=True)
class CalibrationReport:
    """Result of :func:`calibrate_from_store`.

    ``fit_error`` is the fitted model's error on the pairs; ``default_rms_log`` /
    ``default_max_abs_log`` the same errors with :data:`DEFAULT_CONSTANTS`, to show what the fit
    bought. ``skipped`` has one human-readable reason per measurement (or record) left out.
    """

    constants: CostConstants
    fit_error: FitError
    n_pairs: int
    skipped: list[str]
    default_rms_log: float
    default_max_abs_log: float
    gpu: str
    pairs: list[CalibrationPair] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "constants": self.constants.to_dict(),
            "fit_error": self.fit_error.to_dict(),
            "n_pairs": self.n_pairs,
            "skipped": list(self.skipped),
            "default_rms_log": self.default_rms_log,
            "default_max_abs_log": self.default_max_abs_log,
            "gpu": self.gpu,
            "pairs": [vars(p) for p in self.pairs],
        }


# ---------------------------------------------------------------------------------------------
# Saving and loading constants.


def save_constants(constants: CostConstants, path: str | Path, *, gpu: str | None = None,
                   fit_error: FitError | None = None) -> Path:
    """Write ``constants`` as JSON (with the GPU and fit error, if given, for humans); returns the path."""
    p = Path(path)
    payload: dict[str, Any] = {"format": CONSTANTS_FORMAT, "constants": constants.to_dict()}
    if gpu is not None:
        payload["gpu"] = get_gpu(gpu).name
    if fit_error is not None:
        payload["fit_error"] = {"rms_log": fit_error.rms_log, "max_abs_log": fit_error.max_abs_log,
                                "n": fit_error.n, "params": list(fit_error.params)}
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    return p


def load_constants(path: str | Path) -> CostConstants:
    """Constants saved by :func:`save_constants` (or a bare ``{name: value}`` JSON object).

    Names absent from the file keep their defaults, so files written before a constant was added
    still load; unknown names and non-positive values are errors (:class:`CostModelError`).
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CostModelError(f"cannot read cost constants from {p}: {exc}") from exc
    if isinstance(data, dict) and data.get("format") == CONSTANTS_FORMAT:
        data = data.get("constants")
    if not isinstance(data, dict):
        raise CostModelError(f"{p}: cost constants must be a JSON object of name: number")
    try:
        return CostConstants.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise CostModelError(f"{p}: {exc}") from exc


# ---------------------------------------------------------------------------------------------
# Rebuilding the analysis of a candidate's launches.


def launch_reports(source: str, entry: str, scalars: Mapping[str, Any], gpu: str | GPU = "H100-SXM",
                   inputs: Mapping[str, Any] | None = None) -> list[tuple[tuple[Any, ...], Any]]:
    """``[(launch key, analysis report)]`` for every launch ``entry`` makes for ``scalars``, in order.

    The same host interpretation and per-launch analysis as the harness's estimate
    (``evaluate.estimate.estimate_launches``), but returning the reports instead of summed times,
    because calibration needs each launch's inputs. Identical launches share one report object.
    Raises :class:`veriforge.cuda.analysis.host.HostUnknownError` or an analysis error when a
    launch cannot be determined.
    """
    from veriforge.cuda import analysis
    from veriforge.cuda.analysis.host import host_launches
    from veriforge.cuda.analysis.parse import find_kernel, parse_source

    g = get_gpu(gpu)
    parsed = parse_source(source)
    run = host_launches(parsed, entry, dict(scalars), gpu=g.name, inputs=inputs)
    cache: dict[tuple[Any, ...], Any] = {}
    out = []
    for ln in run.launches:
        key = (ln.kernel, ln.grid, ln.block, ln.smem, ln.args, ln.template_args, ln.addresses)
        if key not in cache:
            kdef = find_kernel(parsed, ln.kernel)
            params = {p.name: v for p, v in zip(kdef.params, ln.args, strict=False)
                      if not p.is_pointer and v is not None}
            params.update({p.name: a for p, a in zip(kdef.params, ln.addresses, strict=False)
                           if p.is_pointer and a is not None})
            template = {tp.name: v for tp, v in zip(kdef.template, ln.template_args, strict=False)}
            cache[key] = analysis.analyze(source, kernel=ln.kernel, grid=ln.grid, block=ln.block, params=params,
                                          dynamic_smem=ln.smem, template_args=template)
        out.append((key, cache[key]))
    return out


# ---------------------------------------------------------------------------------------------
# Reading the store.


def _stored_evaluations(store: RunStore) -> Iterator[tuple[str, str, str]]:
    """``(key, kind, result JSON)`` of every stored evaluation, oldest first."""
    for key, kind, result in store.iter_evaluations():
        yield key, kind, result if isinstance(result, str) else json.dumps(result)


def _wanted(task_id: str, task_filter: TaskFilter | None) -> bool:
    if task_filter is None:
        return True
    if callable(task_filter):
        return bool(task_filter(task_id))
    return task_id in task_filter


def _measured_gpu(m: Any) -> str | None:
    """The product name a measured timing came from: the back-end label ``gpu:<name>`` or the
    driver's ``device`` detail."""
    label = str(getattr(m, "backend", "") or "")
    if label.startswith("gpu:") and label[4:].strip():
        return label[4:].strip()
    device = m.details.get("device") if isinstance(m.details, dict) else None
    return str(device) if device else None


class _SourceFinder:
    """Candidate source by content hash: stored field, caller's lookup, then the task's bundled impls."""

    def __init__(self, sources: SourceLookup | None) -> None:
        self.sources = sources
        self._bundled: dict[str, dict[str, str]] = {}

    def find(self, record: Mapping[str, Any], spec: TaskSpec, cand_hash: str) -> tuple[str | None, str]:
        """(source, "") or (None, why): the first offered source whose hash is ``cand_hash``."""
        from veriforge.core.types import Candidate

        details = record.get("details") or {}
        offered = [("stored result", record.get("candidate_source") or details.get("candidate_source"))]
        if self.sources is not None:
            given = self.sources(cand_hash) if callable(self.sources) else self.sources.get(cand_hash)
            offered.append(("sources argument", given))
        offered.append(("bundled implementations", self._bundled_for(spec).get(cand_hash)))
        wrong = []
        for origin, text in offered:
            if not text:
                continue
            if Candidate(source=text, language="cuda").hash == cand_hash:
                return text, ""
            wrong.append(origin)
        if wrong:
            return None, f"the source from the {' and '.join(wrong)} does not hash to the stored candidate_hash"
        return None, "candidate source unknown"

    def _bundled_for(self, spec: TaskSpec) -> dict[str, str]:
        from veriforge.core.types import Candidate

        if spec.id not in self._bundled:
            table: dict[str, str] = {}
            for impl in spec.implementations:
                if spec.folder is not None and (spec.folder / impl.file).is_file():
                    text = (spec.folder / impl.file).read_text()
                    table[Candidate(source=text, language="cuda").hash] = text
            self._bundled[spec.id] = table
        return self._bundled[spec.id]


@dataclass
class _Collected:
    inputs: list[CostInputs] = field(default_factory=list)
    measured: list[float] = field(default_factory=list)
    meta: list[tuple[str, str, str, str, int]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _collect(store: RunStore, g: GPU, task_filter: TaskFilter | None, sources: SourceLookup | None,
             start: CostConstants) -> _Collected:
    from veriforge.core.types import Measurement

    out = _Collected()
    finder = _SourceFinder(sources)
    specs: dict[str, Any] = {}
    launches_cache: dict[tuple[str, str, str], Any] = {}
    for key, kind, text in _stored_evaluations(store):
        if kind != EVAL_KIND:
            continue
        where = f"evaluation {key[:12]}"
        try:
            record = json.loads(text)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
            measurements = [Measurement.model_validate(m) for m in record.get("measurements", [])]
        except (ValueError, TypeError) as exc:
            out.skipped.append(f"{where}: stored result is not a readable evaluation ({type(exc).__name__})")
            continue
        timings = [m for m in measurements if m.name == "time_s" and m.provenance == "measured"]
        if not timings:
            continue  # CPU evaluations and failed runs: nothing measured, nothing to report
        task_id = str(record.get("task_id") or "")
        cand_hash = str(record.get("candidate_hash") or "")
        if task_id and not _wanted(task_id, task_filter):
            continue
        if not task_id:
            out.skipped.append(f"{where}: no task_id in the stored result")
            continue
        where = f"{task_id} evaluation {key[:12]}"
        if not cand_hash:
            out.skipped.append(f"{where}: no candidate_hash in the stored result")
            continue
        if task_id not in specs:
            specs[task_id] = _find_spec(task_id)
        spec = specs[task_id]
        if isinstance(spec, str):
            out.skipped.append(f"{where}: {spec}")
            continue
        if spec.family != "c2cuda":
            out.skipped.append(f"{where}: {spec.family} candidates are not calibrated (only C→CUDA launches "
                               f"are rebuilt from source)")
            continue
        source, why = finder.find(record, spec, cand_hash)
        if source is None:
            out.skipped.append(f"{where}: {why} (the harness stores only candidate_hash; "
                               f"pass sources={{hash: source}})")
            continue
        for m in timings:
            _pair_one(out, m, spec, source, cand_hash, where, g, start, launches_cache)
    return out


def _find_spec(task_id: str) -> TaskSpec | str:
    """The C→CUDA task ``task_id``, or why not. The harness stores the bare id, which some bundled
    tasks share with a torch2cuda task (``gemv``), so the C→CUDA family is tried first."""
    from veriforge.cuda.evaluate.harness import resolve_task

    errors = []
    for ref in (f"c2cuda/{task_id}", task_id):
        try:
            return resolve_task(ref)
        except Exception as exc:  # TaskFormatError and friends: the task is not on this machine
            errors.append(str(exc))
    return f"task {task_id!r} not found: {errors[-1]}"


def _pair_one(out: _Collected, m: Any, spec: TaskSpec, source: str, cand_hash: str, where: str, g: GPU,
              start: CostConstants, launches_cache: dict[tuple[str, str, str], Any]) -> None:
    from veriforge.cuda.tasks.generate import make_case

    config = m.details.get("config")
    here = f"{where} config {config!r}"
    if not config:
        out.skipped.append(f"{where}: measured time_s has no config in its details")
        return
    if not (isinstance(m.value, int | float) and math.isfinite(m.value) and m.value > 0):
        out.skipped.append(f"{here}: measured time {m.value!r} is not a positive number of seconds")
        return
    device = _measured_gpu(m)
    if device is None:
        out.skipped.append(f"{here}: the measurement does not say which GPU it ran on")
        return
    try:
        measured_on = get_gpu(device)
    except LookupError:
        out.skipped.append(f"{here}: measured on {device!r}, which is not in the GPU table")
        return
    if measured_on.name != g.name:
        out.skipped.append(f"{here}: measured on {measured_on.name}, not {g.name}")
        return
    if m.details.get("side_stream_suspect"):
        out.skipped.append(f"{here}: the timing is flagged side_stream_suspect (event time under-reports)")
        return
    cache_key = (spec.id, cand_hash, str(config))
    if cache_key not in launches_cache:
        try:
            case = make_case(spec, str(config), 0)
            scalars = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "scalar"}
            inputs = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "in"}
            launches_cache[cache_key] = launch_reports(source, spec.entry, scalars, g, inputs)
        except Exception as exc:  # unknown host code, analysis limits, a config the task no longer has
            launches_cache[cache_key] = f"launches not determined: {type(exc).__name__}: {exc}"
    launches = launches_cache[cache_key]
    if isinstance(launches, str):
        out.skipped.append(f"{here}: {launches}")
        return
    if not launches:
        out.skipped.append(f"{here}: the entry launches no kernel for this config")
        return
    distinct = {k for k, _ in launches}
    if len(distinct) > 1:
        out.skipped.append(f"{here}: {len(launches)} launches of {len(distinct)} different configurations; "
                           f"one measured total cannot be split between them")
        return
    report = launches[0][1]
    try:
        q = extract_inputs(report, g, constants=start)
    except CostModelError as exc:
        out.skipped.append(f"{here}: the model cannot price the launch: {exc}")
        return
    if q.uncovered:
        out.skipped.append(f"{here}: the analysis does not count all the launch's work: {'; '.join(q.uncovered)}")
        return
    out.inputs.append(q)
    out.measured.append(float(m.value) / len(launches))
    out.meta.append((spec.id, cand_hash, str(config), q.kernel, len(launches)))


def _log_errors(inputs: Sequence[CostInputs], measured: Sequence[float], g: GPU, c: CostConstants
                ) -> tuple[list[float], list[float]]:
    est = [estimate(q, g, constants=c).lower_bound_s for q in inputs]  # inputs are complete: exact
    return est, [math.log(e / t) for e, t in zip(est, measured, strict=True)]


def calibrate_from_store(store: RunStore, gpu: str | GPU = "H100-SXM", *, task_filter: TaskFilter | None = None,
                         sources: SourceLookup | None = None, params: Sequence[str] = DEFAULT_FIT_PARAMS,
                         start: CostConstants | None = None) -> CalibrationReport:
    """Fit the cost model to every usable GPU timing of ``gpu`` in ``store``.

    ``task_filter`` keeps only some tasks (a collection of task ids or a predicate on the id);
    ``sources`` maps candidate hashes to sources the store cannot give (see the module docstring);
    ``params`` and ``start`` are passed to :func:`~veriforge.cuda.costmodel.calibrate`. Raises
    :class:`NoCalibrationDataError` (with the skip reasons) when no pair is usable.
    """
    g = get_gpu(gpu)
    c0 = start or DEFAULT_CONSTANTS
    got = _collect(store, g, task_filter, sources, c0)
    if not got.inputs:
        reasons = "; ".join(got.skipped[:5]) + (" ..." if len(got.skipped) > 5 else "")
        raise NoCalibrationDataError(
            f"no usable {g.name} GPU timing in {getattr(store, 'path', 'the store')}"
            + (f" ({len(got.skipped)} skipped: {reasons})" if got.skipped else ""), got.skipped)
    fitted, fit = calibrate(list(zip(got.inputs, got.measured, strict=True)), g, params=params, start=c0)
    default_est, default_err = _log_errors(got.inputs, got.measured, g, DEFAULT_CONSTANTS)
    fitted_est, _ = _log_errors(got.inputs, got.measured, g, fitted)
    pairs = [CalibrationPair(task_id=t, candidate_hash=h, config=cfg, kernel=k, launches=n, measured_s=meas,
                             default_estimate_s=d, fitted_estimate_s=f)
             for (t, h, cfg, k, n), meas, d, f in zip(got.meta, got.measured, default_est, fitted_est, strict=True)]
    return CalibrationReport(
        constants=fitted,
        fit_error=fit,
        n_pairs=len(pairs),
        skipped=got.skipped,
        default_rms_log=math.sqrt(sum(e * e for e in default_err) / len(default_err)),
        default_max_abs_log=max(abs(e) for e in default_err),
        gpu=g.name,
        pairs=pairs,
    )
