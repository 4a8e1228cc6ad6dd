"""An analytic cost model: estimated run time of one kernel launch on a chosen GPU, without a GPU.

Search loops and rewards need to *rank* candidate kernels long before (or without ever) running
them on hardware, and they need to know *why* one is slower. This model turns the static
structure analysis (``veriforge.cuda.analysis``) into a time with a named bottleneck, using only
hardware facts from ``veriforge.cuda.arch`` and the occupancy calculator. The formula is in
``docs/costmodel.md``; in short, for each wave of *working* blocks (idle ones cost scheduling only)::

    t_dram    = dram_bytes / (peak_bw * dram_bw_fraction * f_mem)   # after L1 and L2 reuse
    t_l2      = l2_sectors / (l2_sectors_per_clk_per_sm * busy_SMs * clock * f_pipe)
    t_l1      = (l1_passes / l1_requests_per_clk + shared_wavefronts / warp_eff) / (busy_SMs * clock * f_pipe)
    t_compute = flops / (peak_flops * fp_fraction * f_pipe * busy_SMs/SMs * warp_eff) + t_barriers
    t_atomic  = hottest-address operations / same-address rate + all atomics / L2 atomic rate
    time      = launch_overhead + sum over waves of smooth_max(t_dram, t_l1, t_l2, t_compute, t_atomic)

where ``f_mem`` (Little's law) and ``f_pipe`` (warps that do work vs warps needed to hide pipeline
latency) are the latency-hiding factors. Every constant is a field of :class:`CostConstants`,
settable per call and fittable to GPU measurements with :func:`calibrate`.

Every number this module produces is ``estimated``; nothing here is ever a measurement. Work the
analysis could not count is never priced at zero: the estimate is then *unknown* (``time_s`` None,
``lower_bound_s`` for the counted part); parts it counted but could not resolve are priced at their
worst case (status ``upper_bound``); defaults substituted for facts (registers) are listed in
:attr:`Estimate.assumptions`. No estimate may imply more than the GPU's peak (:class:`PhysicalLimitError`).
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
    "PhysicalLimitError",
    "calibrate",
    "estimate",
    "extract_inputs",
    "rank",
]

MODEL_VERSION = "cost-model-v2"
SECTOR_BYTES = 32


class CostModelError(CudaError, ValueError):
    """The report gives the model nothing to estimate from, or describes a launch that cannot run."""


#: Constants that are shares of a physical peak (or of a cache): never above 1.
_AT_MOST_ONE = ("dram_bw_fraction", "fp32_fraction", "tensor_fraction", "l2_usable_fraction",
                "l1_usable_fraction", "divergent_branch_efficiency")


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
    #: Independent global loads a warp keeps in flight when the report cannot tell (hand-built reports).
    mlp_per_warp: float = 2.0
    #: At most this many: a warp's loads between two barriers are independent up to what the
    #: compiler unrolls and the scoreboard tracks.
    max_mlp_per_warp: float = 4.0
    #: Resident warps per SM needed to hide FMA / L1 pipeline latency (4 schedulers x ~4-cycle chains).
    warps_to_hide_latency: float = 16.0
    #: Global-memory sectors the L1/TEX unit moves per clock per SM (128 B/clk).
    l1_sectors_per_clk: float = 4.0
    #: Shared-memory wavefronts per clock per SM (one 128-byte wavefront; an n-way conflict is n).
    shared_wavefronts_per_clk: float = 1.0
    #: Warp execution efficiency assumed for a branch the analysis found divergent (both paths run).
    divergent_branch_efficiency: float = 0.5
    #: Cycles a block loses per executed ``__syncthreads``: the drain, and the shared-memory round
    #: trip of the step it closes (load, arithmetic, store), hidden only by other resident blocks.
    barrier_cycles: float = 100.0
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
    #: Warp-level global memory instructions the L1/TEX unit accepts per clock per SM (a request
    #: of up to l1_sectors_per_clk sectors is one pass; a broadcast load still costs a pass).
    l1_requests_per_clk: float = 0.5
    #: Further 128-byte lines per clock per SM one request's tag stage handles (uncoalesced = 32 lines).
    l1_lines_per_clk: float = 1.0
    #: Sectors per clock per SM the L2 delivers to an SM on L1 misses (24 B/clk/SM).
    l2_sectors_per_clk_per_sm: float = 0.75
    #: L2 transactions (one per 128-byte line a request touches) per clock per SM of the GPU: a
    #: scattered 4-byte store is 32 transactions carrying 4 useful bytes each (naive transpose).
    l2_transactions_per_clk_per_sm: float = 0.25
    #: Share of the L2 a kernel's reused data can keep (the rest: other data, set conflicts).
    l2_usable_fraction: float = 0.6
    #: Share of an SM's unified L1/shared capacity (minus shared memory) that holds reused lines.
    l1_usable_fraction: float = 0.6
    #: Atomic read-modify-writes per clock one address can take (they serialise at its L2 slice).
    atomic_same_address_per_clk: float = 0.5
    #: Atomic read-modify-writes per clock the whole L2 can take when addresses are scattered.
    atomic_ops_per_clk: float = 64.0
    #: Cycles an SM spends on a block that exits without doing anything (scheduling, bounds check).
    idle_block_cycles: float = 200.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise CostModelError(
                    f"cost constant {f.name} must be a positive finite number, not {value!r}"
                )
        for name in _AT_MOST_ONE:
            if getattr(self, name) > 1.0:
                # a fraction of a peak above 1 would let an estimate beat the hardware
                raise CostModelError(f"cost constant {name} is a fraction of a peak and must be <= 1, "
                                     f"not {getattr(self, name)!r}")

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
    #: Global requests (L1 passes) and the further 128-byte lines they touch (uncoalesced ones).
    l1_requests: float = 0.0
    l1_extra_lines: float = 0.0
    #: L2 transactions: lines touched by the requests that miss L1.
    l2_transactions: float = 0.0
    #: Global load requests per working warp between two barriers: the loads it can keep in flight.
    loads_per_warp_phase: float | None = None
    #: Bytes that miss L1 and reach L2; None: no reuse information, everything reaches L2 and DRAM.
    l2_bytes: float | None = None
    #: Per array: (hull bytes, L2 bytes, block hull bytes, grid dims the addresses depend on).
    arrays: tuple[tuple[float, float, float, tuple[int, ...]], ...] = field(default=())
    #: Bytes one block keeps live between neighbouring iterations (L1 reuse needs them resident).
    l1_live_bytes_per_block: float = 0.0
    grid: tuple[int, int, int] = (1, 1, 1)
    #: Idle threads: the share of blocks that do any work and the working warps of such a block.
    active_block_fraction: float = 1.0
    active_warps_per_block: float | None = None
    #: Global atomics: lane operations, and those that hit the hottest single address.
    atomic_ops: float = 0.0
    atomic_hot_ops: float = 0.0
    shared_bytes_per_block: float = 0.0
    #: Work the analysis saw but could not count (accesses with unknown request counts, unknown FLOPs...).
    #: Non-empty means the estimate prices only part of the launch: its time is unknown, a lower bound.
    uncovered: tuple[str, ...] = field(default=())
    #: Parts the analysis could not resolve that were priced at their worst case (e.g. unknown
    #: coalescing as one sector per lane): the time is then an upper bound, safe to minimise.
    worst_case: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["assumptions"] = list(self.assumptions)
        out["uncovered"] = list(self.uncovered)
        out["worst_case"] = list(self.worst_case)
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

    uncovered: list[str] = [str(u) for u in (_get(report, "uncounted") or ())]
    worst: list[str] = [f"{u} (an upper bound)" for u in (_get(report, "upper_bounded") or ())]
    dram = useful = requests = sectors = 0.0
    l1_req = l1_lines = load_req = l2_total = l2_tx = live = atomic_ops = atomic_hot = 0.0
    l2_known = True
    accesses = list(_get(report, "global_accesses") or ())
    for acc in accesses:
        line = _get(acc, "line")
        elem = _num(_get(acc, "elem_bytes")) or 4.0
        width = _num(_get(acc, "vector_width")) or 1.0
        lane_bytes = 32 * elem * width  # what one fully active warp request asks for
        req = _num(_get(acc, "requests"))
        spr = _num(_get(acc, "sectors_per_request"))
        eff = _num(_get(acc, "efficiency"))
        moved = _num(_get(acc, "bytes"))  # bytes moved in sectors (the analysis report's meaning)
        asked = _num(_get(acc, "useful_bytes"))
        if req == 0:
            continue  # the analysis saw every thread: this site does no work in this launch
        if spr is None and req and moved is not None:
            spr = moved / req / SECTOR_BYTES
        if spr is None and eff:
            spr = lane_bytes / eff / SECTOR_BYTES
        if spr is None and req is not None:
            # The request count is known but not the sectors: a bound needs the worst case (one
            # sector per active lane and element chunk), and the estimate says it is a bound.
            spr = 32.0 * max(1.0, math.ceil(elem * width / SECTOR_BYTES))
            why = _get(acc, "unknown") or "coalescing unknown"
            worst.append(f"global {_get(acc, 'kind', 'access')} at line {line}: {why}; "
                         "priced as fully uncoalesced (an upper bound)")
        if req is None and moved is not None and spr:
            req = moved / (spr * SECTOR_BYTES)
        if req is None:
            why = _get(acc, "unknown") or "request count unknown"
            uncovered.append(f"global {_get(acc, 'kind', 'access')} of {_get(acc, 'array', '?')} "
                             f"at line {line}: {why}")
            continue
        assert spr is not None
        acc_moved = req * spr * SECTOR_BYTES
        requests += req
        sectors += req * spr
        dram += acc_moved
        lines = _num(_get(acc, "lines_per_request"))
        if lines is None:
            lines = max(1.0, spr / c.l1_sectors_per_clk)
        l1_req += req
        l1_lines += req * max(0.0, lines - 1.0)
        if _get(acc, "kind") == "load":
            load_req += req
        l2s = _num(_get(acc, "l2_sectors"))
        if l2s is None:
            l2_known = False
        else:
            l2_total += l2s * SECTOR_BYTES
        # L2 transactions: every line a request touches, scaled by the share of sectors L1 missed
        l2_tx += req * lines * ((l2s / (req * spr)) if (l2s is not None and req and spr) else 1.0)
        live += _num(_get(acc, "block_iteration_bytes")) or 0.0
        if _get(acc, "kind") == "atomic":
            ops = _num(_get(acc, "atomic_ops"))
            if ops is None:
                ops = req * 32.0
                worst.append(f"atomic at line {line}: lane count unknown; every lane counted")
            hot = _num(_get(acc, "atomic_hot_fraction"))
            if hot is None and _get(acc, "contention") != "scattered":
                hot = 1.0
                worst.append(f"atomic at line {line}: target addresses unknown; priced as one hot address")
            atomic_ops += ops
            atomic_hot = max(atomic_hot, ops * (hot or 0.0))
        if asked is not None:
            useful += asked
        elif eff is not None:
            useful += acc_moved * eff
        else:
            useful += min(acc_moved, req * lane_bytes)
    if not accesses:
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
            why = _get(acc, "unknown") or "request count unknown"
            uncovered.append(f"shared {_get(acc, 'kind', 'access')} of {_get(acc, 'array', '?')} "
                             f"at line {_get(acc, 'line')}: {why}")
            continue
        if req == 0:
            continue
        ways = _num(_get(acc, "wavefronts_per_request")) or _num(_get(acc, "bank_conflict_ways"))
        if ways is None:
            ways = 32.0
            worst.append(f"shared access at line {_get(acc, 'line')}: bank conflicts unknown; "
                         "priced as 32-way (an upper bound)")
        sh_req += req
        sh_wave += req * max(1.0, ways)

    flops = _num(_get(report, "flops"))
    if flops is None:
        flops = 0.0
        # the analysis says why (its first "FLOPs unknown: ..." line): a device printf, a data-dependent trip count
        why = next((str(u).split(": ", 1)[1] for u in (_get(report, "unknowns") or [])
                    if str(u).startswith("FLOPs unknown: ")), "")
        uncovered.append("FLOP count unknown (" + (why or "some arithmetic could not be counted") + ")")

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

    if dram == 0 and flops == 0 and sh_wave == 0 and not uncovered:
        raise CostModelError(
            "report has neither global traffic, shared accesses nor FLOPs the model can use"
            + (f" (unknown: {', '.join(_get(report, 'unknowns') or [])})" if _get(report, "unknowns") else "")
        )
    arrays: list[tuple[float, float, float, tuple[int, ...]]] = []
    cache = _get(report, "cache") or {}
    for _name, a in (_get(cache, "arrays") or {}).items():
        hull, l2b, bh = _num(_get(a, "hull_bytes")), _num(_get(a, "l2_bytes")), _num(_get(a, "block_hull_bytes"))
        if hull is None or l2b is None:
            arrays = []
            break
        arrays.append((hull, l2b, bh or hull, tuple(int(d) for d in (_get(a, "grid_dims") or ()))))
    activity = _get(report, "activity") or {}
    abf = _num(_get(activity, "active_block_fraction"))
    awpb = _num(_get(activity, "active_warps_per_block"))
    smem_block = (_num(_get(features, "shared_mem_static_bytes")) or 0.0) + (_num(_get(report, "dynamic_smem")) or 0.0)
    working_warps = blocks * (1.0 if abf is None else abf) * (warps_per_block if awpb is None else awpb)
    # a barrier-synchronised kernel alternates "load" and "use" phases (tile in, sync, compute, sync):
    # the loads a warp can have in flight together are those of one load phase
    phases = max(1.0, math.ceil(barrier_execs / 2.0))
    return CostInputs(
        l1_requests=l1_req,
        l1_extra_lines=l1_lines,
        l2_transactions=l2_tx,
        loads_per_warp_phase=(load_req / working_warps / phases) if working_warps and load_req else None,
        l2_bytes=l2_total if (l2_known and accesses and arrays) else None,
        arrays=tuple(arrays),
        l1_live_bytes_per_block=live,
        grid=grid,
        active_block_fraction=1.0 if abf is None else min(1.0, max(0.0, abf)),
        active_warps_per_block=None if awpb is None else min(float(warps_per_block), max(0.0, awpb)),
        atomic_ops=atomic_ops,
        atomic_hot_ops=atomic_hot,
        shared_bytes_per_block=smem_block,
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
        uncovered=tuple(dict.fromkeys(uncovered)),
        worst_case=tuple(dict.fromkeys(worst)),
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
    """Estimated time of one launch and where it goes. ``provenance`` is always ``estimated``.

    ``time_s`` is None when the analysis could not count all of the launch's work (``unknown`` says
    what was left out and why): pricing unseen work at zero would make the estimate look fast, and
    a search or an RL policy finds such holes first. ``lower_bound_s`` is then the time of the work
    that *was* counted — a bound in one direction only (the launch takes at least that long). For a
    complete estimate both are equal.
    """

    kernel: str
    gpu: str
    time_s: float | None
    memory_time_s: float
    compute_time_s: float
    latency_factor: float
    waves: int
    launch_overhead_s: float
    bound: str  # "memory" | "compute" | "latency"
    breakdown: dict[str, float]
    assumptions: list[str]
    constants: dict[str, float]
    lower_bound_s: float = 0.0
    unknown: list[str] = field(default_factory=list)
    worst_case: list[str] = field(default_factory=list)
    provenance: str = "estimated"

    @property
    def complete(self) -> bool:
        """True when every piece of the launch's work was counted (``time_s`` is a number)."""
        return self.time_s is not None

    @property
    def status(self) -> str:
        """``"exact"`` (everything counted and resolved), ``"upper_bound"`` (everything counted,
        some parts priced at their worst case: ``worst_case`` says which) or ``"unknown"``
        (``time_s`` is None; ``lower_bound_s`` prices only the counted work)."""
        if not self.complete:
            return "unknown"
        return "upper_bound" if self.worst_case else "exact"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["complete"] = self.complete
        out["status"] = self.status
        return out

    def to_measurement(self) -> Measurement:
        """This estimate as a :class:`~veriforge.core.types.Measurement` (provenance ``estimated``).

        An incomplete estimate becomes a ``time_s_lower_bound`` measurement, never ``time_s``: no
        objective that reads ``time_s`` can mistake a partial count for a fast kernel.
        """
        from veriforge.core.types import Measurement

        return Measurement(
            name="time_s" if self.complete else "time_s_lower_bound",
            value=self.lower_bound_s,
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
                "complete": self.complete,
                "status": self.status,
                "unknown": list(self.unknown),
                "worst_case": list(self.worst_case),
            },
        )


