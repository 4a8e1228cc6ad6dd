"""Bottleneck diagnosis: turn a kernel's performance evidence into ranked, human-readable findings.

OptiML-X edits a kernel *because of* something: a model proposer is prompted with the findings
("global loads at line 12 use 32 sectors per request (12.5% efficiency)"), the built-in operators
record which findings motivated them, and the report shows them next to each edit. So the
diagnosis must speak one language whatever produced the evidence. It reads:

* a static :class:`~veriforge.cuda.analysis.AnalysisReport` (or its ``to_dict()``) — per-line
  findings (access sites, branches, barriers, loops) plus the launch-level features;
* an Nsight Compute :class:`~veriforge.cuda.profile.KernelProfile` (``.features``) or any plain
  dict of features in the shared vocabulary of :mod:`veriforge.cuda.features` — launch-level
  findings only, because a profile's features carry no source lines.

Every finding carries the numbers it was derived from in ``evidence`` (never a guess: a feature
the source could not determine produces no finding). ``severity`` is a number in [0, 1] — roughly
"the fraction of the kernel's time this problem could be costing" — so findings from different
rules can be ranked together; :attr:`Finding.level` buckets it for display. The thresholds are
module constants below, each with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from veriforge.core import duck

__all__ = [
    "KINDS",
    "Finding",
    "diagnose",
    "primary_bottleneck",
    "ridge_point",
    "summarize",
]

#: Every finding kind, with the kind of edit that usually helps (shown to models and in reports).
KINDS: dict[str, str] = {
    "uncoalesced_load": "make consecutive threads read consecutive addresses (transpose the index, stage "
    "through shared memory, or vectorise)",
    "uncoalesced_store": "make consecutive threads write consecutive addresses (stage through shared memory)",
    "bank_conflict": "pad the shared array (e.g. [N][N+1]) or change the access stride",
    "divergent_branch": "make the condition uniform per warp, or move the work out of the branch",
    "barrier_divergence": "every thread of the block must reach __syncthreads(): hoist it out of the "
    "thread-dependent condition",
    "barrier_stall": "fewer barriers per unit of work (bigger tiles, warp-level primitives)",
    "low_occupancy": "reduce the limiting resource (registers: __launch_bounds__; shared memory: smaller "
    "tiles) or change the block size",
    "register_spill": "reduce live registers or raise the register limit (__launch_bounds__ / maxrregcount)",
    "small_grid": "use more, smaller blocks (or more work per block only if the grid is already large)",
    "partial_warp": "use a block size that is a multiple of 32",
    "memory_bound": "move fewer bytes: reuse data through shared memory/registers, fuse passes, vectorise",
    "compute_bound": "fewer instructions per result: unroll, hoist invariants, use faster math",
    "low_warp_efficiency": "reduce divergence so that all 32 lanes execute each instruction",
    "low_dram_throughput": "more bytes in flight: more resident warps, unrolling, vector loads",
    "loop_not_unrolled": "add #pragma unroll to the loop with a small constant trip count",
    "no_restrict": "mark pointer parameters __restrict__ (and const for read-only inputs)",
}

# Thresholds (documented in docs/optiml.md). A rule fires only past its threshold so that a healthy
# kernel produces an empty or near-empty list instead of noise.
COALESCING_EFFICIENCY_MIN = 0.6  # below: more than 40% of the moved bytes are wasted
BANK_CONFLICT_WAYS_MIN = 2.0  # 2-way and worse serialise shared-memory requests
OCCUPANCY_MIN = 0.5  # below half the warps/SM, latency hiding usually suffers
WARP_EFFICIENCY_MIN = 0.85  # ncu: average active lanes per instruction below 85% of 32
BARRIER_STALL_MIN = 0.2  # ncu: a fifth of the issue slots stalled on barriers
DRAM_THROUGHPUT_MIN = 0.6  # ncu: a memory-bound kernel below 60% of peak bandwidth
UNROLL_TRIP_MAX = 64  # constant-trip loops at most this long are cheap to unroll fully
SEVERITY_FLOOR = 0.02  # findings below this weight are noise for ranking and are dropped

_LIMITERS = {
    "registers": ("blocks_limit_regs", "occupancy_limit_registers"),
    "shared memory": ("blocks_limit_smem", "occupancy_limit_shared_mem"),
    "warps (block size)": ("blocks_limit_warps", "occupancy_limit_warps"),
    "block slots": ("blocks_limit_blocks", "occupancy_limit_blocks"),
    "barriers": ("blocks_limit_barriers", None),
}


@dataclass(frozen=True)
class Finding:
    """One diagnosed problem: what, how bad (0..1), where (source line or None), why (evidence)."""

    kind: str
    severity: float
    line: int | None
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def level(self) -> str:
        """"high" (>= 0.5), "medium" (>= 0.2) or "low" — for tables and prompts."""
        if self.severity >= 0.5:
            return "high"
        return "medium" if self.severity >= 0.2 else "low"

    @property
    def hint(self) -> str:
        """The kind of edit that usually addresses this finding."""
        return KINDS.get(self.kind, "")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["level"] = self.level
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        return cls(
            kind=str(data["kind"]),
            severity=float(data["severity"]),
            line=None if data.get("line") is None else int(data["line"]),
            message=str(data["message"]),
            evidence=dict(data.get("evidence") or {}),
        )

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"[{self.level}] {where}{self.message}"


# ---------------------------------------------------------------------------------------------
# Input normalisation


_get = duck.get
_num = duck.finite


def _is_report(obj: Any) -> bool:
    return _get(obj, "global_accesses") is not None and _get(obj, "grid") is not None


def _features_of(obj: Any) -> dict[str, float]:
    """The feature dict of a report, a profile, or a plain mapping of features."""
    feats = _get(obj, "features") if not _is_plain_features(obj) else obj
    out: dict[str, float] = {}
    for k, v in dict(feats or {}).items():
        n = _num(v)
        if n is not None:
            out[str(k)] = n
    return out


def _is_plain_features(obj: Any) -> bool:
    return isinstance(obj, Mapping) and "features" not in obj and "global_accesses" not in obj


def ridge_point(gpu: Any = "H100-SXM") -> float:
    """Peak FP32 FLOP/s over peak DRAM bytes/s: the arithmetic intensity where a kernel stops
    being memory-bound on ``gpu`` (H100 SXM: 66.9 TFLOP/s / 3.35 TB/s ~ 20 FLOP/B)."""
    from veriforge.cuda.arch import get_gpu

    g = get_gpu(gpu)
    return g.fp32_tflops * 1e12 / (g.dram_bandwidth_gbs * 1e9)


# ---------------------------------------------------------------------------------------------
# The rules


def diagnose(
    evidence: Any,
    *,
    gpu: Any = "H100-SXM",
    arch: str | None = None,
    max_findings: int | None = None,
) -> list[Finding]:
    """Findings for one kernel launch, most severe first.

    ``evidence`` is an analysis report (object or ``to_dict()``), a profile (anything with a
    ``features`` mapping) or a plain feature mapping. ``gpu`` sets the roofline ridge point and the
    SM count for grid-size findings; ``arch`` is informational (recorded in the memory-bound
    evidence; the report's own arch wins when it has one).
    """
    feats = _features_of(evidence)
    found: list[Finding] = []
    g = _gpu(gpu)
    if _is_report(evidence):
        found += _global_sites(evidence)
        found += _shared_sites(evidence)
        found += _branches(evidence)
        found += _barriers(evidence)
        found += _loops(evidence)
        found += _launch_shape(evidence, g)
        found += _restrict(evidence, feats)
        have_global_sites = any(f.kind.startswith("uncoalesced") for f in found)
        have_shared_sites = any(f.kind == "bank_conflict" for f in found)
    else:
        have_global_sites = have_shared_sites = False
    if not have_global_sites:
        found += _coalescing_features(feats)
    if not have_shared_sites:
        found += _bank_features(feats)
    found += _occupancy(evidence, feats)
    found += _spills(feats)
    found += _warp_efficiency(feats)
    found += _barrier_stall(feats)
    found += _roofline(evidence, feats, g, arch)
    found = [f for f in found if f.severity >= SEVERITY_FLOOR]
    found.sort(key=lambda f: (-f.severity, f.line if f.line is not None else 1 << 30, f.kind))
    return found[:max_findings] if max_findings is not None else found


def _gpu(gpu: Any) -> Any:
    from veriforge.cuda.arch import get_gpu

    return get_gpu(gpu)


def _fmt(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 100 or float(x).is_integer():
        return f"{x:.0f}"
    if abs(x) >= 1:
        return f"{x:.1f}".rstrip("0").rstrip(".")
    return f"{x:.2g}"


def _global_sites(rep: Any) -> list[Finding]:
    sites = list(_get(rep, "global_accesses") or [])
    total = sum(_num(_get(a, "bytes")) or 0.0 for a in sites)
    out = []
    for a in sites:
        eff = _num(_get(a, "efficiency"))
        spr = _num(_get(a, "sectors_per_request"))
        if eff is None or spr is None or eff >= COALESCING_EFFICIENCY_MIN:
            continue
        kind = str(_get(a, "kind"))
        if kind == "atomic":
            continue
        moved = _num(_get(a, "bytes")) or 0.0
        share = moved / total if total > 0 else 1.0
        line = _get(a, "line")
        noun = "loads" if kind == "load" else "stores"
        elem = _num(_get(a, "elem_bytes")) or 4.0
        ideal = max(1.0, elem * float(_get(a, "vector_width") or 1) * 32 / 32)
        out.append(
            Finding(
                kind="uncoalesced_load" if kind == "load" else "uncoalesced_store",
                severity=round((1.0 - eff) * share, 4),
                line=int(line) if line is not None else None,
                message=f"global {noun} of {_get(a, 'array')} at line {line} use {_fmt(spr)} sectors per "
                f"request ({eff * 100:.1f}% efficiency)",
                evidence={
                    "array": _get(a, "array"),
                    "text": _get(a, "text"),
                    "sectors_per_request": spr,
                    "ideal_sectors_per_request": ideal,
                    "efficiency": eff,
                    "bytes": moved,
                    "share_of_global_bytes": share,
                    "source": "static analysis",
                },
            )
        )
    return out


def _shared_sites(rep: Any) -> list[Finding]:
    sites = list(_get(rep, "shared_accesses") or [])
    total = sum(_num(_get(s, "requests")) or 0.0 for s in sites)
    out = []
    for s in sites:
        ways = _num(_get(s, "bank_conflict_ways"))
        if ways is None or ways < BANK_CONFLICT_WAYS_MIN:
            continue
        req = _num(_get(s, "requests")) or 0.0
        share = req / total if total > 0 else 1.0
        line = _get(s, "line")
        out.append(
            Finding(
                kind="bank_conflict",
                severity=round((1.0 - 1.0 / ways) * share, 4),
                line=int(line) if line is not None else None,
                message=f"{_fmt(ways)}-way shared-memory bank conflicts at line {line} "
                f"({_get(s, 'kind')} of {_get(s, 'array')})",
                evidence={
                    "array": _get(s, "array"),
                    "text": _get(s, "text"),
                    "ways": ways,
                    "wavefronts_per_request": _num(_get(s, "wavefronts_per_request")),
                    "share_of_shared_requests": share,
                    "source": "static analysis",
                },
            )
        )
    return out


def _branches(rep: Any) -> list[Finding]:
    out = []
    for b in _get(rep, "branches") or []:
        if not _get(b, "divergent"):
            continue
        scope = _get(b, "scope")
        if scope in ("tail", "none"):
            continue  # the bounds check of the last block: costs one warp, not worth an edit
        frac = _num(_get(b, "divergent_fraction"))
        frac = 1.0 if frac is None else frac
        line = _get(b, "line")
        out.append(
            Finding(
                kind="divergent_branch",
                severity=round(0.5 * frac, 4),
                line=int(line) if line is not None else None,
                message=f"divergent branch at line {line}: `{_get(b, 'condition')}` splits "
                f"{frac * 100:.0f}% of the warps that reach it",
                evidence={
                    "condition": _get(b, "condition"),
                    "scope": scope,
                    "divergent_fraction": frac,
                    "branch_kind": _get(b, "kind"),
                    "source": "static analysis",
                },
            )
        )
    return out


def _barriers(rep: Any) -> list[Finding]:
    out = []
    for b in _get(rep, "barriers") or []:
        if not _get(b, "under_thread_dependent_condition"):
            continue
        line = _get(b, "line")
        diverges = _get(b, "divergent_in_launch")
        out.append(
            Finding(
                kind="barrier_divergence",
                severity=1.0,
                line=int(line) if line is not None else None,
                message=f"barrier under thread-dependent condition at line {line}"
                + (f" (`{_get(b, 'condition')}`)" if _get(b, "condition") else "")
                + ("; threads of one block disagree in this launch" if diverges else ""),
                evidence={
                    "condition": _get(b, "condition"),
                    "divergent_in_launch": diverges,
                    "name": _get(b, "name"),
                    "source": "static analysis",
                },
            )
        )
    return out


def _loops(rep: Any) -> list[Finding]:
    out = []
    for lp in _get(rep, "loops") or []:
        trips = _num(_get(lp, "trip_count"))
        unrolled = _get(lp, "unrolled")
        if trips is None or unrolled or _get(lp, "trip_count_varies") or not 2 <= trips <= UNROLL_TRIP_MAX:
            continue
        line = _get(lp, "line")
        out.append(
            Finding(
                kind="loop_not_unrolled",
                severity=0.05,
                line=int(line) if line is not None else None,
                message=f"loop at line {line} runs a constant {_fmt(trips)} iterations and is not unrolled",
                evidence={"trip_count": trips, "source": "static analysis"},
            )
        )
    return out


def _launch_shape(rep: Any, g: Any) -> list[Finding]:
    grid = _dims(_get(rep, "grid"))
    block = _dims(_get(rep, "block"))
    out = []
    if grid is None or block is None:
        return out
    blocks = grid[0] * grid[1] * grid[2]
    threads = block[0] * block[1] * block[2]
    if blocks < g.sm_count:
        out.append(
            Finding(
                kind="small_grid",
                severity=round(0.6 * (1.0 - blocks / g.sm_count), 4),
                line=None,
                message=f"grid of {blocks} blocks keeps only {blocks} of {g.sm_count} SMs busy on {g.name}",
                evidence={"blocks": blocks, "sm_count": g.sm_count, "block_threads": threads},
            )
        )
    if threads % 32:
        wasted = 32 - threads % 32
        warps = -(-threads // 32)
        out.append(
            Finding(
                kind="partial_warp",
                severity=round(wasted / (32 * warps), 4),
                line=None,
                message=f"block of {threads} threads leaves {wasted} lanes of its last warp idle",
                evidence={"block_threads": threads, "idle_lanes": wasted},
            )
        )
    return out


def _dims(value: Any) -> tuple[int, int, int] | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return (int(value), 1, 1)
    vals = [int(v) for v in value] + [1, 1, 1]
    return (vals[0], vals[1], vals[2])


def _restrict(rep: Any, feats: Mapping[str, float]) -> list[Finding]:
    traits = _get(rep, "traits") or {}
    if not traits or traits.get("restrict", True):
        return []
    loads = [a for a in _get(rep, "global_accesses") or [] if _get(a, "kind") == "load"]
    if not loads:
        return []
    return [
        Finding(
            kind="no_restrict",
            severity=0.03,
            line=None,
            message="pointer parameters are not __restrict__: the compiler must assume they alias",
            evidence={"restrict_params": list(traits.get("restrict_params") or [])},
        )
    ]


def _coalescing_features(feats: Mapping[str, float]) -> list[Finding]:
    out = []
    for kind, noun in (("load", "loads"), ("store", "stores")):
        eff = feats.get(f"global_{kind}_efficiency")
        spr = feats.get(f"global_{kind}_sectors_per_request")
        if eff is None or eff >= COALESCING_EFFICIENCY_MIN:
            continue
        sectors = f" use {_fmt(spr)} sectors per request" if spr is not None else ""
        out.append(
            Finding(
                kind=f"uncoalesced_{kind}",
                severity=round(1.0 - eff, 4),
                line=None,
                message=f"global {noun}{sectors} ({eff * 100:.1f}% efficiency)",
                evidence={"efficiency": eff, "sectors_per_request": spr, "source": "features"},
            )
        )
    return out


def _bank_features(feats: Mapping[str, float]) -> list[Finding]:
    out = []
    for kind in ("load", "store"):
        ways = feats.get(f"shared_{kind}_bank_conflict_ways")
        if ways is None or ways < BANK_CONFLICT_WAYS_MIN:
            continue
        out.append(
            Finding(
                kind="bank_conflict",
                severity=round(1.0 - 1.0 / ways, 4),
                line=None,
                message=f"{_fmt(ways)}-way shared-memory bank conflicts on {kind}s",
                evidence={"ways": ways, "access": kind, "source": "features"},
            )
        )
    return out


def _occupancy(evidence: Any, feats: Mapping[str, float]) -> list[Finding]:
    occ = feats.get("theoretical_occupancy")
    achieved = feats.get("achieved_occupancy")
    value = occ if occ is not None else achieved
    if value is None or value >= OCCUPANCY_MIN:
        return []
    occ_dict = _get(evidence, "occupancy") if not _is_plain_features(evidence) else None
    limits: dict[str, float] = {}
    for name, (okey, fkey) in _LIMITERS.items():
        v = _num(_get(occ_dict, okey)) if occ_dict else None
        if v is None and fkey:
            v = feats.get(fkey)
        if v is not None:
            limits[name] = v
    limiter = None
    if limits:
        low = min(limits.values())
        tied = [k for k, v in limits.items() if v == low]
        # Prefer the resource an edit can change (registers, shared memory) over the block size.
        for pref in ("registers", "shared memory", "barriers", "warps (block size)", "block slots"):
            if pref in tied:
                limiter = pref
                break
    what = "theoretical" if occ is not None else "achieved"
    by = f" by {limiter}" if limiter else ""
    regs = feats.get("registers_per_thread")
    evidence_out: dict[str, Any] = {
        f"{what}_occupancy": value,
        "limiter": limiter,
        "blocks_per_sm_limits": limits,
    }
    if regs is not None:
        evidence_out["registers_per_thread"] = regs
    if occ_dict:
        evidence_out["block_threads"] = _get(occ_dict, "block_threads")
    return [
        Finding(
            kind="low_occupancy",
            severity=round(min(1.0, (OCCUPANCY_MIN - value) / OCCUPANCY_MIN), 4),
            line=None,
            message=f"occupancy limited{by} to {value * 100:.0f}%"
            + (f" ({_fmt(regs)} registers/thread)" if limiter == "registers" and regs is not None else ""),
            evidence=evidence_out,
        )
    ]


def _spills(feats: Mapping[str, float]) -> list[Finding]:
    spill = feats.get("spill_bytes")
    if not spill:
        return []
    return [
        Finding(
            kind="register_spill",
            severity=round(min(1.0, 0.2 + spill / 256), 4),
            line=None,
            message=f"{_fmt(spill)} bytes of register spills per thread (local-memory traffic)",
            evidence={"spill_bytes": spill, "registers_per_thread": feats.get("registers_per_thread")},
        )
    ]


def _warp_efficiency(feats: Mapping[str, float]) -> list[Finding]:
    eff = feats.get("warp_execution_efficiency")
    if eff is None or eff >= WARP_EFFICIENCY_MIN:
        return []
    return [
        Finding(
            kind="low_warp_efficiency",
            severity=round(1.0 - eff, 4),
            line=None,
            message=f"only {eff * 32:.1f} of 32 lanes active per instruction on average ({eff * 100:.0f}%)",
            evidence={"warp_execution_efficiency": eff},
        )
    ]


def _barrier_stall(feats: Mapping[str, float]) -> list[Finding]:
    stall = feats.get("barrier_stall_fraction")
    if stall is None or stall < BARRIER_STALL_MIN:
        return []
    return [
        Finding(
            kind="barrier_stall",
            severity=round(min(1.0, stall), 4),
            line=None,
            message=f"{stall * 100:.0f}% of warp issue slots stall on barriers",
            evidence={"barrier_stall_fraction": stall, "barriers": feats.get("barriers")},
        )
    ]


def _roofline(evidence: Any, feats: Mapping[str, float], g: Any, arch: str | None) -> list[Finding]:
    ai = feats.get("arithmetic_intensity")
    if ai is None:
        flops, dram = feats.get("flops"), feats.get("dram_bytes")
        if flops is not None and dram:
            ai = flops / dram
    if ai is None:
        return []
    ridge = ridge_point(g)
    rep_arch = _get(evidence, "arch") if not _is_plain_features(evidence) else None
    ev: dict[str, Any] = {
        "arithmetic_intensity": ai,
        "ridge_point": ridge,
        "gpu": g.name,
        "arch": rep_arch or arch or g.arch,
    }
    if ai < ridge:
        # Far below the ridge is the classic streaming kernel: every byte counts, FLOPs are free.
        severity = 0.3 * min(1.0, math.log10(ridge / max(ai, 1e-9)) / 2.0 + 0.2)
        out = [
            Finding(
                kind="memory_bound",
                severity=round(severity, 4),
                line=None,
                message=f"low arithmetic intensity {_fmt(ai)} FLOP/B vs ridge {_fmt(ridge)} → memory-bound",
                evidence=ev,
            )
        ]
        thr = feats.get("dram_throughput")
        if thr is not None and thr < DRAM_THROUGHPUT_MIN:
            out.append(
                Finding(
                    kind="low_dram_throughput",
                    severity=round(DRAM_THROUGHPUT_MIN - thr + 0.2, 4),
                    line=None,
                    message=f"memory-bound but DRAM throughput is only {thr * 100:.0f}% of peak",
                    evidence={"dram_throughput": thr, **ev},
                )
            )
        return out
    return [
        Finding(
            kind="compute_bound",
            severity=round(0.3 * min(1.0, math.log10(ai / ridge) / 2.0 + 0.2), 4),
            line=None,
            message=f"arithmetic intensity {_fmt(ai)} FLOP/B is above the ridge {_fmt(ridge)} → compute-bound",
            evidence=ev,
        )
    ]


# ---------------------------------------------------------------------------------------------
# Presentation


def primary_bottleneck(findings: Sequence[Finding]) -> str:
    """One short line naming the most severe finding ("none found" when the list is empty)."""
    if not findings:
        return "none found"
    top = findings[0]
    where = f" (line {top.line})" if top.line is not None else ""
    return f"{top.kind.replace('_', ' ')}{where}"


def summarize(findings: Sequence[Finding], *, limit: int = 8, hints: bool = True) -> str:
    """A compact bullet list for prompts and logs, most severe first."""
    if not findings:
        return "- no bottleneck found by the diagnosis"
    lines = []
    for f in list(findings)[:limit]:
        text = f"- {f}"
        if hints and f.hint:
            text += f" — try: {f.hint}"
        lines.append(text)
    if len(findings) > limit:
        lines.append(f"- … and {len(findings) - limit} more")
    return "\n".join(lines)
