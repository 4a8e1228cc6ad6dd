"""What the caches can save: L1 reuse between neighbouring loop iterations, footprints for L2.

Without a cache model every global request is charged to DRAM, so a naive matmul — whose warps
re-read the sector they read one iteration earlier and share rows with the other warps of their
block — looks several times slower than on a GPU, and a search is rewarded for block shapes that
merely move traffic around. This module turns the sampled visits of each global access site into
the quantities the cost model needs:

* **L2 sectors** (traffic that misses L1). For loads, a block's sectors in one iteration are
  deduplicated across its warps (they run close together and share the SM's L1), and the sectors
  it already touched one iteration earlier are hits. The previous iteration's addresses come from
  each lane's address stride, measured by pairing two walked iterations of the innermost loop (the
  walker visits iterations 0, t/2 and t-1, so the stride is exact for affine addresses). Stores
  and atomics always go to L2 (L1 is write-through).
* **Footprints** per array: the address range the whole launch touches (the compulsory DRAM
  traffic cannot exceed it, nor the L2 traffic), the range one block touches, and the grid
  dimensions the addresses depend on — blocks that differ only in a dimension the array does not
  depend on read the same data, so a wave of blocks shares it in L2.

Everything here is derived from the sampled addresses; nothing assumes a kernel name or shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .memory import SECTOR

__all__ = ["ArrayFootprint", "SiteReuse", "array_footprints", "site_reuse"]

#: consecutive iterations the per-iteration new-sector count is averaged over (a 4-byte stride
#: crosses a 32-byte sector every 8 iterations)
REUSE_PHASES = 8
#: sampled blocks the (sort-heavy) reuse counts are taken on; the share found applies to all
REUSE_BLOCKS = 8
_BLOCK_STRIDE = float(2**44)
_SECTOR_BIAS = float(2**42)  # keys: block * stride + sector (exact in float64 for realistic sizes)


@dataclass
class SiteReuse:
    """L1-filtered traffic of one global access site: the share of its warp-request sectors that reach L2."""

    l2_fraction: float
    block_iteration_sectors: float  # mean distinct sectors one block touches in one iteration
    lo: float | None = None  # lowest and highest byte address touched (sampled, active lanes)
    hi: float | None = None
    block_hull_bytes: float | None = None  # mean over sampled blocks of their address range
    grid_dims: set[int] = field(default_factory=set)  # grid dimensions the addresses depend on


@dataclass
class ArrayFootprint:
    """What one array (a pointer parameter or global buffer) costs the memory hierarchy."""

    hull_bytes: float
    l2_bytes: float
    block_hull_bytes: float
    grid_dims: list[int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "hull_bytes": self.hull_bytes,
            "l2_bytes": self.l2_bytes,
            "block_hull_bytes": self.block_hull_bytes,
            "grid_dims": self.grid_dims,
        }


def _keys(addr: np.ndarray, mask: np.ndarray, width: int, block_of_warp: np.ndarray) -> np.ndarray:
    """Distinct (block, sector) keys the active lanes touch."""
    # sectors are shifted by _SECTOR_BIAS so an address below a pointer (a halo read at -1) keys
    # into its own block's range, not the previous block's
    first = np.floor(addr / SECTOR) + _SECTOR_BIAS
    last = np.floor((addr + width - 1) / SECTOR) + _SECTOR_BIAS
    blk = np.broadcast_to(block_of_warp[:, None].astype(np.float64), addr.shape)
    k1 = (blk * _BLOCK_STRIDE + first)[mask]
    extra = mask & (last != first)
    k2 = (blk * _BLOCK_STRIDE + last)[extra]
    return np.unique(np.concatenate([k1, k2]))


def _block_mult(mask: np.ndarray, mult: np.ndarray, block_of_warp: np.ndarray, nblocks: int) -> np.ndarray:
    """Per sampled block, the mean multiplicity of its warps that are active in this visit."""
    active = mask.any(axis=1)
    total = np.bincount(block_of_warp[active], weights=mult[active], minlength=nblocks)
    count = np.bincount(block_of_warp[active], minlength=nblocks)
    return np.divide(total, count, out=np.zeros(nblocks), where=count > 0)


def _grid_dims(addr: np.ndarray, mask: np.ndarray, lanes: Any) -> set[int]:
    """Grid dimensions along which two sampled blocks (equal elsewhere) touch different addresses."""
    blocks = np.asarray(lanes.sampled_blocks, dtype=np.int64).reshape(-1, 3)
    wpb = int(np.sum(lanes.block_of_warp == 0))
    dims: set[int] = set()
    for d in range(3):
        if lanes.grid[d] <= 1:
            continue
        others = [e for e in range(3) if e != d]
        seen: dict[tuple[int, int], int] = {}
        for i, b in enumerate(blocks):
            key = (int(b[others[0]]), int(b[others[1]]))
            j = seen.setdefault(key, i)
            if j == i:
                continue
            rows_i = slice(i * wpb, (i + 1) * wpb)
            rows_j = slice(j * wpb, (j + 1) * wpb)
            both = mask[rows_i] & mask[rows_j]
            if both.any() and np.any(addr[rows_i][both] != addr[rows_j][both]):
                dims.add(d)
                break
            if mask[rows_i].any() != mask[rows_j].any():
                dims.add(d)  # one block works, the other does not: the data differ along d
                break
    return dims


def _subset(nblocks: int) -> np.ndarray:
    """Sampled blocks the reuse counts are taken on (evenly spread, first and last included)."""
    if nblocks <= REUSE_BLOCKS:
        return np.arange(nblocks)
    return np.unique(np.linspace(0, nblocks - 1, REUSE_BLOCKS).round().astype(np.int64))


def site_reuse(visits: list[tuple[Any, np.ndarray, np.ndarray, np.ndarray]], kind: str, width: int,
               lanes: Any) -> SiteReuse | None:
    """The L2 traffic and footprint of one site from its sampled visits (None when there are none)."""
    from .memory import sectors_per_warp

    if not visits:
        return None
    nblocks = len(lanes.sampled_blocks)
    bow_all = lanes.block_of_warp
    rows = np.isin(bow_all, _subset(nblocks))
    bow = bow_all[rows]
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, (iters, _a, _m, _w) in enumerate(visits):
        if iters:
            groups.setdefault((iters[:-1], iters[-1][0]), []).append(i)
    new_w = all_w = 0.0
    iter_sectors: list[float] = []
    lo = hi = None
    block_lo = np.full(nblocks, np.inf)
    block_hi = np.full(nblocks, -np.inf)
    dims: set[int] = set()
    for iters, addr_full, mask_full, mult_full in visits:
        if not mask_full.any():
            continue
        vals = addr_full[mask_full]
        lo = float(vals.min()) if lo is None else min(lo, float(vals.min()))
        hi = float(vals.max()) + width if hi is None else max(hi, float(vals.max()) + width)
        amin = np.where(mask_full, addr_full, np.inf).min(axis=1)
        amax = np.where(mask_full, addr_full + width, -np.inf).max(axis=1)
        np.minimum.at(block_lo, bow_all, amin)
        np.maximum.at(block_hi, bow_all, amax)
        if len(dims) < 3:
            dims |= _grid_dims(addr_full, mask_full, lanes)
        addr, mask, mult = addr_full[rows], mask_full[rows], mult_full[rows]
        if not mask.any():
            continue
        keys = _keys(addr, mask, width, bow)
        blk_of_key = np.floor(keys / _BLOCK_STRIDE).astype(np.int64)
        per_block_all = np.bincount(blk_of_key, minlength=nblocks).astype(np.float64)
        per_block_new = per_block_all
        if kind == "load" and iters and iters[-1][1] > 0:
            partner = next((j for j in groups.get((iters[:-1], iters[-1][0]), ())
                            if visits[j][0][-1][1] != iters[-1][1]), None)
            if partner is not None:
                p_iters, p_addr, p_mask, _pw = visits[partner]
                both = mask & p_mask[rows]
                delta = np.where(both, (addr - p_addr[rows]) / float(iters[-1][1] - p_iters[-1][1]), 0.0)
                # Which iteration a sampled visit lands on is arbitrary with respect to sector
                # boundaries (the middle one of a float loop is often exactly on one), so the new
                # sectors per iteration are averaged over the iterations of one sector period.
                moving = np.abs(delta[both])
                moving = moving[(moving > 0) & (moving < SECTOR)]
                phases = min(REUSE_PHASES, int(np.ceil(SECTOR / moving.min()))) if moving.size else 1
                counts = np.zeros(nblocks)
                for j in range(phases):
                    cur = _keys(addr + j * delta, mask, width, bow)
                    prev = _keys(addr + (j - 1) * delta, both, width, bow)
                    fresh = cur[~np.isin(cur, prev, assume_unique=True)]
                    counts += np.bincount(np.floor(fresh / _BLOCK_STRIDE).astype(np.int64), minlength=nblocks)
                per_block_new = counts / phases
        bm = _block_mult(mask, mult, bow, nblocks)
        # a block's warps carry its weight; the mean active-warp multiplicity stands for the block
        new_w += float((per_block_new * bm).sum())
        warp_sectors, _useful = sectors_per_warp(addr, width, mask)
        all_w += float((warp_sectors * mult).sum())
        iter_sectors.append(float(per_block_all[per_block_all > 0].mean()))
    seen = np.isfinite(block_lo)
    block_hull = float((block_hi[seen] - block_lo[seen]).mean()) if seen.any() else None
    return SiteReuse(
        l2_fraction=(new_w / all_w if all_w else 1.0) if kind == "load" else 1.0,
        block_iteration_sectors=float(np.mean(iter_sectors)) if iter_sectors else 0.0,
        lo=lo,
        hi=hi,
        block_hull_bytes=block_hull,
        grid_dims=dims,
    )


def array_footprints(sites: list[tuple[str, float | None, SiteReuse | None]]) -> dict[str, ArrayFootprint] | None:
    """Per array, from ``(array, l2_bytes, reuse)`` of each of its sites; None when some site's
    traffic or addresses are unknown (a footprint that leaves a site out would look cheap)."""
    ranges: dict[str, list[tuple[float, float]]] = {}
    l2: dict[str, float] = {}
    blocks: dict[str, float] = {}
    dims: dict[str, set[int]] = {}
    for array, l2_bytes, r in sites:
        if l2_bytes is None or r is None:
            return None
        l2[array] = l2.get(array, 0.0) + l2_bytes
        if r.lo is not None and r.hi is not None:
            ranges.setdefault(array, []).append((r.lo, r.hi))
        blocks[array] = blocks.get(array, 0.0) + (r.block_hull_bytes or 0.0)
        dims.setdefault(array, set()).update(r.grid_dims)
    out: dict[str, ArrayFootprint] = {}
    for array, total in l2.items():
        spans = sorted(ranges.get(array, []))
        hull = 0.0
        cur_lo = cur_hi = None
        for lo, hi in spans:  # union of the sites' ranges
            if cur_hi is None or lo > cur_hi:
                if cur_hi is not None and cur_lo is not None:
                    hull += cur_hi - cur_lo
                cur_lo, cur_hi = lo, hi
            else:
                cur_hi = max(cur_hi, hi)
        if cur_hi is not None and cur_lo is not None:
            hull += cur_hi - cur_lo
        hull = float(np.ceil(hull / SECTOR) * SECTOR)
        out[array] = ArrayFootprint(hull, total, min(blocks.get(array, 0.0), hull) if hull else 0.0,
                                    sorted(dims.get(array, set())))
    return out
