"""An analytic cost model: estimated run time of one kernel launch on a chosen GPU, without a GPU.

Search loops and rewards need to *rank* candidate kernels long before (or without ever) running
them on hardware, and they need to know *why* one is slower. This model turns the static
structure analysis (``veriforge.cuda.analysis``) into a time with a named bottleneck, using only
hardware facts from ``veriforge.cuda.arch`` and the occupancy calculator. The formula is in
``docs/costmodel.md``; in short, for one launch::

    t_dram    = dram_bytes / (peak_bw * dram_bw_fraction * f_mem)          # coalescing-inflated bytes
    t_l1      = (sectors / l1_sectors_per_clk + shared_wavefronts / warp_eff)
                / (busy_SMs * clock * f_pipe)                             # bank conflicts serialise here
    t_compute = flops / (peak_flops * fp_fraction * f_pipe * busy_SMs/SMs * warp_eff) + t_barriers
    time      = launch_overhead + tail * smooth_max(t_dram, t_l1, t_compute)

where ``f_mem`` (bytes in flight vs. bandwidth x latency, Little's law) and ``f_pipe`` (resident
warps vs. warps needed to hide pipeline latency) are the latency-hiding factors that low
occupancy, small grids and narrow accesses lower. Every constant is a field of
:class:`CostConstants`, settable per call and fittable to GPU measurements with :func:`calibrate`.

Every number this module produces is ``estimated``; nothing here is ever a measurement. Inputs
the analysis could not determine are not guessed silently: the model substitutes a stated
default and records it in :attr:`Estimate.assumptions`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from veriforge.core import duck
from veriforge.cuda.arch import GPU, get_gpu, parse_arch_name
from veriforge.errors import CudaError

if TYPE_CHECKING:
    from veriforge.core.types import Measurement

__all__ = [
    "DEFAULT_CONSTANTS",
    "DEFAULT_FIT_PARAMS",
    "MODEL_VERSION",
    "Calibration",
    "CostConstants",
    "CostInputs",
    "CostModelError",
    "Estimate",
    "FitError",
    "calibrate",
    "estimate",
    "extract_inputs",
    "rank",
]

MODEL_VERSION = "cost-model-v1"
SECTOR_BYTES = 32


class CostModelError(CudaError, ValueError):
    """The report gives the model nothing to estimate from, or describes a launch that cannot run."""


@dataclass(frozen=True)
class CostConstants:
    """Every tunable number of the model, with the reasoning for its default.

    Defaults are set from public hardware facts (see docs/costmodel.md); :func:`calibrate` fits
    them to measurements of a particular GPU. All fields are positive floats.
    """

    #: Fraction of datasheet DRAM bandwidth a streaming kernel reaches (H200: 4.3 of 4.8 TB/s measured).
    dram_bw_fraction: float = 0.9
    #: Fraction of peak FP32 (CUDA-core FMA) rate reachable by real instruction mixes.
    fp32_fraction: float = 0.75
    #: Fraction of peak tensor-core rate (fp16/bf16) reachable.
    tensor_fraction: float = 0.7
    #: DRAM latency under load (ns): Little's law needs bandwidth x latency bytes in flight.
    mem_latency_ns: float = 500.0
    #: Independent global requests a warp keeps in flight (loop unrolling, stores are fire-and-forget).
    mlp_per_warp: float = 2.0
    #: Resident warps per SM needed to hide FMA / L1 pipeline latency (4 schedulers x ~4-cycle chains).
    warps_to_hide_latency: float = 16.0
    #: Global-memory sectors the L1/TEX unit moves per clock per SM (128 B/clk).
    l1_sectors_per_clk: float = 4.0
    #: Shared-memory wavefronts per clock per SM (one 128-byte wavefront; an n-way conflict is n).
    shared_wavefronts_per_clk: float = 1.0
    #: Warp execution efficiency assumed for a branch the analysis found divergent (both paths run).
    divergent_branch_efficiency: float = 0.5
    #: Cycles a block loses per executed ``__syncthreads`` (drain + restart), hidden by other blocks.
    barrier_cycles: float = 40.0
    #: Fixed cost of one launch as the GPU timer sees it (launch + block scheduling ramp), seconds.
    launch_overhead_s: float = 2.5e-6
    #: Exponent of the smooth max combining DRAM, L1 and compute times (large = roofline max).
    overlap_p: float = 4.0
    #: Sharpness of the smooth min(x, 1) used for latency-hiding factors.
    saturation_sharpness: float = 4.0
    #: A bound resource whose latency-hiding factor is below this is reported as "latency" bound.
    latency_bound_threshold: float = 0.5
    #: Registers per thread assumed when neither the report's resources nor occupancy give them.
    default_registers: float = 32.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise CostModelError(
                    f"cost constant {f.name} must be a positive finite number, not {value!r}"
                )

    def replace(self, **changes: float) -> CostConstants:
        """A copy with some constants changed (unknown names are an error)."""
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise CostModelError(f"unknown cost constants: {', '.join(sorted(unknown))}")
        return replace(self, **changes)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CostConstants:
        return DEFAULT_CONSTANTS.replace(**{k: float(v) for k, v in data.items()})


DEFAULT_CONSTANTS = CostConstants()


# ---------------------------------------------------------------------------------------------
# Reading the analysis report (duck-typed: the report object or its to_dict()).


_get = duck.get
_num = duck.finite


def _dims(value: Any, what: str) -> tuple[int, int, int]:
    if isinstance(value, int | float):
        value = (value,)
    if not isinstance(value, Sequence) or not value or len(value) > 3:
        raise CostModelError(f"report has no usable {what} (got {value!r})")
    dims = [int(v) for v in value] + [1] * (3 - len(value))
    if any(d <= 0 for d in dims):
        raise CostModelError(f"report {what} {tuple(dims)} has a non-positive dimension")
    return dims[0], dims[1], dims[2]


@dataclass(frozen=True)
class CostInputs:
    """What the model needs from one analysis report, for one GPU.

    Extracted once (occupancy included) so that :func:`calibrate` can re-evaluate the formula for
    many candidate constants cheaply. ``assumptions`` lists every default substituted for an
    unknown.
    """

    kernel: str
    gpu: str
    blocks: int
    block_threads: int
    warps_per_block: int
    active_blocks_per_sm: int
    occupancy: float
    dram_bytes: float
    useful_bytes: float
    global_requests: float
    global_sectors: float
    shared_requests: float
    shared_wavefronts: float
    flops: float
    dtype: str
    warp_efficiency: float | None  # from the report's features; None: derive from divergent branches
    divergence: float  # divergent branches, each weighted by the fraction of warps that diverge there
    barrier_executions_per_block: float
    assumptions: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["assumptions"] = list(self.assumptions)
        return out


def _occupancy(
    report: Any, gpu: GPU, threads: int, constants: CostConstants, notes: list[str]
) -> tuple[int, float]:
    """Active blocks per SM and occupancy on ``gpu``'s architecture."""
    occ = _get(report, "occupancy")
    rep_arch = _get(report, "arch")
    same_arch = rep_arch is None or parse_arch_name(rep_arch) == gpu.arch
    blocks = _num(_get(occ, "active_blocks_per_sm"))
    frac = _num(_get(occ, "occupancy"))
    if occ is not None and blocks is not None and same_arch:
        return int(blocks), frac if frac is not None else 0.0

    from veriforge.cuda.occupancy import OccupancyInputError, theoretical

    res = _get(report, "resources")
    regs = _num(_get(res, "registers"))
    smem = _num(_get(res, "smem_static")) or 0.0
    dyn = _num(_get(report, "dynamic_smem")) or _num(_get(res, "smem_dynamic")) or 0.0
    if regs is None:
        regs = constants.default_registers
        notes.append(f"registers per thread unknown (no ptxas resources): assumed {int(regs)}")
        traits = _get(report, "traits") or {}
        smem = smem or (_num(_get(traits, "shared_mem_static_bytes")) or 0.0)
    elif not same_arch:
        notes.append(
            f"occupancy recomputed for {gpu.arch} from the report's {_get(report, 'arch')} resources"
        )
    try:
        o = theoretical(gpu.arch, threads, int(regs), int(smem), int(dyn))
    except OccupancyInputError as exc:
        raise CostModelError(f"launch cannot run on {gpu.name}: {exc}") from exc
    return o.active_blocks_per_sm, o.occupancy


