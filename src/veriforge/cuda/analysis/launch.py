"""Which threads the analysis evaluates, and how many real warps each sampled warp stands for.

A launch may have millions of threads; evaluating every one is unnecessary because almost every
kernel behaves the same in all interior blocks and differs only at the edges (the ``i < n`` tail,
the first tile). So the analysis evaluates *every thread* of a stratified sample of blocks: along
each grid dimension the first and the last block plus the middle block of each of up to
:data:`INTERIOR_STRATA` equal strata of the interior (all blocks when a dimension has at most
:data:`EXACT_DIM` of them). Several interior strata matter for oversized grids: when most blocks
of a dimension are idle (a grid larger than the data, its threads failing the bounds check), one
middle sample would be idle and stand for the whole interior, making the launch look almost free
— an optimiser exploited exactly that. Each sampled block carries a weight — the number of real blocks
it represents — so per-launch totals (requests, bytes, FLOPs) are exact whenever interior blocks
behave alike, and the first and the last block are always seen exactly. Small grids (at most
:data:`EXACT_BLOCKS` blocks) are enumerated completely.

Lanes are laid out as arrays of shape ``(warps, 32)``: row ``w`` is one warp of one sampled block,
built the way the hardware forms warps (linear thread id ``x + y*bx + z*bx*by``, 32 per warp).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise, product
from typing import Any

import numpy as np

from veriforge.errors import LaunchError

EXACT_DIM = 4
EXACT_BLOCKS = 16
INTERIOR_STRATA = 5
#: samples added between two neighbouring samples of different activity, per refinement round
REFINE_POINTS = 6
#: refinement rounds at most (each re-walks the kernel on the denser sample)
REFINE_ROUNDS = 3
WARP = 32
MAX_BLOCK_THREADS = 1024


class LaunchConfigError(LaunchError, ValueError):
    """grid/block are not a valid CUDA launch configuration."""


def dim3(value: int | tuple[int, ...] | list[int], what: str) -> tuple[int, int, int]:
    """Normalise ``256`` / ``(16, 16)`` / ``[4, 4, 2]`` to a 3-tuple of positive ints."""
    if isinstance(value, bool):
        raise LaunchConfigError(f"{what} must be an int or a tuple of up to 3 ints, not {value!r}")
    if isinstance(value, int | np.integer):
        dims = [int(value)]
    else:
        try:
            dims = [int(v) for v in value]
        except (TypeError, ValueError) as exc:
            raise LaunchConfigError(f"{what} must be an int or a tuple of up to 3 ints, not {value!r}") from exc
    if not 1 <= len(dims) <= 3:
        raise LaunchConfigError(f"{what} must have 1 to 3 dimensions, not {len(dims)}")
    if any(d < 1 for d in dims):
        raise LaunchConfigError(f"{what} dimensions must be positive, got {tuple(dims)}")
    while len(dims) < 3:
        dims.append(1)
    return dims[0], dims[1], dims[2]


def _strata(n: int) -> list[tuple[int, float]]:
    """(index, weight) samples along one grid dimension of ``n`` blocks.

    The first and last block stand for themselves; the interior ``1 .. n-2`` is cut into up to
    :data:`INTERIOR_STRATA` equal strata, each represented by its middle block with a weight equal
    to the stratum's size (weights sum to ``n``).
    """
    if n <= EXACT_DIM:
        return [(i, 1.0) for i in range(n)]
    interior = n - 2
    k = min(INTERIOR_STRATA, interior)
    out = [(0, 1.0)]
    for j in range(k):
        lo = 1 + (j * interior) // k
        hi = 1 + ((j + 1) * interior) // k
        out.append(((lo + hi - 1) // 2, float(hi - lo)))
    out.append((n - 1, 1.0))
    return out


@dataclass(frozen=True)
class Lanes:
    """The sampled threads as ``(warps, 32)`` arrays plus per-warp metadata."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    tid: tuple[np.ndarray, np.ndarray, np.ndarray]
    bid: tuple[np.ndarray, np.ndarray, np.ndarray]
    valid: np.ndarray  # (W, 32) bool: False for padding lanes of a partial last warp
    warp_weight: np.ndarray  # (W,) real warps each sampled warp stands for
    warp_in_block: np.ndarray  # (W,) warp index inside its block
    block_of_warp: np.ndarray  # (W,) index into sampled_blocks
    sampled_blocks: tuple[tuple[int, int, int], ...]
    tail_block: np.ndarray  # (W,) True when the warp's block is the last along some dimension (> 1)
    exact: bool

    @property
    def shape(self) -> tuple[int, int]:
        return self.valid.shape  # type: ignore[return-value]

    @property
    def launch_warps(self) -> float:
        return float(self.warp_weight.sum())

    def describe(self) -> dict[str, object]:
        return {
            "sampled_blocks": [list(b) for b in self.sampled_blocks],
            "sampled_warps": int(self.valid.shape[0]),
            "exact": self.exact,
            "strategy": "all blocks" if self.exact else "first, last and interior strata along each grid dimension",
        }