@dataclass(frozen=True)
class _Wave:
    """Times of one wave of blocks (all its blocks resident at once) and its latency-hiding factors."""

    t_dram: float
    t_l1: float
    t_l2: float
    t_flops: float
    t_sync: float
    t_atomic: float
    f_mem: float
    f_pipe: float
    busy_sms: int
    warps_per_sm: float
    in_flight: float

    @property
    def t_compute(self) -> float:
        return self.t_flops + self.t_sync

    @property
    def parts(self) -> tuple[float, ...]:
        return (self.t_dram, self.t_l1, self.t_l2, self.t_flops, self.t_atomic)


class PhysicalLimitError(CostModelError):
    """The estimate implies a rate above the GPU's peak for the work counted: something was undercounted."""


def _dram_bytes(q: CostInputs, g: GPU, c: CostConstants, blocks_per_wave: int,
                l2_traffic: float) -> tuple[float, dict[str, float]]:
    """DRAM bytes after L2 reuse, and the quantities behind it.

    Compulsory traffic is each array's footprint (its address range, capped by its L2 traffic).
    Re-references beyond that hit in L2 when what they need stays resident: the working set of one
    wave of blocks — per array, one block's data times the number of distinct block coordinates
    the wave spans along the grid dimensions the array's addresses depend on (blocks that differ
    only elsewhere share it). The share of that working set the usable L2 cannot hold misses.
    """
    if q.l2_bytes is None or not q.arrays:
        return q.dram_bytes, {}
    gx, gy, gz = q.grid
    spans = (min(gx, blocks_per_wave), min(gy, -(-blocks_per_wave // gx)), min(gz, -(-blocks_per_wave // (gx * gy))))
    busy_blocks = max(1.0, q.blocks * q.active_block_fraction)
    compulsory = working = 0.0
    for hull, l2b, block_hull, dims in q.arrays:
        compulsory += min(hull, l2b)
        per_block = min(block_hull, l2b / busy_blocks)
        distinct = 1
        for d in dims:
            distinct *= spans[d]
        working += min(hull, per_block * distinct)
    usable = g.l2_bytes * c.l2_usable_fraction
    reuse = max(0.0, l2_traffic - compulsory)
    if compulsory <= usable or working <= usable:
        miss = 0.0
    else:
        miss = 1.0 - usable / working
    dram = compulsory + reuse * miss
    return dram, {"compulsory_bytes": compulsory, "wave_working_set_bytes": working,
                  "l2_reuse_miss_fraction": miss}


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

    # Idle threads: blocks that do nothing leave at once (they cost scheduling only); warps that do
    # nothing inside a working block hold their slot but hide no latency.
    busy_blocks = max(1, round(q.blocks * q.active_block_fraction))
    idle_blocks = q.blocks - busy_blocks
    work_warps = q.warps_per_block if q.active_warps_per_block is None else max(q.active_warps_per_block, 1e-9)
    blocks_per_wave = sms * q.active_blocks_per_sm

    # L1: what reuse between neighbouring iterations needs resident must fit next to shared memory.
    l2_traffic = q.dram_bytes if q.l2_bytes is None else q.l2_bytes
    l1_fit = 1.0
    if q.l2_bytes is not None and q.l1_live_bytes_per_block > 0:
        per_sm = min(q.active_blocks_per_sm, -(-busy_blocks // sms))
        avail = max(0.0, g.arch_info.l1_smem_per_sm - per_sm * q.shared_bytes_per_block) * c.l1_usable_fraction
        l1_fit = min(1.0, avail / (per_sm * q.l1_live_bytes_per_block))
        l2_traffic = q.dram_bytes - (q.dram_bytes - q.l2_bytes) * l1_fit
    dram_bytes, cache_info = _dram_bytes(q, g, c, blocks_per_wave, l2_traffic)
    dram_bytes = min(dram_bytes, l2_traffic) if q.l2_bytes is not None else dram_bytes
    l1_cycles = (q.l1_requests / c.l1_requests_per_clk + q.l1_extra_lines / c.l1_lines_per_clk
                 + q.shared_wavefronts / c.shared_wavefronts_per_clk / warp_eff)
    mlp = (c.mlp_per_warp if q.loads_per_warp_phase is None
           else min(c.max_mlp_per_warp, max(1.0, q.loads_per_warp_phase)))
    if not q.l1_requests and q.global_sectors:  # reports without per-access requests
        l1_cycles += q.global_sectors / c.l1_sectors_per_clk

    def wave(blocks: int) -> _Wave:
        """One wave of ``blocks`` resident working blocks doing ``blocks / busy_blocks`` of the work.

        A partial wave spreads its blocks over the SMs (fewer per SM, or fewer busy SMs), so it
        has less parallelism to hide latency with: that is the tail effect, no extra constant.
        """
        share = blocks / busy_blocks
        busy = min(sms, blocks)
        per_sm = min(q.active_blocks_per_sm, -(-blocks // sms))
        warps = per_sm * work_warps
        in_flight = busy * warps * mlp * bytes_per_request
        f_mem = _smooth_min1(in_flight / needed, c.saturation_sharpness) if dram_bytes else 1.0
        f_pipe = _smooth_min1(warps / c.warps_to_hide_latency, c.saturation_sharpness)
        t_dram = share * dram_bytes / (peak_bw * c.dram_bw_fraction * f_mem) if dram_bytes else 0.0
        t_l1 = share * l1_cycles / (busy * clock_hz * f_pipe) if l1_cycles else 0.0
        t_l2 = (share * l2_traffic / SECTOR_BYTES / (c.l2_sectors_per_clk_per_sm * busy * clock_hz * f_pipe)
                if l2_traffic else 0.0)
        # the L2 slices serve transactions, not bytes: scattered requests are limited by their count
        t_l2 = max(t_l2, share * q.l2_transactions / (c.l2_transactions_per_clk_per_sm * sms * clock_hz))
        t_flops = (
            share * q.flops / (peak_flops * fp_fraction * f_pipe * (busy / sms) * warp_eff)
            if q.flops
            else 0.0
        )
        # Same-address atomics serialise at one L2 slice whatever the parallelism; scattered ones
        # are limited by the L2's atomic units.
        t_atomic = share * (q.atomic_hot_ops / (c.atomic_same_address_per_clk * clock_hz)
                            + q.atomic_ops / (c.atomic_ops_per_clk * clock_hz))
        # A barrier stalls its block until the slowest warp arrives; the other resident blocks of
        # the SM keep issuing meanwhile, so the exposed cost shrinks with blocks per SM.
        t_sync = q.barrier_executions_per_block * c.barrier_cycles / clock_hz / per_sm
        return _Wave(t_dram, t_l1, t_l2, t_flops, t_sync, t_atomic, f_mem, f_pipe, busy, warps, in_flight)

    full_waves, rest = divmod(busy_blocks, blocks_per_wave)
    runs = [(full_waves, wave(blocks_per_wave))] if full_waves else []
    if rest:
        runs.append((1, wave(rest)))
    waves = full_waves + (1 if rest else 0)
    exact_waves = busy_blocks / blocks_per_wave
    main = runs[0][1]

    def total(attr: str) -> float:
        return sum(n * getattr(w, attr) for n, w in runs)

    t_dram, t_l1, t_l2 = total("t_dram"), total("t_l1"), total("t_l2")
    t_flops, t_sync, t_atomic = total("t_flops"), total("t_sync"), total("t_atomic")
    t_compute = t_flops + t_sync
    t_idle = idle_blocks * c.idle_block_cycles / (clock_hz * sms * q.active_blocks_per_sm)
    memory_time = sum(n * _smooth_max((w.t_dram, w.t_l1, w.t_l2, w.t_atomic), c.overlap_p) for n, w in runs)
    # Barrier stalls are exposed, not overlapped: while a block waits at a barrier its warps issue
    # nothing, and only the SM's other resident blocks (already divided out) fill the gap.
    core = sum(n * (_smooth_max(w.parts, c.overlap_p) + w.t_sync) for n, w in runs) + t_idle
    # Tail: how much longer than if the partial wave's work ran at full-wave throughput.
    ideal = exact_waves * (_smooth_max(main.parts, c.overlap_p) + main.t_sync)
    tail = core / ideal if full_waves and ideal > 0 else 1.0
    time_s = c.launch_overhead_s + core

    parts = {"dram": t_dram, "l1": t_l1, "l2": t_l2, "compute": t_compute, "atomic": t_atomic}
    top = max(parts, key=lambda k: parts[k])
    latency_factor = main.f_mem if top == "dram" else main.f_pipe
    if core == 0 or core < c.launch_overhead_s:
        bound = "latency"  # launch overhead dominates: nothing to hide it behind
    elif top == "atomic":
        bound = "atomic"
    elif latency_factor < c.latency_bound_threshold:
        bound = "latency"
    else:
        bound = "compute" if top == "compute" else "memory"
    _check_peak(q, g, dram_bytes, l2_traffic, core, peak_flops, peak_bw, clock_hz)

    breakdown = {
        "dram_time_s": t_dram,
        "l1_time_s": t_l1,
        "l2_time_s": t_l2,
        "flop_time_s": t_flops,
        "barrier_time_s": t_sync,
        "atomic_time_s": t_atomic,
        "idle_block_time_s": t_idle,
        "core_time_s": core,
        "tail_factor": tail,
        "exact_waves": exact_waves,
        "f_mem": main.f_mem,
        "f_pipe": main.f_pipe,
        "warp_efficiency": warp_eff,
        "busy_sms": float(main.busy_sms),
        "warps_per_sm": float(main.warps_per_sm),
        "working_warps_per_block": float(work_warps),
        "working_blocks": float(busy_blocks),
        "active_blocks_per_sm": float(q.active_blocks_per_sm),
        "occupancy": q.occupancy,
        "request_bytes": q.dram_bytes,
        "l2_bytes": l2_traffic,
        "l1_reuse_fit": l1_fit,
        "dram_bytes": dram_bytes,
        "useful_bytes": q.useful_bytes,
        "coalescing_inflation": q.dram_bytes / q.useful_bytes if q.useful_bytes else 1.0,
        "global_sectors": q.global_sectors,
        "l1_requests": q.l1_requests,
        "l1_extra_lines": q.l1_extra_lines,
        "l2_transactions": q.l2_transactions,
        "mlp_per_warp": mlp,
        "shared_wavefronts": q.shared_wavefronts,
        "bank_conflict_inflation": q.shared_wavefronts / q.shared_requests if q.shared_requests else 1.0,
        "flops": q.flops,
        "atomic_ops": q.atomic_ops,
        "atomic_hot_ops": q.atomic_hot_ops,
        "bytes_in_flight": main.in_flight,
        "bytes_in_flight_needed": needed,
        **cache_info,
    }
    return Estimate(
        kernel=q.kernel,
        gpu=g.name,
        time_s=None if q.uncovered else time_s,
        lower_bound_s=time_s,
        unknown=list(q.uncovered),
        worst_case=list(q.worst_case),
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


def _check_peak(q: CostInputs, g: GPU, dram: float, l2: float, core: float, peak_flops: float,
                peak_bw: float, clock_hz: float) -> None:
    """Refuse an estimate that implies more than the GPU can do for the work it counted.

    The formula divides each kind of work by a fraction of its peak rate, so this only fires when
    constants were pushed past physics (a calibration fitting ``dram_bw_fraction`` above 1) or a
    term was lost; either way the number would reward an artefact, so it is an error.
    """
    if core <= 0:
        return
    slack = 1.0 + 1e-6
    checks = (
        ("FLOP", q.flops, peak_flops, "FLOP/s", "the FLOP count or the peak rate"),
        ("DRAM byte", dram, peak_bw, "B/s", "global traffic (an access the analysis could not count?)"),
        ("L2 byte", l2, g.sm_count * clock_hz * SECTOR_BYTES * 4, "B/s", "L2 traffic"),
    )
    for what, amount, peak, unit, suspect in checks:
        if amount and amount / core > peak * slack:
            raise PhysicalLimitError(
                f"{q.kernel or 'launch'} on {g.name}: {amount:.3g} {what}s in {core:.3g} s imply "
                f"{amount / core:.3g} {unit}, above the peak {peak:.3g} {unit}; {suspect} is probably "
                f"undercounted, or a cost constant exceeds 1 of its peak"
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
    """Indices of ``reports`` from fastest to slowest estimated time.

    Reports whose estimate is incomplete (time unknown) come after every complete one, in input
    order: an unknown time is not evidence of a fast kernel.
    """
    times = [estimate(r, gpu, **kwargs).time_s for r in reports]
    return sorted(range(len(reports)), key=lambda i: (times[i] is None, times[i] or 0.0, i))


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
    pairs: Sequence[tuple[Any, float] | tuple[Any, float, str | GPU]],
    gpu: str | GPU = "H100-SXM",
    *,
    params: Sequence[str] = DEFAULT_FIT_PARAMS,
    start: CostConstants | None = None,
    max_iter: int = 200,
    tol: float = 1e-10,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> Calibration:
    """Fit ``params`` of the model to ``(report, measured_time_s)`` pairs measured on ``gpu``, or
    ``(report, measured_time_s, gpu)`` triples (each priced on its own GPU: published series span
    several).

    Minimises the sum of squared ``ln(estimate / measured)`` (relative error, so a 5 us kernel and
    a 5 ms kernel weigh the same) over the logarithms of the chosen constants (keeps them positive)
    with Levenberg-Marquardt and a finite-difference Jacobian; numpy only. ``bounds`` keeps named
    constants inside ``(low, high)`` (a logistic map of the log-constant, so the fit stays smooth):
    a few kernels can otherwise "explain" themselves with a 1 ns DRAM latency. Constants that are
    fractions of a peak never exceed 1 (:class:`CostConstants` refuses it). Returns the fitted
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
    gpus: list[GPU] = []
    for pair in pairs:
        report, t = pair[0], pair[1]
        gi = get_gpu(pair[2]) if len(pair) > 2 else g  # type: ignore[misc]
        if not (isinstance(t, int | float) and math.isfinite(t) and t > 0):
            raise CostModelError(f"measured time must be a positive number of seconds, not {t!r}")
        q = report if isinstance(report, CostInputs) else extract_inputs(report, gi, constants=c0)
        if q.uncovered:
            raise CostModelError(
                f"cannot calibrate on {q.kernel or 'a launch'} whose estimate does not count all its work "
                f"({'; '.join(q.uncovered)})"
            )
        inputs.append(q)
        measured.append(float(t))
        gpus.append(gi)
    log_t = np.log(np.array(measured))
    bounds = dict(bounds or {})
    if set(bounds) - set(names):
        raise CostModelError(f"bounds for constants not fitted: {', '.join(sorted(set(bounds) - set(names)))}")
    lo = np.array([math.log(bounds[n][0]) if n in bounds else 0.0 for n in names])
    hi = np.array([math.log(bounds[n][1]) if n in bounds else 0.0 for n in names])
    boxed = np.array([n in bounds for n in names])
    if np.any(boxed & (hi <= lo)):
        raise CostModelError("each bound must be (low, high) with 0 < low < high")

    def values(theta: np.ndarray) -> np.ndarray:
        return np.where(boxed, np.exp(lo + (hi - lo) / (1.0 + np.exp(-np.where(boxed, theta, 0.0)))),
                        np.exp(np.where(boxed, 0.0, theta)))

    def consts(theta: np.ndarray) -> CostConstants:
        return c0.replace(**{n: float(v) for n, v in zip(names, values(theta), strict=True)})

    def residuals(theta: np.ndarray) -> np.ndarray:
        try:
            c = consts(theta)
        except CostModelError:
            return np.full(len(inputs), 1e6)
        out = np.empty(len(inputs))
        for i, (q, gi) in enumerate(zip(inputs, gpus, strict=True)):
            try:
                out[i] = math.log(_evaluate(q, gi, c).lower_bound_s)  # inputs are complete: exact
            except CostModelError:
                out[i] = log_t[i] + 10.0  # constants the model refuses (above a peak): far off
        return out - log_t

    start_vals = np.array([getattr(c0, n) for n in names], dtype=float)
    frac = np.clip((np.log(start_vals) - lo) / np.where(boxed, hi - lo, 1.0), 0.02, 0.98)
    theta = np.where(boxed, np.log(frac / (1.0 - frac)), np.log(start_vals))
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