def extract_inputs(
    report: Any,
    gpu: str | GPU = "H100-SXM",
    *,
    constants: CostConstants | None = None,
    dtype: str | None = None,
) -> CostInputs:
    """Collect the model's inputs from an analysis report (object or ``to_dict()``) for ``gpu``."""
    c = constants or DEFAULT_CONSTANTS
    g = get_gpu(gpu)
    notes: list[str] = []
    grid = _dims(_get(report, "grid"), "grid")
    block = _dims(_get(report, "block"), "block")
    blocks = grid[0] * grid[1] * grid[2]
    threads = block[0] * block[1] * block[2]
    warps_per_block = -(-threads // 32)
    active, occ = _occupancy(report, g, threads, c, notes)
    if active <= 0:
        raise CostModelError(
            f"no block of {threads} threads fits on an SM of {g.name} ({g.arch}): the launch cannot run"
        )

    dram = useful = requests = sectors = 0.0
    unknown_traffic: list[str] = []
    for acc in _get(report, "global_accesses") or ():
        line = _get(acc, "line")
        elem = _num(_get(acc, "elem_bytes")) or 4.0
        width = _num(_get(acc, "vector_width")) or 1.0
        lane_bytes = 32 * elem * width  # what one fully active warp request asks for
        req = _num(_get(acc, "requests"))
        spr = _num(_get(acc, "sectors_per_request"))
        eff = _num(_get(acc, "efficiency"))
        moved = _num(_get(acc, "bytes"))  # bytes moved in sectors (the analysis report's meaning)
        asked = _num(_get(acc, "useful_bytes"))
        if spr is None and req and moved is not None:
            spr = moved / req / SECTOR_BYTES
        if spr is None and eff:
            spr = lane_bytes / eff / SECTOR_BYTES
        if spr is None:
            spr = math.ceil(lane_bytes / SECTOR_BYTES)
            why = _get(acc, "unknown") or "coalescing unknown"
            notes.append(f"global {_get(acc, 'kind', 'access')} at line {line}: {why}; assumed coalesced")
        if req is None and moved is not None:
            req = moved / (spr * SECTOR_BYTES) if spr else None
        if req is None:
            unknown_traffic.append(f"line {line}")
            continue
        acc_moved = req * spr * SECTOR_BYTES
        requests += req
        sectors += req * spr
        dram += acc_moved
        if asked is not None:
            useful += asked
        elif eff is not None:
            useful += acc_moved * eff
        else:
            useful += min(acc_moved, req * lane_bytes)
    if unknown_traffic:
        notes.append(f"global accesses with unknown request counts left out: {', '.join(unknown_traffic)}")
    if requests == 0:
        total = _num(_get(report, "global_bytes"))
        if total:
            dram = useful = total
            sectors = total / SECTOR_BYTES
            requests = sectors / 4
            notes.append("no per-access traffic: used the report's global_bytes, assumed fully coalesced")

    sh_req = sh_wave = 0.0
    for acc in _get(report, "shared_accesses") or ():
        req = _num(_get(acc, "requests"))
        if req is None:
            notes.append(f"shared access at line {_get(acc, 'line')}: request count unknown, left out")
            continue
        ways = _num(_get(acc, "wavefronts_per_request")) or _num(_get(acc, "bank_conflict_ways"))
        if ways is None:
            ways = 1.0
            notes.append(f"shared access at line {_get(acc, 'line')}: bank conflicts unknown, assumed none")
        sh_req += req
        sh_wave += req * max(1.0, ways)

    flops = _num(_get(report, "flops"))
    if flops is None:
        flops = 0.0
        notes.append("FLOP count unknown: compute time taken as 0")

    features = _get(report, "features") or {}
    warp_eff = _num(_get(features, "warp_execution_efficiency"))
    divergence = 0.0
    for br in _get(report, "branches") or ():
        d = _get(br, "divergent")
        if d is True:
            frac = _num(_get(br, "divergent_fraction"))
            divergence += 1.0 if frac is None else min(1.0, max(0.0, frac))
        elif d is None:
            notes.append(f"branch at line {_get(br, 'line')}: divergence unknown, assumed uniform")

    barrier_execs = 0.0
    counted_once = 0
    for bar in _get(report, "barriers") or ():
        n = None
        for key in ("executions", "count", "trips"):
            n = _num(_get(bar, key))
            if n is not None:
                break
        if n is None:
            n, counted_once = 1.0, counted_once + 1
        barrier_execs += n
    if counted_once:
        notes.append(f"{counted_once} barrier site(s) without an execution count: counted once per block")
    if not (_get(report, "barriers") or ()):
        barrier_execs = _num(_get(features, "barriers")) or 0.0

    traits = _get(report, "traits") or {}
    kind = (dtype or _get(traits, "dtype") or "fp32").lower()
    if kind not in ("fp32", "fp16", "bf16"):
        notes.append(f"no peak rate for dtype {kind!r} in the GPU table: used FP32")
        kind = "fp32"
    if kind == "bf16" and g.bf16_tensor_tflops is None:
        notes.append(f"{g.name} has no bf16 tensor cores: used FP32 rate")
        kind = "fp32"

    if dram == 0 and flops == 0 and sh_wave == 0:
        raise CostModelError(
            "report has neither global traffic, shared accesses nor FLOPs the model can use"
            + (f" (unknown: {', '.join(_get(report, 'unknowns') or [])})" if _get(report, "unknowns") else "")
        )
    return CostInputs(
        kernel=str(_get(report, "kernel", "") or ""),
        gpu=g.name,
        blocks=blocks,
        block_threads=threads,
        warps_per_block=warps_per_block,
        active_blocks_per_sm=active,
        occupancy=occ,
        dram_bytes=dram,
        useful_bytes=useful,
        global_requests=requests,
        global_sectors=sectors,
        shared_requests=sh_req,
        shared_wavefronts=sh_wave,
        flops=flops,
        dtype=kind,
        warp_efficiency=warp_eff,
        divergence=divergence,
        barrier_executions_per_block=barrier_execs,
        assumptions=tuple(notes),
    )


# ---------------------------------------------------------------------------------------------
# The formula.


def _smooth_min1(x: float, p: float) -> float:
    """min(x, 1), smoothed so that a little more parallelism always helps a little (x >= 0)."""
    if x <= 0:
        return 0.0
    return x / (1.0 + x**p) ** (1.0 / p)


def _smooth_max(values: Iterable[float], p: float) -> float:
    vals = [v for v in values if v > 0]
    if not vals:
        return 0.0
    top = max(vals)
    return top * sum((v / top) ** p for v in vals) ** (1.0 / p)


@dataclass(frozen=True)
class Estimate:
    """Estimated time of one launch and where it goes. ``provenance`` is always ``estimated``."""

    kernel: str
    gpu: str
    time_s: float
    memory_time_s: float
    compute_time_s: float
    latency_factor: float
    waves: int
    launch_overhead_s: float
    bound: str  # "memory" | "compute" | "latency"
    breakdown: dict[str, float]
    assumptions: list[str]
    constants: dict[str, float]
    provenance: str = "estimated"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_measurement(self) -> Measurement:
        """This estimate as a :class:`~veriforge.core.types.Measurement` (provenance ``estimated``)."""
        from veriforge.core.types import Measurement

        return Measurement(
            name="time_s",
            value=self.time_s,
            unit="s",
            provenance="estimated",
            backend=f"{MODEL_VERSION}:{self.gpu}",
            details={
                "kernel": self.kernel,
                "bound": self.bound,
                "memory_time_s": self.memory_time_s,
                "compute_time_s": self.compute_time_s,
                "latency_factor": self.latency_factor,
                "waves": self.waves,
                "launch_overhead_s": self.launch_overhead_s,
                "breakdown": dict(self.breakdown),
                "assumptions": list(self.assumptions),
            },
        )


@dataclass(frozen=True)
class _Wave:
    """Times of one wave of blocks (all its blocks resident at once) and its latency-hiding factors."""

    t_dram: float
    t_l1: float
    t_flops: float
    t_sync: float
    f_mem: float
    f_pipe: float
    busy_sms: int
    warps_per_sm: int
    in_flight: float

    @property
    def t_compute(self) -> float:
        return self.t_flops + self.t_sync


def _evaluate(q: CostInputs, g: GPU, c: CostConstants) -> Estimate:
    sms = g.sm_count
    clock_hz = g.boost_clock_mhz * 1e6
    peak_bw = g.dram_bandwidth_gbs * 1e9
    if q.dtype == "fp16":
        peak_flops, fp_fraction = g.fp16_tensor_tflops * 1e12, c.tensor_fraction
    elif q.dtype == "bf16":
        peak_flops, fp_fraction = float(g.bf16_tensor_tflops or g.fp32_tflops) * 1e12, c.tensor_fraction
    else:
        peak_flops, fp_fraction = g.fp32_tflops * 1e12, c.fp32_fraction
    if q.warp_efficiency is not None:
        warp_eff = min(1.0, max(1.0 / 32, q.warp_efficiency))
    else:
        warp_eff = max(1.0 / 32, c.divergent_branch_efficiency**q.divergence)
    bytes_per_request = q.dram_bytes / q.global_requests if q.global_requests else 0.0
    needed = peak_bw * c.mem_latency_ns * 1e-9  # Little's law: bytes in flight for full bandwidth
    l1_cycles = (
        q.global_sectors / c.l1_sectors_per_clk + q.shared_wavefronts / c.shared_wavefronts_per_clk / warp_eff
    )

    def wave(blocks: int) -> _Wave:
        """One wave of ``blocks`` resident blocks doing ``blocks / q.blocks`` of the launch's work.

        A partial wave spreads its blocks over the SMs (fewer per SM, or fewer busy SMs), so it
        has less parallelism to hide latency with: that is the tail effect, no extra constant.
        """
        share = blocks / q.blocks
        busy = min(sms, blocks)
        per_sm = min(q.active_blocks_per_sm, -(-blocks // sms))
        warps = per_sm * q.warps_per_block
        in_flight = busy * warps * c.mlp_per_warp * bytes_per_request
        f_mem = _smooth_min1(in_flight / needed, c.saturation_sharpness) if q.dram_bytes else 1.0
        f_pipe = _smooth_min1(warps / c.warps_to_hide_latency, c.saturation_sharpness)
        t_dram = share * q.dram_bytes / (peak_bw * c.dram_bw_fraction * f_mem) if q.dram_bytes else 0.0
        t_l1 = share * l1_cycles / (busy * clock_hz * f_pipe) if l1_cycles else 0.0
        t_flops = (
            share * q.flops / (peak_flops * fp_fraction * f_pipe * (busy / sms) * warp_eff)
            if q.flops
            else 0.0
        )
        # A barrier stalls its block until the slowest warp arrives; the other resident blocks of
        # the SM keep issuing meanwhile, so the exposed cost shrinks with blocks per SM.
        t_sync = q.barrier_executions_per_block * c.barrier_cycles / clock_hz / per_sm
        return _Wave(t_dram, t_l1, t_flops, t_sync, f_mem, f_pipe, busy, warps, in_flight)

    blocks_per_wave = sms * q.active_blocks_per_sm
    full_waves, rest = divmod(q.blocks, blocks_per_wave)
    runs = [(full_waves, wave(blocks_per_wave))] if full_waves else []
    if rest:
        runs.append((1, wave(rest)))
    waves = full_waves + (1 if rest else 0)
    exact_waves = q.blocks / blocks_per_wave
    main = runs[0][1]

    def total(attr: str) -> float:
        return sum(n * getattr(w, attr) for n, w in runs)

    t_dram, t_l1, t_flops, t_sync = total("t_dram"), total("t_l1"), total("t_flops"), total("t_sync")
    t_compute = t_flops + t_sync
    memory_time = sum(n * _smooth_max((w.t_dram, w.t_l1), c.overlap_p) for n, w in runs)
    core = sum(n * _smooth_max((w.t_dram, w.t_l1, w.t_compute), c.overlap_p) for n, w in runs)
    # Tail: how much longer than if the partial wave's work ran at full-wave throughput.
    ideal = exact_waves * _smooth_max((main.t_dram, main.t_l1, main.t_compute), c.overlap_p)
    tail = core / ideal if full_waves and ideal > 0 else 1.0
    time_s = c.launch_overhead_s + core

    parts = {"dram": t_dram, "l1": t_l1, "compute": t_compute}
    top = max(parts, key=lambda k: parts[k])
    latency_factor = main.f_mem if top == "dram" else main.f_pipe
    if core == 0 or core < c.launch_overhead_s:
        bound = "latency"  # launch overhead dominates: nothing to hide it behind
    elif latency_factor < c.latency_bound_threshold:
        bound = "latency"
    else:
        bound = "compute" if top == "compute" else "memory"
    busy_sms, warps_per_sm, f_mem, f_pipe, in_flight = (
        main.busy_sms,
        main.warps_per_sm,
        main.f_mem,
        main.f_pipe,
        main.in_flight,
    )

    breakdown = {
        "dram_time_s": t_dram,
        "l1_time_s": t_l1,
        "flop_time_s": t_flops,
        "barrier_time_s": t_sync,
        "core_time_s": core,
        "tail_factor": tail,
        "exact_waves": exact_waves,
        "f_mem": f_mem,
        "f_pipe": f_pipe,
        "warp_efficiency": warp_eff,
        "busy_sms": float(busy_sms),
        "warps_per_sm": float(warps_per_sm),
        "active_blocks_per_sm": float(q.active_blocks_per_sm),
        "occupancy": q.occupancy,
        "dram_bytes": q.dram_bytes,
        "useful_bytes": q.useful_bytes,
        "coalescing_inflation": q.dram_bytes / q.useful_bytes if q.useful_bytes else 1.0,
        "global_sectors": q.global_sectors,
        "shared_wavefronts": q.shared_wavefronts,
        "bank_conflict_inflation": q.shared_wavefronts / q.shared_requests if q.shared_requests else 1.0,
        "flops": q.flops,
        "bytes_in_flight": in_flight,
        "bytes_in_flight_needed": needed,
    }
    return Estimate(
        kernel=q.kernel,
        gpu=g.name,
        time_s=time_s,
        memory_time_s=memory_time,
        compute_time_s=t_compute,
        latency_factor=latency_factor,
        waves=waves,
        launch_overhead_s=c.launch_overhead_s,
        bound=bound,
        breakdown=breakdown,
        assumptions=list(q.assumptions),
        constants=c.to_dict(),
    )


def estimate(
    report: Any,
    gpu: str | GPU = "H100-SXM",
    *,
    constants: CostConstants | Mapping[str, float] | None = None,
    dtype: str | None = None,
) -> Estimate:
    """Estimated time of one launch described by ``report`` (an analysis report or its ``to_dict()``,
    or :class:`CostInputs`) on ``gpu``. ``constants`` overrides the defaults (a
    :class:`CostConstants` or a dict of the fields to change); ``dtype`` ("fp32", "fp16", "bf16")
    picks the peak rate FLOPs are divided by (default: the report's ``traits['dtype']`` or fp32).
    """
    c = _constants(constants)
    g = get_gpu(gpu)
    q = report if isinstance(report, CostInputs) else extract_inputs(report, g, constants=c, dtype=dtype)
    return _evaluate(q, g, c)


def rank(reports: Sequence[Any], gpu: str | GPU = "H100-SXM", **kwargs: Any) -> list[int]:
    """Indices of ``reports`` from fastest to slowest estimated time."""
    times = [estimate(r, gpu, **kwargs).time_s for r in reports]
    return sorted(range(len(reports)), key=lambda i: times[i])


def _constants(constants: CostConstants | Mapping[str, float] | None) -> CostConstants:
    if constants is None:
        return DEFAULT_CONSTANTS
    if isinstance(constants, CostConstants):
        return constants
    return CostConstants.from_dict(constants)


# ---------------------------------------------------------------------------------------------
# Calibration: fit constants to measured times (least squares on log time, Levenberg-Marquardt).

#: Constants fitted by default: the ones measurements of ordinary kernels can identify.
DEFAULT_FIT_PARAMS: tuple[str, ...] = (
    "dram_bw_fraction",
    "fp32_fraction",
    "mem_latency_ns",
    "shared_wavefronts_per_clk",
    "launch_overhead_s",
)


@dataclass(frozen=True)
class FitError:
    """How well the fitted model reproduces the measurements (errors of natural-log time)."""

    rms_log: float  # root-mean-square of ln(estimated / measured)
    max_abs_log: float
    median_ratio: float  # median of estimated / measured
    initial_rms_log: float  # before fitting (the starting constants)
    n: int
    params: tuple[str, ...]
    residuals: tuple[float, ...]  # ln(estimated / measured) per pair, in input order
    iterations: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Calibration(NamedTuple):
    """Result of :func:`calibrate`; unpacks as ``constants, fit_error``."""

    constants: CostConstants
    fit_error: FitError


def calibrate(
    pairs: Sequence[tuple[Any, float]],
    gpu: str | GPU = "H100-SXM",
    *,
    params: Sequence[str] = DEFAULT_FIT_PARAMS,
    start: CostConstants | None = None,
    max_iter: int = 200,
    tol: float = 1e-10,
) -> Calibration:
    """Fit ``params`` of the model to ``(report, measured_time_s)`` pairs for one GPU.

    Minimises the sum of squared ``ln(estimate / measured)`` (relative error, so a 5 us kernel and
    a 5 ms kernel weigh the same) over the logarithms of the chosen constants (keeps them positive)
    with Levenberg-Marquardt and a finite-difference Jacobian; numpy only. Returns the fitted
    constants and a :class:`FitError`. Use at least as many varied kernels (memory-bound, compute-
    bound, tiny, low-occupancy) as parameters, or the fit is underdetermined.
    """
    import numpy as np

    c0 = start or DEFAULT_CONSTANTS
    g = get_gpu(gpu)
    names = tuple(params)
    unknown = set(names) - set(c0.to_dict())
    if unknown:
        raise CostModelError(f"cannot fit unknown constants: {', '.join(sorted(unknown))}")
    if not pairs:
        raise CostModelError("calibration needs at least one (report, measured time) pair")
    inputs: list[CostInputs] = []
    measured: list[float] = []
    for report, t in pairs:
        if not (isinstance(t, int | float) and math.isfinite(t) and t > 0):
            raise CostModelError(f"measured time must be a positive number of seconds, not {t!r}")
        inputs.append(report if isinstance(report, CostInputs) else extract_inputs(report, g, constants=c0))
        measured.append(float(t))
    log_t = np.log(np.array(measured))

    def consts(theta: np.ndarray) -> CostConstants:
        return c0.replace(**{n: float(math.exp(v)) for n, v in zip(names, theta, strict=True)})

    def residuals(theta: np.ndarray) -> np.ndarray:
        try:
            c = consts(theta)
        except CostModelError:
            return np.full(len(inputs), 1e6)
        est = np.array([_evaluate(q, g, c).time_s for q in inputs])
        return np.log(est) - log_t

    theta = np.log(np.array([getattr(c0, n) for n in names], dtype=float))
    r = residuals(theta)
    initial = float(np.sqrt(np.mean(r**2)))
    cost = float(r @ r)
    lam = 1e-3
    iterations = 0
    for _ in range(max_iter):
        iterations += 1
        jac = np.empty((len(inputs), len(names)))
        for j in range(len(names)):
            h = 1e-6 * max(1.0, abs(theta[j]))
            step = theta.copy()
            step[j] += h
            jac[:, j] = (residuals(step) - r) / h
        jtj = jac.T @ jac
        grad = jac.T @ r
        improved = False
        while lam < 1e12:
            a = jtj + lam * np.diag(np.diag(jtj) + 1e-12)
            try:
                delta = -np.linalg.solve(a, grad)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            new_theta = theta + np.clip(delta, -2.0, 2.0)
            new_r = residuals(new_theta)
            new_cost = float(new_r @ new_r)
            if new_cost < cost:
                converged = cost - new_cost < tol * max(cost, 1e-30) or float(np.max(np.abs(delta))) < 1e-10
                theta, r, cost = new_theta, new_r, new_cost
                lam = max(lam / 10, 1e-12)
                improved = True
                break
            lam *= 10
        if not improved or converged or cost < 1e-24:
            break

    fitted = consts(theta)
    abs_r = np.abs(r)
    fit = FitError(
        rms_log=float(np.sqrt(np.mean(r**2))),
        max_abs_log=float(abs_r.max()),
        median_ratio=float(np.exp(np.median(r))),
        initial_rms_log=initial,
        n=len(inputs),
        params=names,
        residuals=tuple(float(v) for v in r),
        iterations=iterations,
    )
    return Calibration(fitted, fit)