def _weights(indices: list[int], n: int) -> list[tuple[int, float]]:
    """(index, weight) for sorted sample indices along a dimension of ``n`` blocks: the first and
    last block stand for themselves, each interior sample for the interior blocks nearest to it."""
    idx = sorted(set(indices) | {0, n - 1})
    if n <= 2 or len(idx) == n:
        return [(i, 1.0) for i in idx]
    inner = [i for i in idx if 0 < i < n - 1]
    out = [(0, 1.0)]
    for j, i in enumerate(inner):
        lo = 1 if j == 0 else (inner[j - 1] + i) // 2 + 1
        hi = n - 2 if j == len(inner) - 1 else (i + inner[j + 1]) // 2
        out.append((i, float(hi - lo + 1)))
    out.append((n - 1, 1.0))
    return out


def refine(lanes: Lanes, block_active: np.ndarray) -> list[list[tuple[int, float]]] | None:
    """Denser samples where whole blocks switch between working and idle, or None if none do.

    An oversized grid (blocks past the data exit at once) has a boundary inside one stratum; the
    stratum's single sample is either active or idle and stands for all of it, so the working
    share — and every total — comes out up to a stratum too high or too low. Between two
    neighbouring samples of different activity, REFINE_POINTS more are placed, and weights are
    recomputed; repeated, this finds the boundary to within a few blocks.
    """
    blocks = np.asarray(lanes.sampled_blocks, dtype=np.int64).reshape(-1, 3)
    changed = False
    per_dim: list[list[tuple[int, float]]] = []
    for d in range(3):
        n = lanes.grid[d]
        idx = sorted({int(b) for b in blocks[:, d]})
        active_at = {i: bool(block_active[blocks[:, d] == i].any()) for i in idx}
        extra: set[int] = set()
        for a, b in pairwise(idx):
            if active_at[a] != active_at[b] and b - a > 1:
                step = (b - a) / (REFINE_POINTS + 1)
                extra |= {a + max(1, round(step * (k + 1))) for k in range(REFINE_POINTS)} - {b}
        changed = changed or bool(extra - set(idx))
        per_dim.append(_weights(idx + sorted(extra), n) if n > EXACT_DIM else [(i, 1.0) for i in range(n)])
    return per_dim if changed else None


#: most single-block walks :func:`pin_boundaries` spends per analysis (a bisection of a dimension
#: of 2**31 - 1 blocks takes 31)
PIN_WALKS = 128
#: most gaps between differing neighbouring samples worth bisecting: more means a pattern (work
#: in every k-th block) that bisection cannot pin within the budget - probe_activity judges it,
#: and a kernel cannot make every analysis spend the whole budget
PIN_GAPS = 8


def busy_blocks(lanes: Lanes, walker: Any) -> np.ndarray:
    """Per sampled block: does any of its warps do work."""
    return np.bincount(lanes.block_of_warp, weights=(walker.warp_work > 0).astype(np.float64),
                       minlength=len(lanes.sampled_blocks)) > 0


def _signatures(lanes: Lanes, walker: Any) -> np.ndarray:
    """Per sampled block: the work sites any of its warps reached (a bit set; 0 = idle). Warps of a
    block are contiguous in the lanes."""
    sites = walker.warp_sites
    starts = np.flatnonzero(np.r_[True, np.diff(lanes.block_of_warp) != 0])
    return np.bitwise_or.reduceat(sites, starts) if len(sites) else np.zeros(0, dtype=np.uint64)


