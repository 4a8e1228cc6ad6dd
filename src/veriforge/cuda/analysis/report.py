"""The analysis report: plain dataclasses that serialise to JSON.

The report is the contract between the static analysis and everything that consumes it (the cost
model, CudaPerf's structural reward, OptiML's bottleneck diagnosis, the CLI). Every number is
either determined from the source and the launch, or ``None`` together with a reason in
``unknown`` / :attr:`AnalysisReport.unknowns`; nothing is filled in by guessing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

AccessKind = Literal["load", "store", "atomic"]
DivergenceScope = Literal["none", "tail", "some", "all"]


@dataclass(slots=True)
class GlobalAccess:
    """One global-memory access site (a subscript or dereference) in the kernel's source.

    ``sectors_per_request`` is the ratio of sums over every warp request the launch issues at this
    site (estimated from the sampled warps and loop iterations, see ``docs/analysis.md``) — the same
    definition as Nsight Compute's sectors/requests. ``efficiency`` is bytes the lanes asked for /
    bytes moved in 32-byte sectors. ``requests`` counts warp-level requests per launch (weighted
    by evaluated trip counts); ``bytes`` is what those requests move in sectors
    (``requests * sectors_per_request * 32``); ``useful_bytes`` what the lanes asked for.
    ``first_warp_sectors`` is the plain answer for block 0, warp 0, first iteration.
    """

    line: int
    kind: AccessKind
    array: str
    elem_bytes: int | None
    sectors_per_request: float | None = None
    efficiency: float | None = None
    requests: float | None = None
    bytes: float | None = None
    vector_width: int = 1
    read_only: bool = False
    unknown: str | None = None
    useful_bytes: float | None = None
    first_warp_sectors: int | None = None
    text: str = ""
    #: sectors per launch that miss L1 and reach L2 (loads: after reuse between neighbouring
    #: iterations and among the warps of a block; stores and atomics: all of them)
    l2_sectors: float | None = None
    #: mean distinct 128-byte lines one warp request touches: the L1 passes (tag lookups) it needs
    lines_per_request: float | None = None
    #: mean distinct bytes (in sectors) one block touches here in one iteration: L1's live set
    block_iteration_bytes: float | None = None
    #: atomics only: lane operations per launch, lane operations serialised by same-address lanes
    #: of one request, distinct target addresses seen (None: more than the analysis tracks), the
    #: share of all operations that hit the hottest address, and "same" | "few" | "scattered"
    atomic_ops: float | None = None
    atomic_serial_ops: float | None = None
    atomic_addresses: int | None = None
    atomic_hot_fraction: float | None = None
    contention: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class SharedAccess:
    """One shared-memory access site; ``bank_conflict_ways`` is the worst over sampled requests.

    Ways = the largest number of distinct 4-byte words one bank must serve in one request phase
    (1 = conflict-free; lanes reading the same word are a broadcast, not a conflict).
    ``wavefronts_per_request`` is the mean number of shared-memory wavefronts one warp request
    needs (Nsight Compute's wavefronts/requests; 4-byte accesses: equal to the ways).
    """

    line: int
    kind: AccessKind
    array: str
    bank_conflict_ways: int | None = None
    requests: float | None = None
    unknown: str | None = None
    elem_bytes: int | None = None
    wavefronts_per_request: float | None = None
    text: str = ""
    #: consecutive per-lane loads of an unrolled constant-trip loop that ptxas merges into one
    #: 64/128-bit load (2 or 4; requests and wavefronts are those of the merged loads)
    merged_width: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Branch:
    """A branch (``if`` or a loop's exit test) and whether lanes of one warp disagree on it.

    ``scope``: "none" (uniform in every warp), "tail" (divergent only in warps of the last
    block along some grid dimension — typically the ``if (i < n)`` bounds check), "some", or
    "all" (every warp that reaches it diverges). ``divergent_fraction`` weights warps by how often
    they evaluate the branch.
    """

    line: int
    condition: str
    divergent: bool | None
    unknown: str | None = None
    kind: Literal["if", "loop", "switch"] = "if"
    scope: DivergenceScope | None = None
    divergent_fraction: float | None = None
    thread_dependent: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Barrier:
    """A block-level barrier call site; flagged when reached under a thread-dependent condition.

    ``under_thread_dependent_condition`` is decided from the source (the enclosing condition, loop
    bound or earlier ``return`` depends on ``threadIdx``), not only from this launch: such a
    barrier deadlocks or is undefined as soon as the threads of one block disagree.
    ``divergent_in_launch`` says whether they actually disagree for this launch (None: unknown).
    """

    line: int
    under_thread_dependent_condition: bool
    condition: str | None
    name: str = "__syncthreads"
    divergent_in_launch: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Loop:
    """A loop with its evaluated trip count (per thread; the largest over the lanes that enter it)."""

    line: int
    trip_count: float | None
    unrolled: bool | int = False
    unknown: str | None = None
    trip_count_varies: bool = False
    kind: Literal["for", "while", "do"] = "for"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class AnalysisReport:
    """Everything the static analysis determined about one kernel and one launch."""

    kernel: str
    arch: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    global_accesses: list[GlobalAccess] = field(default_factory=list)
    shared_accesses: list[SharedAccess] = field(default_factory=list)
    branches: list[Branch] = field(default_factory=list)
    barriers: list[Barrier] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    flops: float | None = None
    global_bytes: float | None = None
    global_useful_bytes: float | None = None
    arithmetic_intensity: float | None = None
    traits: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] | None = None
    occupancy: dict[str, Any] | None = None
    features: dict[str, float] = field(default_factory=dict)
    unknowns: list[str] = field(default_factory=list)
    dynamic_smem: int = 0
    sampling: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    #: work the analysis saw but could not count (a skipped line, a call it cannot follow): the
    #: cost model treats a non-empty list as "the estimate does not cover the launch"
    uncounted: list[str] = field(default_factory=list)
    #: work counted at an upper bound (a loop that can exit early, walked for its condition's trip
    #: count); the cost model prices it as a worst case and says so
    upper_bounded: list[str] = field(default_factory=list)
    #: idle warps and blocks: active_block_fraction, active_warps_per_block, warps_per_block
    activity: dict[str, float] = field(default_factory=dict)
    #: footprints per array for the cache model: {"arrays": {name: {hull_bytes, l2_bytes,
    #: block_hull_bytes, grid_dims}}}; empty when some access's traffic is unknown
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def barrier_count(self) -> int:
        return len(self.barriers)

    @property
    def divergent_branches(self) -> list[Branch]:
        return [b for b in self.branches if b.divergent]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dictionary (tuples become lists)."""
        return {
            "kernel": self.kernel,
            "arch": self.arch,
            "grid": list(self.grid),
            "block": list(self.block),
            "dynamic_smem": self.dynamic_smem,
            "global_accesses": [a.to_dict() for a in self.global_accesses],
            "shared_accesses": [a.to_dict() for a in self.shared_accesses],
            "branches": [b.to_dict() for b in self.branches],
            "barriers": [b.to_dict() for b in self.barriers],
            "loops": [lp.to_dict() for lp in self.loops],
            "flops": self.flops,
            "global_bytes": self.global_bytes,
            "global_useful_bytes": self.global_useful_bytes,
            "arithmetic_intensity": self.arithmetic_intensity,
            "traits": self.traits,
            "resources": self.resources,
            "occupancy": self.occupancy,
            "features": dict(self.features),
            "unknowns": list(self.unknowns),
            "sampling": self.sampling,
            "duration_s": self.duration_s,
            "uncounted": list(self.uncounted),
            "upper_bounded": list(self.upper_bounded),
            "activity": dict(self.activity),
            "cache": self.cache,
        }
