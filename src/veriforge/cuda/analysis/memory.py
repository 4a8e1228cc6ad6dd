"""Coalescing (32-byte sectors per warp request) and shared-memory bank conflicts.

Both are pure functions of the byte addresses the 32 lanes of a warp touch in one request, so they
are computed here from ``(warps, 32)`` address arrays and an active-lane mask, vectorised over all
sampled warps at once (one ``np.unique`` per warp would dominate the analysis time).

Global memory: a request touches every 32-byte sector that any active lane's ``[addr, addr+w)``
overlaps; allocations are assumed to start 256-byte aligned (``cudaMalloc`` guarantees it).
Shared memory: 32 banks of 4 bytes; lanes reading the same 4-byte word are served by one broadcast;
accesses wider than 4 bytes are split into phases of 128 bytes (half-warps for 8 bytes, quarter-warps
for 16 bytes) as the hardware does, and the ways are the most distinct words one bank serves in one
phase.
"""

from __future__ import annotations

import numpy as np

SECTOR = 32
LINE = 128  # an L1 cache line: one L1 tag lookup ("wavefront") per distinct line a request touches
BANKS = 32
BANK_WIDTH = 4


def _distinct_per_row(keys: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Number of distinct keys among active entries, per row."""
    k = np.where(active, keys, np.inf)
    k.sort(axis=1)
    first = np.isfinite(k[:, :1]).astype(np.int64).ravel()
    new = (k[:, 1:] != k[:, :-1]) & np.isfinite(k[:, 1:])
    return first + new.sum(axis=1)


def sectors_per_warp(addr: np.ndarray, width: int, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sectors touched, distinct useful bytes) per warp for one request of ``width``-byte lanes."""
    first = np.floor(addr / SECTOR)
    last = np.floor((addr + width - 1) / SECTOR)
    keys = np.concatenate([first, last], axis=1)
    active = np.concatenate([mask, mask & (last != first)], axis=1)
    sectors = _distinct_per_row(keys, active)
    useful = _distinct_per_row(addr, mask) * width
    return sectors, useful


def lines_per_warp(addr: np.ndarray, width: int, mask: np.ndarray) -> np.ndarray:
    """Distinct 128-byte lines one request touches, per warp: the L1 passes it needs (a fully
    uncoalesced 4-byte load is 32 passes, a coalesced or broadcast one is 1)."""
    first = np.floor(addr / LINE)
    last = np.floor((addr + width - 1) / LINE)
    keys = np.concatenate([first, last], axis=1)
    active = np.concatenate([mask, mask & (last != first)], axis=1)
    return _distinct_per_row(keys, active)


def bank_ways(addr: np.ndarray, width: int, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(worst ways over phases, wavefronts) per warp for one shared-memory request."""
    warps = addr.shape[0]
    words_per_lane = max(1, -(-width // BANK_WIDTH))
    lanes_per_phase = max(1, min(32, (BANKS * BANK_WIDTH) // max(width, BANK_WIDTH)))
    phases = 32 // lanes_per_phase
    base = np.floor(addr / BANK_WIDTH)
    ways = np.zeros(warps, dtype=np.int64)
    wavefronts = np.zeros(warps, dtype=np.int64)
    for p in range(phases):
        sl = slice(p * lanes_per_phase, (p + 1) * lanes_per_phase)
        m = mask[:, sl]
        if not m.any():
            continue
        words = np.concatenate([base[:, sl] + j for j in range(words_per_lane)], axis=1)
        act = np.concatenate([m] * words_per_lane, axis=1)
        # distinct words per (warp, bank): dedupe words per row, then count per bank.
        k = np.where(act, words, np.inf)
        k.sort(axis=1)
        distinct = np.isfinite(k) & np.concatenate([np.ones((warps, 1), bool), k[:, 1:] != k[:, :-1]], axis=1)
        banks = np.where(distinct, np.mod(np.where(distinct, k, 0), BANKS), 0).astype(np.int64)
        rows = np.repeat(np.arange(warps), k.shape[1]).reshape(k.shape)
        counts = np.bincount((rows * BANKS + banks)[distinct], minlength=warps * BANKS).reshape(warps, BANKS)
        phase_ways = counts.max(axis=1)
        ways = np.maximum(ways, phase_ways)
        wavefronts += phase_ways
    return ways, wavefronts


def same_address_lanes(addr: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per warp, the most active lanes that target one address (0 for a warp with no active lane).

    Atomics to one address serialise: a warp request whose 32 lanes all hit a counter is 32
    read-modify-writes in a row at the L2 slice that owns it, not one.
    """
    k = np.where(mask, addr, np.inf)
    k.sort(axis=1)
    finite = np.isfinite(k)
    starts = np.concatenate([np.ones((k.shape[0], 1), bool), k[:, 1:] != k[:, :-1]], axis=1)
    run_id = np.cumsum(starts, axis=1) - 1
    rows = np.repeat(np.arange(k.shape[0]), k.shape[1]).reshape(k.shape)
    width = k.shape[1] + 1
    counts = np.bincount((rows * width + run_id)[finite], minlength=k.shape[0] * width).reshape(k.shape[0], width)
    return counts.max(axis=1)


def atomic_bank_ways(addr: np.ndarray, width: int, mask: np.ndarray) -> np.ndarray:
    """Per warp, shared-memory wavefronts of one atomic request: the most active lanes one bank serves.

    Unlike a load, lanes on the same word are not a broadcast: each lane's read-modify-write is
    its own bank access, so 32 lanes on one counter are 32 wavefronts.
    """
    banks = np.mod(np.floor(np.where(mask, addr, 0.0) / BANK_WIDTH), BANKS).astype(np.int64)
    rows = np.repeat(np.arange(addr.shape[0]), addr.shape[1]).reshape(addr.shape)
    counts = np.bincount((rows * BANKS + banks)[mask], minlength=addr.shape[0] * BANKS).reshape(-1, BANKS)
    del width  # one bank word per lane: 8-byte atomics use two banks but serialise the same way
    return counts.max(axis=1)