def pin_boundaries(lanes: Lanes, walker: Any, walk: Callable[[Lanes], Any]) -> list[list[tuple[int, float]]] | None:
    """Samples with every switch in what blocks do found to the block, or None when no
    neighbouring samples differ (or the budget of walks ran out: then :func:`refine`'s samples stand).

    Each sample stands for the blocks nearest to it, so a total is right only if those blocks do
    what it does. :func:`refine` narrows a switch between working and idle samples by a constant
    factor per round, which left a grid of 2**31 - 1 blocks with a gap of a million blocks: the
    CUDA samples' vectorAdd (196 working blocks) counted one block's work. And blocks that all do
    *some* work can still differ in *which*: the samples' reduce3 on twice the blocks its data
    needs loads in the first half only, and its loads came out 20 % high. So a block's signature is
    the set of work sites (accesses, FLOPs) it reaches; each gap between samples of different
    signature is bisected with walks of single blocks (the other dimensions held where the two
    samples differ) until the switches in it are found to the block, and the two blocks on each
    side of a switch are sampled: the edge blocks - often partial, the ``i < n`` tail - stand for
    themselves and their neighbours for the full blocks behind them."""
    blocks = [tuple(int(v) for v in b) for b in lanes.sampled_blocks]
    sig = dict(zip(blocks, (int(x) for x in _signatures(lanes, walker)), strict=True))
    if len(set(sig.values())) < 2:
        return None
    per_dim = [sorted({b[d] for b in blocks}) for d in range(3)]
    extra: list[set[int]] = [set(), set(), set()]
    budget = PIN_WALKS

    def other(b: tuple[int, ...], d: int, i: int) -> tuple[int, ...]:
        return tuple(i if k == d else b[k] for k in range(3))

    # per dimension, the gaps between neighbouring samples that differ, with the first row (other
    # coordinates) along which they do
    gaps_of = [[(a, c, row) for a, c in pairwise(per_dim[d])
                if lanes.grid[d] > EXACT_DIM
                and (row := next((b for b in blocks if b[d] == a and sig[b] != sig[other(b, d, c)]), None))]
               for d in range(3)]
    if sum(len(g) for g in gaps_of) > PIN_GAPS:
        return None

    def signature(block: tuple[int, ...]) -> int:
        one = build_lanes(lanes.grid, lanes.block, [[(block[k], 1.0)] for k in range(3)])
        return int(_signatures(one, walk(one))[0])

    for d in range(3):
        n = lanes.grid[d]
        for a, c, row in gaps_of[d]:
            gaps = [(a, c, sig[other(row, d, a)], sig[other(row, d, c)])]
            while gaps:
                lo, hi, s_lo, s_hi = gaps.pop()
                if hi - lo <= 1:
                    extra[d] |= {i for i in (lo - 1, lo, hi, hi + 1) if 0 <= i < n}
                    continue
                if budget <= 0:
                    return None
                budget -= 1
                m = (lo + hi) // 2
                s_m = signature(other(row, d, m))
                if s_m != s_lo:
                    gaps.append((lo, m, s_lo, s_m))
                if s_m != s_hi:
                    gaps.append((m, hi, s_m, s_hi))
    if not any(extra[d] - set(per_dim[d]) for d in range(3)):
        return None
    return [_weights(per_dim[d] + sorted(extra[d]), lanes.grid[d]) if lanes.grid[d] > EXACT_DIM
            else [(i, 1.0) for i in range(lanes.grid[d])] for d in range(3)]


#: consecutive probe blocks in the middle of each sampled dimension: activity that repeats every
#: k <= PROBE_WINDOW blocks (``if (blockIdx.x % k) return;``) always shows up in them
PROBE_WINDOW = 64
#: probe blocks scattered over each sampled dimension (golden-ratio sequence: no period aliases them)
PROBE_SCATTER = 48
#: sampled blocks of the other dimensions each probe is combined with (active ones first)
PROBE_OTHER = 2


