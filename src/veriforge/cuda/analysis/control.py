"""Divergence and synchronisation: per-warp agreement of branch conditions, barrier hazards.

A branch diverges in a warp when the warp's *active* lanes disagree on its condition (or, for a
loop, on how many times to iterate). Every sampled warp is checked at every visit, so the report
can say not only *whether* a branch diverges but *where*: in every warp (``threadIdx.x % 2``), in
none (``threadIdx.x < 128`` with warp-aligned blocks), or only in the tail (``i < n`` when ``n``
is not a multiple of the block: the last block's boundary warp).

A barrier is flagged when any enclosing condition, loop bound or earlier ``return`` depends on
``threadIdx`` — decided from data dependencies, not from this launch alone, because a barrier that
only some threads of a block reach is undefined behaviour even when this launch happens to agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from veriforge.cuda.analysis.report import Barrier, Branch

BARRIER_CALLS = frozenset({"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"})
WARP_PRIMITIVE_PREFIXES = ("__shfl", "__ballot", "__any_sync", "__all_sync", "__match_", "__reduce_", "__uni_sync")
WARP_PRIMITIVES = frozenset({"__activemask", "__syncwarp", "__any", "__all", "__ballot"})
CG_WARP_METHODS = frozenset({"shfl", "shfl_down", "shfl_up", "shfl_xor", "ballot", "any", "all", "match_any"})


def is_warp_primitive(name: str) -> bool:
    return name in WARP_PRIMITIVES or name.startswith(WARP_PRIMITIVE_PREFIXES)


@dataclass(frozen=True)
class Cond:
    """An enclosing condition as seen by a statement: source text, line, depends on threadIdx?"""

    text: str
    line: int
    thread_dependent: bool
    #: depends on blockIdx: blocks the analysis did not sample may decide it differently
    block_dependent: bool = False


def divergent_warps(cond: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(W,) True where the active lanes of the warp disagree on a boolean condition."""
    t = (cond & mask).sum(axis=1)
    a = mask.sum(axis=1)
    return (t > 0) & (t < a)


def varying_warps(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(W,) True where active lanes hold different values (loop trip counts)."""
    hi = np.where(mask, values, -np.inf).max(axis=1)
    lo = np.where(mask, values, np.inf).min(axis=1)
    return mask.any(axis=1) & (hi != lo)


@dataclass
class BranchAcc:
    line: int
    condition: str
    kind: str
    warps: float = 0.0
    divergent: float = 0.0
    divergent_interior: bool = False
    unknown: str | None = None
    thread_dependent: bool = False
    #: no sampled lane reached it while a blockIdx-dependent condition stood in the way (walk._note_unreached)
    unreached_block_dependent: bool = False

    def add(self, div: np.ndarray, active: np.ndarray, weight: np.ndarray, tail: np.ndarray) -> None:
        self.warps += float(weight[active].sum())
        self.divergent += float(weight[div].sum())
        if (div & ~tail).any():
            self.divergent_interior = True

    def result(self) -> Branch:
        if self.unknown is not None:
            return Branch(
                self.line,
                self.condition,
                None,
                self.unknown,
                self.kind,  # type: ignore[arg-type]
                thread_dependent=self.thread_dependent,
            )
        if self.warps == 0:
            return Branch(
                self.line,
                self.condition,
                None,
                "never reached by the sampled threads",
                self.kind,
                thread_dependent=self.thread_dependent,
            )  # type: ignore[arg-type]
        frac = self.divergent / self.warps
        if self.divergent == 0:
            scope = "none"
        elif self.divergent >= self.warps:
            scope = "all"
        elif not self.divergent_interior:
            scope = "tail"
        else:
            scope = "some"
        return Branch(
            self.line,
            self.condition,
            self.divergent > 0,
            None,
            self.kind,  # type: ignore[arg-type]
            scope,
            frac,
            self.thread_dependent,
        )  # type: ignore[arg-type]


@dataclass
class BarrierAcc:
    line: int
    name: str
    flagged: bool = False
    condition: str | None = None
    divergent: bool | None = False
    conditions: list[str] = field(default_factory=list)

    def add(self, conds: list[Cond], block_partial: bool | None) -> None:
        for c in conds:
            if c.thread_dependent:
                self.flagged = True
                if self.condition is None:
                    self.condition = c.text
        if block_partial is None:
            self.divergent = None
        elif block_partial and self.divergent is not None:
            self.divergent = True

    def result(self) -> Barrier:
        return Barrier(self.line, self.flagged, self.condition, self.name, self.divergent)


def block_partial(mask: np.ndarray, valid: np.ndarray, block_of_warp: np.ndarray) -> bool:
    """True when some block has both arriving and non-arriving threads at this point."""
    nb = int(block_of_warp.max()) + 1 if block_of_warp.size else 0
    arrive = np.bincount(block_of_warp, weights=(mask & valid).sum(axis=1), minlength=nb)
    total = np.bincount(block_of_warp, weights=valid.sum(axis=1), minlength=nb)
    return bool(((arrive > 0) & (arrive < total)).any())
