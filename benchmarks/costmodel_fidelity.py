"""Fidelity of the cost model against published GPU measurements of public kernels.

For every series in ``benchmarks/fidelity/series.toml`` (a public source's table of kernels timed on
one GPU, each with its URL and the table row the number comes from), our own implementation of each
kernel (``benchmarks/fidelity/kernels/<series>/``, same strategy and launch configuration) is analysed
(``veriforge.cuda.analysis.analyze``, ptxas resources for the GPU's architecture) and priced by
``veriforge.cuda.costmodel.estimate`` on the published GPU. Reported per series and overall:

* Spearman rank correlation between estimated and published times (over the kernels with a
  complete estimate);
* the worst ratio estimated / published (the one farthest from 1, either way) and how many
  estimates are within 2x;
* coverage: how many kernels got a complete estimate. A kernel whose analysis could not count all
  of its work (``time_s`` None), or whose estimate raised, is an ``unknown`` row: listed with the
  reason and counted, never dropped silently;
* a peak check: the FLOP rate implied by the series' true FLOP count and the DRAM rate implied by
  its compulsory bytes must not exceed the GPU's peaks (a violation is printed loudly).

Three sets of constants are compared: the defaults; leave-one-series-out (constants fitted on every
other series, evaluated on the held-out one: the honest figure, since the series were never seen);
and, for reference only, constants fitted on all series (in-sample). The goal the issue sets is
checked on the held-out figures: Spearman >= 0.9 and every estimate within 2x on each series, no
estimate above peak.

``--gpu-measure`` (needs an NVIDIA GPU and nvcc): evaluates the bundled C->CUDA implementations on
that GPU through the project's harness (``evaluate(..., backend="gpu")``), stores the timings in a
run store, fits the constants with ``veriforge.cuda.calibrate.calibrate_from_store`` and prices the
published series once more with those measured constants.

    .venv/bin/python benchmarks/costmodel_fidelity.py [--series ID,ID] [--no-nvcc] [--no-fit]
        [--out benchmarks/results/costmodel_fidelity.txt] [--gpu-measure [--gpu-tasks a,b] [--store PATH]]

The pure helpers (``rankdata``, ``spearman``, ``worst_ratio``, ``published_time_s``, ``load_series``,
``validate_series``) import nothing from veriforge, so tests can use them cheaply.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIDELITY_DIR = ROOT / "benchmarks" / "fidelity"
SERIES_FILE = FIDELITY_DIR / "series.toml"
KERNEL_DIR = FIDELITY_DIR / "kernels"
RESULTS_FILE = ROOT / "benchmarks" / "results" / "costmodel_fidelity.txt"

GOAL_SPEARMAN = 0.9
GOAL_FACTOR = 2.0

#: Units of published figures and how a figure becomes seconds.
RATE_UNITS = {"GFLOP/s": ("work_flops", 1e9), "TFLOP/s": ("work_flops", 1e12), "GB/s": ("work_bytes", 1e9)}
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}

#: C->CUDA tasks measured by --gpu-measure by default: varied kinds (streaming,
#: compute-bound, stencils, reductions, transposes), each with several bundled implementations.
DEFAULT_GPU_TASKS = ("vector_add", "saxpy", "matmul_fp32", "matmul_transposed_b", "transpose_2d", "jacobi_2d_5pt",
                     "stencil_3d_7pt", "sum_reduce", "gemv", "conv2d_3x3", "softmax_rows", "row_sum")


# ------------------------------------------------------------------------------------------------
# Pure helpers (no veriforge imports).


def rankdata(values: Sequence[float]) -> list[float]:
    """1-based ranks; tied values share the mean of the ranks they span (as scipy's ``rankdata``)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mean_rank = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = mean_rank
        i = j + 1
    return ranks


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson correlation of the ranks, ties averaged).

    None when it is undefined: fewer than 2 pairs, or one side constant.
    """
    if len(xs) != len(ys):
        raise ValueError(f"spearman needs equal lengths, got {len(xs)} and {len(ys)}")
    n = len(xs)
    if n < 2:
        return None
    rx, ry = rankdata(xs), rankdata(ys)
    mx, my = sum(rx) / n, sum(ry) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def worst_ratio(estimated: Sequence[float], published: Sequence[float]) -> float | None:
    """The ratio estimated / published farthest from 1 (largest |ln|), either direction; None if empty."""
    ratios = [e / p for e, p in zip(estimated, published, strict=True)]
    if not ratios:
        return None
    return max(ratios, key=lambda r: abs(math.log(r)))


def within_factor(ratio: float, factor: float = GOAL_FACTOR) -> bool:
    return 1.0 / factor <= ratio <= factor


def published_time_s(series: Mapping[str, Any], kernel: Mapping[str, Any]) -> float:
    """The published figure of ``kernel`` as seconds, with the series' conversion.

    Rates are converted with the work the source divided by (``work_flops`` for FLOP/s,
    ``work_bytes`` for B/s); times only change unit. A kernel may override ``metric`` and the work.
    """
    metric = kernel.get("metric", series["metric"])
    value = float(kernel["published"])
    if value <= 0:
        raise ValueError(f"{kernel.get('label')}: published value must be positive, not {value}")
    if metric in TIME_UNITS:
        return value * TIME_UNITS[metric]
    if metric in RATE_UNITS:
        work_key, scale = RATE_UNITS[metric]
        work = kernel.get(work_key, series.get(work_key))
        if not work:
            raise ValueError(f"{kernel.get('label')}: metric {metric} needs `{work_key}` in the series or kernel")
        return float(work) / (value * scale)
    known = sorted(TIME_UNITS) + sorted(RATE_UNITS)
    raise ValueError(f"{kernel.get('label')}: unknown metric {metric!r}; known: {known}")


def load_series(path: Path = SERIES_FILE) -> list[dict[str, Any]]:
    """The series of ``series.toml`` (a list of dicts, each with a ``kernels`` list)."""
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    series = data.get("series")
    if not isinstance(series, list) or not series:
        raise ValueError(f"{path}: no [[series]] tables")
    return series


REQUIRED_SERIES = ("id", "title", "gpu", "metric", "source", "where", "timing", "compulsory_bytes", "true_flops")
REQUIRED_KERNEL = ("label", "file", "kernel", "published", "where")


def validate_series(series: Sequence[Mapping[str, Any]], kernel_dir: Path = KERNEL_DIR) -> list[str]:
    """Problems with the data file (empty when it is well formed): missing fields or citations,
    kernel files that do not exist, launch configurations missing, unconvertible figures."""
    problems: list[str] = []
    seen: set[str] = set()
    for s in series:
        sid = s.get("id", "?")
        if sid in seen:
            problems.append(f"series {sid}: duplicate id")
        seen.add(sid)
        for key in REQUIRED_SERIES:
            if key not in s or s[key] in ("", None):
                problems.append(f"series {sid}: missing `{key}`")
        if not str(s.get("source", "")).startswith("https://"):
            problems.append(f"series {sid}: `source` must be an https URL")
        kernels = s.get("kernels") or []
        if len(kernels) < 4:
            problems.append(f"series {sid}: {len(kernels)} kernels, a series needs at least 4")
        for k in kernels:
            label = f"series {sid} kernel {k.get('label', '?')}"
            for key in REQUIRED_KERNEL:
                if key not in k or k[key] in ("", None):
                    problems.append(f"{label}: missing `{key}`")
            if "file" in k and not (kernel_dir / k["file"]).is_file():
                problems.append(f"{label}: kernel file {k['file']} not found under {kernel_dir}")
            if "sweep_block" in k:
                if "grid_elements" not in k:
                    problems.append(f"{label}: `sweep_block` needs `grid_elements`")
            elif "grid" not in k or "block" not in k:
                problems.append(f"{label}: needs `grid` and `block` (or `sweep_block` + `grid_elements`)")
            try:
                published_time_s(s, k)
            except (KeyError, ValueError) as exc:
                problems.append(f"{label}: {exc}")
    return problems


def launches(kernel: Mapping[str, Any]) -> list[tuple[tuple[int, ...], tuple[int, ...], int]]:
    """``(grid, block, dynamic_smem)`` of every launch configuration to analyse for a kernel entry:
    one, or one per swept block size."""
    if "sweep_block" in kernel:
        out = []
        for bs in kernel["sweep_block"]:
            grid = (int(kernel["grid_elements"]) + bs - 1) // bs
            out.append(((grid,), (int(bs),), int(kernel.get("dynamic_smem_per_thread", 0)) * int(bs)))
        return out
    return [(tuple(int(v) for v in kernel["grid"]), tuple(int(v) for v in kernel["block"]),
             int(kernel.get("dynamic_smem", 0)))]


# ------------------------------------------------------------------------------------------------
# Analysis and estimates.


@dataclass
class Launch:
    """One analysed launch configuration of a kernel entry."""

    grid: tuple[int, ...]
    block: tuple[int, ...]
    dynamic_smem: int
    report: Any = None  # AnalysisReport, or None when the analysis raised
    error: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass
class Entry:
    """One kernel of one series, with its analyses (several when the block size is swept)."""

    series: str
    label: str
    gpu: str  # canonical name from the GPU table, or the series' spelling when unknown
    published_s: float
    true_flops: float
    compulsory_bytes: float
    launches: list[Launch]
    gpu_error: str = ""


@dataclass
class Priced:
    """An entry priced with one set of constants."""

    time_s: float | None
    lower_bound_s: float | None
    status: str  # exact | upper_bound | unknown | error
    bound: str = ""
    why: list[str] = field(default_factory=list)
    config: str = ""  # the launch the time is for (swept kernels: the fastest)
    peak: list[str] = field(default_factory=list)
    diag: str = ""  # what the estimate is made of (registers, occupancy, DRAM bytes, component times)


_ANALYSIS_CACHE: dict[tuple, tuple[Any, str, list[str]]] = {}


def _freeze(d: Mapping[str, Any] | None) -> tuple:
    return tuple(sorted((d or {}).items()))


def analyse(source_file: Path, kernel: str, grid: tuple[int, ...], block: tuple[int, ...], params: Mapping[str, Any],
            template_args: Mapping[str, Any] | None, dynamic_smem: int, arch: str, use_nvcc: bool
            ) -> tuple[Any, str, list[str]]:
    """``(report, error, notes)`` for one launch, cached in memory. ptxas is used when asked and
    available; when the analysis with nvcc raises, it is retried without (noted)."""
    from veriforge.cuda import analysis

    key = (str(source_file), kernel, grid, block, _freeze(params), _freeze(template_args), dynamic_smem, arch,
           use_nvcc)
    if key in _ANALYSIS_CACHE:
        return _ANALYSIS_CACHE[key]
    source = source_file.read_text()
    notes: list[str] = []
    rep, err = None, ""
    for nvcc in ([True, False] if use_nvcc else [False]):
        try:
            rep = analysis.analyze(source, kernel, grid=grid, block=block, params=dict(params), arch=arch,
                                   template_args=dict(template_args or {}), dynamic_smem=dynamic_smem,
                                   use_nvcc=nvcc)
            err = ""
            break
        except Exception as exc:  # an analysis crash is a result to report, not a reason to stop
            err = f"analysis raised {type(exc).__name__}: {exc}"
            if nvcc:
                notes.append(f"analysis with nvcc raised ({type(exc).__name__}: {exc}); retried without nvcc")
    if rep is not None and use_nvcc and not rep.resources:
        notes.append("no ptxas resources (registers/occupancy from the model's defaults)")
    _ANALYSIS_CACHE[key] = (rep, err, notes)
    return _ANALYSIS_CACHE[key]


def build_entries(series: Sequence[Mapping[str, Any]], use_nvcc: bool = True, progress: bool = True) -> list[Entry]:
    """Analyse every kernel of every series on its published GPU's architecture."""
    from veriforge.cuda.arch import UnknownGPUError, get_gpu

    entries = []
    for s in series:
        try:
            g = get_gpu(s["gpu"])
            gpu_name, arch, gpu_error = g.name, g.arch, ""
        except UnknownGPUError as exc:
            gpu_name, arch, gpu_error = s["gpu"], "", f"GPU not in veriforge.cuda.arch: {exc}"
        for k in s["kernels"]:
            t0 = time.perf_counter()
            params = {**s.get("params", {}), **k.get("params", {})}
            runs = []
            if not gpu_error:
                for grid, block, smem in launches(k):
                    rep, err, notes = analyse(KERNEL_DIR / k["file"], k["kernel"], grid, block, params,
                                              k.get("template_args"), smem, arch, use_nvcc)
                    check = source_register_check(rep, k.get("source_registers"), arch, block, smem)
                    runs.append(Launch(grid, block, smem, rep, err, notes + ([check] if check else [])))
            entries.append(Entry(series=s["id"], label=k["label"], gpu=gpu_name, published_s=published_time_s(s, k),
                                 true_flops=float(k.get("true_flops", s["true_flops"])),
                                 compulsory_bytes=float(k.get("compulsory_bytes", s["compulsory_bytes"])),
                                 launches=runs, gpu_error=gpu_error))
            if progress:
                print(f"  analysed {s['id']} / {k['label']} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return entries


def source_register_check(report: Any, source_registers: int | None, arch: str, block: tuple[int, ...],
                          dynamic_smem: int) -> str:
    """Empty when our kernel gets the registers ptxas gives the source's kernel (``source_registers``
    in series.toml); else a note saying whether the occupancy still matches."""
    res = getattr(report, "resources", None) or {}
    ours = res.get("registers")
    if not source_registers or not ours or int(ours) == int(source_registers):
        return ""
    from veriforge.cuda.occupancy import theoretical

    smem = int(res.get("smem_static") or 0)
    try:
        occ_ours = theoretical(arch, block, int(ours), smem, dynamic_smem).occupancy
        occ_src = theoretical(arch, block, int(source_registers), smem, dynamic_smem).occupancy
    except Exception as exc:  # the note is a diagnostic; never fail the run on it
        return f"registers: ours {ours}, the source's kernel {source_registers} (occupancy not compared: {exc})"
    same = "same occupancy" if abs(occ_ours - occ_src) < 1e-9 else "OCCUPANCY DIFFERS"
    return (f"registers: ours {ours}, the source's kernel {source_registers}: {same} "
            f"({occ_ours:.2f} vs {occ_src:.2f})")


def _fmt_cfg(launch: Launch) -> str:
    def dims(d: tuple[int, ...]) -> str:
        return "x".join(str(v) for v in d)

    smem = f", {launch.dynamic_smem}" if launch.dynamic_smem else ""
    return f"<<<{dims(launch.grid)}, {dims(launch.block)}{smem}>>>"


def price_launch(launch: Launch, gpu: str, constants: Mapping[str, float] | None) -> Priced:
    """Estimate one analysed launch; an unknown or raised estimate becomes a status, not an exception."""
    from veriforge.cuda import costmodel

    if launch.report is None:
        return Priced(None, None, "error", why=[launch.error or "no analysis"], config=_fmt_cfg(launch))
    try:
        est = costmodel.estimate(launch.report, gpu, constants=dict(constants) if constants else None)
    except Exception as exc:  # CostModelError subclasses (peak-rate check, ...) and anything else: reported
        return Priced(None, None, "error", why=[f"estimate raised {type(exc).__name__}: {exc}"],
                      config=_fmt_cfg(launch))
    status = getattr(est, "status", None) or ("exact" if est.time_s is not None else "unknown")
    why = list(getattr(est, "unknown", []) or [])
    if status == "upper_bound":
        why += [f"worst case: {w}" for w in (getattr(est, "worst_case", []) or [])]
    lb = getattr(est, "lower_bound_s", None)
    return Priced(est.time_s, lb if lb else est.time_s, status, bound=str(getattr(est, "bound", "")), why=why,
                  config=_fmt_cfg(launch), diag=_diagnostics(launch.report, est))


#: Breakdown entries shown per kernel (those the model reports; missing ones are skipped).
_DIAG_TIMES = (("dram_time_s", "dram"), ("l2_time_s", "l2"), ("l1_time_s", "l1/shared"), ("flop_time_s", "fp"),
               ("barrier_time_s", "barrier"), ("atomic_time_s", "atomic"))


def _diagnostics(report: Any, est: Any) -> str:
    """One line on what an estimate is made of, for reading a wrong ratio."""
    b = dict(getattr(est, "breakdown", {}) or {})
    parts = []
    res = getattr(report, "resources", None) or {}
    if res.get("registers"):
        parts.append(f"regs {res['registers']}")
    if "occupancy" in b:
        parts.append(f"occupancy {b['occupancy']:.2f}")
    if "dram_bytes" in b:
        comp = b.get("compulsory_bytes")
        parts.append(f"DRAM {b['dram_bytes'] / 1e9:.2f} GB" + (f" (compulsory {comp / 1e9:.2f})" if comp else ""))
    times = [f"{label} {b[key] * 1e6:,.0f}" for key, label in _DIAG_TIMES if b.get(key)]
    if times:
        parts.append("us: " + ", ".join(times))
    for key, label in (("coalescing_inflation", "coalescing"), ("bank_conflict_inflation", "bank conflicts"),
                       ("warp_efficiency", "warp efficiency")):
        v = b.get(key)
        if v and abs(v - 1.0) > 0.01:
            parts.append(f"{label} x{v:.2f}")
    return "; ".join(parts)


def price_entry(entry: Entry, constants: Mapping[str, float] | None) -> Priced:
    """Price an entry; for a swept block size, the fastest complete estimate, unknown when a sweep
    point without a complete estimate might be faster (its lower bound is below the best)."""
    if entry.gpu_error:
        return Priced(None, None, "error", why=[entry.gpu_error])
    priced = [(price_launch(run, entry.gpu, constants), run) for run in entry.launches]
    notes = [n for _, run in priced for n in run.notes]
    complete = [p for p, _ in priced if p.time_s is not None]
    if len(priced) == 1:
        p = priced[0][0]
        p.why = notes + p.why
        return _with_peak(p, entry)
    if not complete:
        lbs = [p.lower_bound_s for p, _ in priced if p.lower_bound_s]
        why = notes + [f"{p.config}: {w}" for p, _ in priced for w in p.why]
        return Priced(None, min(lbs) if lbs else None, "unknown", why=why)
    best = min(complete, key=lambda p: p.time_s)
    faster_unknown = [p for p, _ in priced if p.time_s is None and (p.lower_bound_s or 0.0) < best.time_s]
    if faster_unknown:
        why = notes + [f"{p.config} has no complete estimate and may be faster than {best.config}: {'; '.join(p.why)}"
                       for p in faster_unknown]
        return Priced(None, best.time_s, "unknown", why=why, config=best.config)
    best.why = notes + best.why
    best.config = f"fastest of sweep: {best.config}"
    return _with_peak(best, entry)


def peak_violations(time_s: float, true_flops: float, compulsory_bytes: float, gpu: Any) -> list[str]:
    """Implied rates above the GPU's peaks (the estimate claims the impossible)."""
    out = []
    if true_flops and time_s > 0:
        rate = true_flops / time_s
        peak = gpu.fp32_tflops * 1e12
        if rate > peak:
            out.append(f"implied {rate / 1e12:.2f} TFLOP/s > peak FP32 {gpu.fp32_tflops} TFLOP/s")
    if compulsory_bytes and time_s > 0:
        rate = compulsory_bytes / time_s
        peak = gpu.dram_bandwidth_gbs * 1e9
        if rate > peak:
            out.append(f"implied {rate / 1e9:.0f} GB/s > peak DRAM {gpu.dram_bandwidth_gbs:.0f} GB/s")
    return out


def _with_peak(p: Priced, entry: Entry) -> Priced:
    if p.time_s is not None:
        from veriforge.cuda.arch import get_gpu

        p.peak = peak_violations(p.time_s, entry.true_flops, entry.compulsory_bytes, get_gpu(entry.gpu))
    return p


# ------------------------------------------------------------------------------------------------
# Calibration.


def fit_params() -> tuple[str, ...]:
    from veriforge.cuda import costmodel

    names = set(costmodel.CostConstants().to_dict())
    return tuple(p for p in costmodel.DEFAULT_FIT_PARAMS if p in names)


def _pairs(entries: Sequence[Entry]) -> list[tuple[Any, str, float]]:
    """``(report, gpu, published_s)`` for every entry whose default estimate is complete (the only
    ones a fit may use); swept entries contribute their fastest launch."""
    out = []
    for e in entries:
        p = price_entry(e, None)
        if p.time_s is None:
            continue
        cfg = p.config.removeprefix("fastest of sweep: ")
        run = next(r for r in e.launches if _fmt_cfg(r) == cfg)
        out.append((run.report, e.gpu, e.published_s))
    return out


#: Physically plausible range of each fitted constant. The fit is bounded to these ranges: on these
#: series an unbounded fit walks to values no GPU has (a 0.7 ns DRAM latency, a 120 us launch
#: overhead) to trade one kernel family's error against another's, and held-out figures computed
#: with such constants say nothing about the model.
PLAUSIBLE_RANGES: dict[str, tuple[float, float]] = {
    "dram_bw_fraction": (0.5, 1.0),
    "fp32_fraction": (0.3, 1.0),
    "tensor_fraction": (0.3, 1.0),
    "mem_latency_ns": (200.0, 1500.0),
    "mlp_per_warp": (1.0, 16.0),
    "warps_to_hide_latency": (4.0, 64.0),
    "l1_sectors_per_clk": (1.0, 8.0),
    "l1_requests_per_clk": (0.25, 2.0),
    "shared_wavefronts_per_clk": (0.5, 2.0),
    "launch_overhead_s": (1e-6, 2e-5),
    "barrier_cycles": (10.0, 400.0),
}


def _range(name: str, default: float) -> tuple[float, float]:
    return PLAUSIBLE_RANGES.get(name, (default / 10.0, default * 10.0))


def fit_constants(entries: Sequence[Entry], params: Sequence[str] | None = None, max_iter: int = 60,
                  bounded: bool = True) -> tuple[dict[str, float] | None, str]:
    """Constants fitted to the published times of ``entries`` (those with complete estimates).

    :func:`veriforge.cuda.costmodel.calibrate` itself -- least squares on ln(estimate / published),
    Levenberg-Marquardt -- with every pair priced on its own GPU (a leave-one-series-out training
    set spans several) and, when ``bounded``, each constant kept inside :data:`PLAUSIBLE_RANGES`.
    Returns ``(constants or None, description)``.
    """
    from veriforge.cuda import costmodel

    names = tuple(params or fit_params())
    pairs = _pairs(entries)
    if len(pairs) < len(names):
        return None, f"not fitted: {len(pairs)} complete estimates for {len(names)} constants"
    gpus = sorted({g for _, g, _ in pairs})
    c0 = costmodel.CostConstants()
    bounds = {n: _range(n, float(getattr(c0, n))) for n in names} if bounded else None
    try:
        constants, fit = costmodel.calibrate([(rep, t, g) for rep, g, t in pairs], gpus[0], params=names,
                                             max_iter=max_iter, bounds=bounds)
    except costmodel.CostModelError as exc:
        return None, f"not fitted: {exc}"
    fitted = {n: float(getattr(constants, n)) for n in names}
    at_bound = [n for n, v in fitted.items() if bounded and any(abs(math.log(v / b)) < 1e-3 for b in _range(n, v))]
    return fitted, (f"{'bounded' if bounded else 'unbounded'} fit on {len(pairs)} pairs over {', '.join(gpus)}: "
                    f"rms ln-error {fit.initial_rms_log:.3f} -> {fit.rms_log:.3f}"
                    + (f" (at a range limit: {', '.join(at_bound)})" if at_bound else ""))


def calibrate_per_gpu(entries: Sequence[Entry], params: Sequence[str] | None = None) -> list[str]:
    """Diagnostic: ``veriforge.cuda.costmodel.calibrate`` itself (unbounded, one GPU at a time) on
    every pair of each GPU, in-sample."""
    from veriforge.cuda import costmodel

    names = tuple(params or fit_params())
    pairs = _pairs(entries)
    out = []
    for gpu in sorted({g for _, g, _ in pairs}):
        mine = [(r, t) for r, g, t in pairs if g == gpu]
        if len(mine) < len(names):
            out.append(f"   costmodel.calibrate {gpu}: {len(mine)} pairs, too few for {len(names)} constants")
            continue
        try:
            fitted, fit = costmodel.calibrate(mine, gpu, params=names)
        except Exception as exc:
            out.append(f"   costmodel.calibrate {gpu}: raised {type(exc).__name__}: {exc}")
            continue
        out.append(f"   costmodel.calibrate {gpu} ({len(mine)} pairs, in-sample, unbounded): rms ln-error "
                   f"{fit.initial_rms_log:.3f} -> {fit.rms_log:.3f}; "
                   + _fmt_consts({n: getattr(fitted, n) for n in names}))
    return out


# ------------------------------------------------------------------------------------------------
# Summaries and output.


@dataclass
class Summary:
    n: int
    covered: int
    rho: float | None
    worst: float | None
    within: int
    geomean: float | None
    peak: int

    @property
    def coverage(self) -> str:
        return f"{self.covered}/{self.n}"


def summarize(rows: Sequence[tuple[Entry, Priced]]) -> Summary:
    ok = [(e, p) for e, p in rows if p.time_s is not None]
    est = [p.time_s for _, p in ok]
    pub = [e.published_s for e, _ in ok]
    ratios = [a / b for a, b in zip(est, pub, strict=True)]
    return Summary(n=len(rows), covered=len(ok), rho=spearman(est, pub) if len(ok) >= 2 else None,
                   worst=worst_ratio(est, pub), within=sum(within_factor(r) for r in ratios),
                   geomean=math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None,
                   peak=sum(bool(p.peak) for _, p in ok))


def _f(v: float | None, fmt: str = "{:.3f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def _us(v: float | None) -> str:
    if v is None:
        return "-"
    us = v * 1e6
    return f"{us:,.0f}" if us >= 100 else f"{us:.1f}"


def _ratio(p: Priced, e: Entry) -> str:
    return "-" if p.time_s is None else f"{p.time_s / e.published_s:.2f}"


def series_table(sid: str, meta: Mapping[str, Any], entries: Sequence[Entry],
                 settings: Sequence[tuple[str, Mapping[str, Priced]]]) -> list[str]:
    """Text table of one series: published, then estimate and ratio per setting, status and bound
    of the default estimate, then the notes (unknowns, errors, peak violations)."""
    head = ["kernel", "published us"]
    for name, _ in settings:
        head += [f"{name} us", "ratio"]
    head += ["status", "bound"]
    body = []
    notes = []
    for e in entries:
        row = [e.label, _us(e.published_s)]
        for _, priced in settings:
            p = priced[e.label]
            row += [_us(p.time_s), _ratio(p, e)]
        p0 = settings[0][1][e.label]
        row += [p0.status, p0.bound or "-"]
        body.append(row)
        for name, priced in settings:
            p = priced[e.label]
            for v in p.peak:
                notes.append(f"  !!! PEAK VIOLATION [{name}] {e.label}: {v}")
        if p0.config and (len(e.launches) > 1):
            notes.append(f"  {e.label}: {p0.config}")
        if p0.diag:
            notes.append(f"  {e.label}: {p0.diag}")
        for w in dict.fromkeys(p0.why):
            notes.append(f"  {e.label} [{p0.status}]: {w}")
    widths = [max(len(str(r[i])) for r in [head, *body]) for i in range(len(head))]
    lines = [f"== {sid}: {meta['title']}", f"   GPU {entries[0].gpu if entries else meta['gpu']}; {meta['source']}",
             f"   {meta['where']}"]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    lines.append(fmt.format(*head))
    lines.append(fmt.format(*["-" * w for w in widths]))
    lines += [fmt.format(*r) for r in body]
    lines += notes
    return lines


def summary_lines(title: str, groups: Mapping[str, Sequence[tuple[Entry, Priced]]]) -> list[str]:
    lines = [f"-- {title}", f"   {'series':<32} {'coverage':>8} {'spearman':>9} {'worst':>7} {'within 2x':>9} "
             f"{'geomean':>8} {'>peak':>5}"]
    for sid, rows in groups.items():
        s = summarize(rows)
        lines.append(f"   {sid:<32} {s.coverage:>8} {_f(s.rho):>9} {_f(s.worst, '{:.2f}'):>7} "
                     f"{f'{s.within}/{s.covered}':>9} {_f(s.geomean, '{:.2f}'):>8} {s.peak:>5}")
    return lines


Rows = Mapping[str, Sequence[tuple[Entry, Priced]]]


def goal_lines(held_out: Rows, all_settings: Mapping[str, Rows]) -> list[str]:
    lines = [f"-- goal (held-out constants): Spearman >= {GOAL_SPEARMAN} and every estimate within "
             f"{GOAL_FACTOR:g}x on each series, no estimate above peak"]
    met_all = True
    for sid, rows in held_out.items():
        s = summarize(rows)
        reasons = []
        if s.covered < s.n:
            reasons.append(f"{s.n - s.covered} kernel(s) without a complete estimate")
        if s.rho is None or s.rho < GOAL_SPEARMAN:
            reasons.append(f"Spearman {_f(s.rho)}")
        if s.within < s.covered:
            worst = _f(s.worst, "{:.2f}")
            reasons.append(f"{s.covered - s.within} estimate(s) outside {GOAL_FACTOR:g}x (worst {worst})")
        if s.peak:
            reasons.append(f"{s.peak} estimate(s) above peak")
        met_all &= not reasons
        lines.append(f"   {sid:<32} {'MET' if not reasons else 'NOT MET: ' + '; '.join(reasons)}")
    violations = sum(summarize(rows).peak for groups in all_settings.values() for rows in groups.values())
    lines.append(f"   overall: {'MET' if met_all else 'NOT MET'}; peak violations over all settings: {violations}"
                 + ("  !!! an estimate claims more than the hardware can do" if violations else ""))
    return lines


# ------------------------------------------------------------------------------------------------
# --gpu-measure: bundled implementations on the real GPU -> run store -> calibrate_from_store.


class GpuMeasureError(RuntimeError):
    """--gpu-measure cannot run here (no GPU, no nvcc, GPU not in the table, no usable timing)."""


def gpu_measure(tasks: Sequence[str], store_path: Path | None, trials: int, deadline_s: float,
                out_dir: Path) -> tuple[dict[str, float], str, list[str]]:
    """Evaluate the bundled implementations of ``tasks`` on this machine's GPU with the project's
    harness (back-end ``gpu``, timings cached in a run store), then fit the cost model's constants
    to those timings with ``calibrate_from_store``. Returns ``(constants, gpu name, report lines)``.
    Raises :class:`GpuMeasureError` with the reason when that cannot be done."""
    from veriforge.core.store import RunStore
    from veriforge.cuda.arch import UnknownGPUError, get_gpu
    from veriforge.cuda.calibrate import NoCalibrationDataError, calibrate_from_store, save_constants
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.evaluate.gpu import GpuBackend
    from veriforge.cuda.evaluate.gpu_build import detect_gpu
    from veriforge.cuda.tasks import bundled_tasks, load_task

    if shutil.which("nvidia-smi") is None:
        raise GpuMeasureError("--gpu-measure needs an NVIDIA GPU: nvidia-smi is not on PATH (no driver on this "
                              "machine). Run without --gpu-measure for the published-series figures.")
    reason = GpuBackend().unavailable_reason()
    if reason:
        raise GpuMeasureError(f"--gpu-measure needs an NVIDIA GPU and nvcc: {reason}")
    info = detect_gpu()
    if info is None:
        raise GpuMeasureError("--gpu-measure: nvidia-smi lists no GPU")
    try:
        gpu = get_gpu(info.name)
    except UnknownGPUError as exc:
        raise GpuMeasureError(f"--gpu-measure: this GPU ({info.name}) is not in veriforge.cuda.arch, so the model "
                              f"cannot price it: {exc}") from exc
    if store_path is None:
        store_path = out_dir / f"costmodel_fidelity_{gpu.name}.sqlite"
    store_path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"-- --gpu-measure on {info.name} ({gpu.name}); run store {store_path}"]
    specs = {load_task(f).id: f for f in bundled_tasks("c2cuda")}
    missing = [t for t in tasks if t not in specs]
    if missing:
        raise GpuMeasureError(f"--gpu-measure: unknown c2cuda task(s) {', '.join(missing)}")
    started = time.perf_counter()
    store = RunStore(store_path)
    n_ok = n_fail = 0
    for tid in tasks:
        spec = load_task(specs[tid])
        for impl in spec.implementations:
            if time.perf_counter() - started > deadline_s:
                lines.append(f"   deadline {deadline_s:.0f} s reached: stopped before {tid}/{impl.name}")
                break
            t0 = time.perf_counter()
            try:
                res = evaluate(spec, (spec.folder / impl.file).read_text(), backend="gpu", store=store, trials=trials,
                               estimate=False)
                ok = res.verdict.correct
                why = "" if ok else f" ({res.verdict.reason})"
            except Exception as exc:  # one failing implementation must not stop the measurement
                ok, why = False, f" (raised {type(exc).__name__}: {exc})"
            n_ok += ok
            n_fail += not ok
            lines.append(f"   {tid}/{impl.name}: {'correct' if ok else 'NOT correct'}{why} "
                         f"[{time.perf_counter() - t0:.1f} s]")
    lines.append(f"   {n_ok} correct, {n_fail} not; fitting on the stored timings")
    try:
        rep = calibrate_from_store(store, gpu.name, task_filter=set(tasks))
    except NoCalibrationDataError as exc:
        raise GpuMeasureError(f"--gpu-measure: no usable timing for calibration: {exc}") from exc
    const_path = out_dir / f"costmodel_constants_{gpu.name}.json"
    save_constants(rep.constants, const_path, gpu=gpu.name, fit_error=rep.fit_error)
    lines.append(f"   calibrate_from_store: {rep.n_pairs} pairs ({len(rep.skipped)} skipped); rms ln-error "
                 f"defaults {rep.default_rms_log:.3f} -> fitted {rep.fit_error.rms_log:.3f}; saved {const_path}")
    for s in rep.skipped[:10]:
        lines.append(f"   skipped: {s}")
    names = fit_params()
    consts = {n: float(getattr(rep.constants, n)) for n in names}
    return consts, gpu.name, lines


# ------------------------------------------------------------------------------------------------


def _git_describe() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def run(series_ids: Iterable[str] | None = None, use_nvcc: bool = True, do_fit: bool = True,
        measured: tuple[dict[str, float], str] | None = None, progress: bool = True) -> tuple[list[str], dict]:
    """Analyse, price and summarise; returns the report lines and the figures (for callers)."""
    from veriforge.cuda import costmodel

    started = time.perf_counter()
    series = load_series()
    problems = validate_series(series)
    if problems:
        raise SystemExit("series.toml is malformed:\n  " + "\n  ".join(problems))
    wanted = set(series_ids or [])
    if wanted:
        unknown = wanted - {s["id"] for s in series}
        if unknown:
            raise SystemExit(f"unknown series: {', '.join(sorted(unknown))}")
        series = [s for s in series if s["id"] in wanted]
    entries = build_entries(series, use_nvcc=use_nvcc, progress=progress)
    t_analysis = time.perf_counter() - started
    by_series: dict[str, list[Entry]] = {s["id"]: [e for e in entries if e.series == s["id"]] for s in series}

    settings: dict[str, dict[str, dict[str, Priced]]] = {"default": {}}
    fit_notes: list[str] = []
    for sid, es in by_series.items():
        settings["default"][sid] = {e.label: price_entry(e, None) for e in es}
    if do_fit and len(by_series) > 1:
        settings["held-out"] = {}
        for sid, es in by_series.items():
            train = [e for other, oes in by_series.items() if other != sid for e in oes]
            consts, how = fit_constants(train)
            fit_notes.append(f"   held out {sid}: {how}" + (f"; {_fmt_consts(consts)}" if consts else ""))
            settings["held-out"][sid] = {e.label: price_entry(e, consts) if consts else
                                         Priced(None, None, "error", why=[how]) for e in es}
        consts, how = fit_constants(entries)
        fit_notes.append(f"   all series (in-sample, reference only): {how}"
                         + (f"; {_fmt_consts(consts)}" if consts else ""))
        free, how_free = fit_constants(entries, bounded=False)
        fit_notes.append(f"   all series, unbounded (diagnostic): {how_free}"
                         + (f"; {_fmt_consts(free)}" if free else ""))
        fit_notes += calibrate_per_gpu(entries)
        if consts:
            settings["in-sample"] = {sid: {e.label: price_entry(e, consts) for e in es}
                                     for sid, es in by_series.items()}
    if measured:
        consts, gname = measured
        settings[f"gpu-fit:{gname}"] = {sid: {e.label: price_entry(e, consts) for e in es}
                                        for sid, es in by_series.items()}
        fit_notes.append(f"   gpu-fit:{gname} (calibrate_from_store on this machine's GPU): {_fmt_consts(consts)}")
    t_total = time.perf_counter() - started

    meta = {s["id"]: s for s in series}
    rows = {name: {sid: [(e, per[sid][e.label]) for e in by_series[sid]] for sid in by_series}
            for name, per in settings.items()}
    lines = ["Cost-model fidelity against published GPU measurements (benchmarks/costmodel_fidelity.py)",
             f"date {time.strftime('%Y-%m-%d %H:%M:%S')}; code {_git_describe()}; model "
             f"{getattr(costmodel, 'MODEL_VERSION', '?')}; ptxas {'on' if use_nvcc else 'off (--no-nvcc)'}",
             f"runtime {t_total:.1f} s (analysis {t_analysis:.1f} s) on {os.cpu_count()} CPU(s)",
             "ratio = estimated / published; 'held-out' = constants fitted on every other series "
             "(leave-one-series-out); 'in-sample' = fitted on all series (not a test)", ""]
    table_settings = [n for n in settings if n != "in-sample"]
    for sid, es in by_series.items():
        lines += series_table(sid, meta[sid], es, [(n, settings[n][sid]) for n in table_settings])
        if meta[sid].get("note"):
            lines.append(f"   note: {meta[sid]['note']}")
        lines.append(f"   timing: {meta[sid]['timing']}")
        lines.append("")
    for name, groups in rows.items():
        lines += summary_lines(f"summary, {name} constants", groups)
        pooled = [r for g in groups.values() for r in g]
        s = summarize(pooled)
        per = [summarize(g).rho for g in groups.values()]
        per = [v for v in per if v is not None]
        lines.append(f"   {'overall (pooled)':<32} {s.coverage:>8} {_f(s.rho):>9} {_f(s.worst, '{:.2f}'):>7} "
                     f"{f'{s.within}/{s.covered}':>9} {_f(s.geomean, '{:.2f}'):>8} {s.peak:>5}")
        lines.append(f"   mean per-series Spearman {_f(sum(per) / len(per) if per else None)}")
        lines.append("")
    if fit_notes:
        lines.append("-- fitted constants (" + ", ".join(fit_params()) + ")")
        lines += fit_notes
        lines.append("")
    if "held-out" in rows:
        lines += goal_lines(rows["held-out"], rows)
    else:
        lines.append("-- goal not evaluated: no held-out constants (needs >= 2 series and fitting)")
    figures = {name: {sid: summarize(g) for sid, g in groups.items()} for name, groups in rows.items()}
    return lines, figures


def _fmt_consts(c: Mapping[str, float] | None) -> str:
    if not c:
        return "-"
    return ", ".join(f"{k}={v:.4g}" for k, v in c.items())


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", default="", help="comma-separated series ids (default: all)")
    ap.add_argument("--no-nvcc", action="store_true", help="analyse without ptxas (register/occupancy defaults)")
    ap.add_argument("--no-fit", action="store_true", help="default constants only (no calibration)")
    ap.add_argument("--out", default=str(RESULTS_FILE), help="results file ('-' for none)")
    ap.add_argument("--quiet", action="store_true", help="no per-kernel progress on stderr")
    ap.add_argument("--gpu-measure", action="store_true",
                    help="also measure the bundled implementations on this machine's GPU and refit (needs a GPU)")
    ap.add_argument("--gpu-tasks", default=",".join(DEFAULT_GPU_TASKS), help="c2cuda tasks for --gpu-measure")
    ap.add_argument("--gpu-trials", type=int, default=5, help="trials per configuration for --gpu-measure")
    ap.add_argument("--gpu-deadline", type=float, default=480.0, help="seconds of GPU evaluation before stopping")
    ap.add_argument("--store", default="", help="run store for --gpu-measure (default: next to the results)")
    args = ap.parse_args(argv)

    out = None if args.out == "-" else Path(args.out)
    measured = None
    gpu_lines: list[str] = []
    if args.gpu_measure:
        try:
            consts, gname, gpu_lines = gpu_measure([t for t in args.gpu_tasks.split(",") if t],
                                                   Path(args.store) if args.store else None, args.gpu_trials,
                                                   args.gpu_deadline, (out or RESULTS_FILE).parent)
        except GpuMeasureError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        measured = (consts, gname)
    lines, _ = run([s for s in args.series.split(",") if s], use_nvcc=not args.no_nvcc, do_fit=not args.no_fit,
                   measured=measured, progress=not args.quiet)
    if gpu_lines:
        lines += ["", *gpu_lines]
    text = "\n".join(lines) + "\n"
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