def _probe_indices(n: int, taken: set[int]) -> list[int]:
    """Blocks along a dimension of ``n`` to check the samples against (see :func:`probe_activity`)."""
    if n <= EXACT_DIM:
        return []
    lo = max(1, min(n // 2 - PROBE_WINDOW // 2, n - 1 - PROBE_WINDOW))
    points = set(range(lo, min(n - 1, lo + PROBE_WINDOW)))
    golden = 0.6180339887498949
    points |= {1 + int(((k * golden) % 1.0) * (n - 2)) for k in range(1, PROBE_SCATTER + 1)}
    return sorted(points - taken)


def _neighbours(i: int, idx: list[int]) -> tuple[int, int]:
    """The samples at or around ``i`` in sorted ``idx`` (equal when ``i`` is sampled)."""
    k = int(np.searchsorted(idx, i))
    if k < len(idx) and idx[k] == i:
        return i, i
    return idx[max(k - 1, 0)], idx[min(k, len(idx) - 1)]


def probe_activity(lanes: Lanes, walker: Any, walk: Callable[[Lanes], Any]) -> str:
    """Check that the sampled blocks stand for the others in whether they do any work, or say where not.

    Each sample stands for the blocks nearest to it, so totals are right only if those blocks are
    as busy as it is. Where both samples around a stretch of blocks are active (or both idle) the
    stretch is claimed to be so too; probe blocks (:func:`_probe_indices`, combined with sampled
    blocks of the other dimensions) are walked and their activity compared with that claim. A
    stretch between samples of different activity holds a boundary :func:`refine` placed to within
    a few blocks: probes there are not held against the samples. Returns "" when every probe agrees,
    else a sentence naming the first disagreement (e.g. work only in every 32nd block)."""
    blocks = [tuple(int(v) for v in b) for b in lanes.sampled_blocks]
    busy = busy_blocks(lanes, walker)
    if busy.all():
        # every sample works: blocks between them can only be busy too (the totals are right) or
        # idle (then they are too high, never too low) - not worth a walk on every analysis
        return ""
    active = dict(zip(blocks, (bool(x) for x in busy), strict=True))
    per_dim = [sorted({b[d] for b in blocks}) for d in range(3)]
    for d in range(3):
        probes = _probe_indices(lanes.grid[d], set(per_dim[d]))
        if not probes:
            continue
        others = []
        for e in range(3):
            if e == d:
                others.append([0])
                continue
            ranked = sorted(per_dim[e], key=lambda i, e=e: not any(active[b] for b in blocks if b[e] == i))
            others.append(ranked[:PROBE_OTHER])
        samples = [[(i, 1.0) for i in (probes if e == d else others[e])] for e in range(3)]
        probe_lanes = build_lanes(lanes.grid, lanes.block, samples)
        seen = walk(probe_lanes)
        probe_busy = busy_blocks(probe_lanes, seen)
        for blk, now in zip(probe_lanes.sampled_blocks, probe_busy, strict=True):
            blk = tuple(int(v) for v in blk)
            lo, hi = _neighbours(blk[d], per_dim[d])
            near = [active.get(tuple(s if k == d else blk[k] for k in range(3))) for s in (lo, hi)]
            if None in near or near[0] != near[1]:
                continue  # no claim here (a boundary between the samples, or no such sampled block)
            if bool(now) != near[0]:
                axis = "xyz"[d]
                return (f"block {blk} is {'busy' if now else 'idle'} although the sampled blocks "
                        f"{lo} and {hi} around it along {axis} are {'busy' if near[0] else 'idle'}")
    return ""


def build_lanes(grid: tuple[int, int, int], block: tuple[int, int, int],
                samples: list[list[tuple[int, float]]] | None = None) -> Lanes:
    """Lay out every thread of the sampled blocks as warps (see the module docstring).

    ``samples`` (per grid dimension, ``(index, weight)`` pairs) replaces the default strata; see
    :func:`refine`."""
    threads = block[0] * block[1] * block[2]
    if threads > MAX_BLOCK_THREADS:
        raise LaunchConfigError(f"block {block} has {threads} threads; CUDA allows at most {MAX_BLOCK_THREADS}")
    total_blocks = grid[0] * grid[1] * grid[2]
    if samples is not None:
        per_dim = samples
        exact = all(len(s) == g for s, g in zip(samples, grid, strict=True))
    elif total_blocks <= EXACT_BLOCKS:
        per_dim = [[(i, 1.0) for i in range(g)] for g in grid]
        exact = True
    else:
        per_dim = [_strata(g) for g in grid]
        exact = all(g <= EXACT_DIM for g in grid)
    blocks = list(product(*per_dim))
    warps_per_block = -(-threads // WARP)
    lin = np.arange(warps_per_block * WARP)
    tx = lin % block[0]
    ty = (lin // block[0]) % block[1]
    tz = lin // (block[0] * block[1])
    valid_block = (lin < threads).reshape(warps_per_block, WARP)
    nb = len(blocks)
    shape = (nb * warps_per_block, WARP)

    def tile(a: np.ndarray) -> np.ndarray:
        return np.tile(a.reshape(warps_per_block, WARP), (nb, 1)).astype(np.float64)

    bx = np.repeat([float(b[0][0]) for b in blocks], warps_per_block * WARP).reshape(shape)
    by = np.repeat([float(b[1][0]) for b in blocks], warps_per_block * WARP).reshape(shape)
    bz = np.repeat([float(b[2][0]) for b in blocks], warps_per_block * WARP).reshape(shape)
    weights = np.repeat([b[0][1] * b[1][1] * b[2][1] for b in blocks], warps_per_block)
    tail = np.repeat([any(b[d][0] == grid[d] - 1 and grid[d] > 1 for d in range(3)) for b in blocks], warps_per_block)
    return Lanes(
        grid=grid,
        block=block,
        tid=(tile(tx), tile(ty), tile(tz)),
        bid=(bx, by, bz),
        valid=np.tile(valid_block, (nb, 1)),
        warp_weight=weights.astype(np.float64),
        warp_in_block=np.tile(np.arange(warps_per_block), nb),
        block_of_warp=np.repeat(np.arange(nb), warps_per_block),
        sampled_blocks=tuple((b[0][0], b[1][0], b[2][0]) for b in blocks),
        tail_block=tail,
        exact=exact,
    )
