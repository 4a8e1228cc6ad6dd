"""Random CSR matrices for spmv_csr.

Row lengths are deliberately uneven (what makes SpMV kernels differ): most rows draw a length around
the average from a gamma distribution, some rows are empty, and `heavy_rows` rows get many times the
average, so both thread-per-row load imbalance and empty-row handling are exercised. The total is
exactly `nnz` (the buffer sizes in task.toml depend on it); column indices are distinct and sorted
within each row; values are non-zero.
"""

from __future__ import annotations

import numpy as np


def _row_lengths(rows: int, cols: int, nnz: int, heavy_rows: int, rng: np.random.Generator) -> np.ndarray:
    if nnz > rows * cols:
        raise ValueError(f"nnz={nnz} does not fit a {rows} x {cols} matrix")
    weights = rng.gamma(shape=1.5, scale=1.0, size=rows)
    heavy = rng.choice(rows, size=min(heavy_rows, rows), replace=False)
    weights[heavy] = weights.mean() * 15.0 + 1.0
    light = np.setdiff1d(np.arange(rows), heavy)
    if light.size > 1:                                           # ~5 % empty rows, at least one
        empty = light[rng.random(light.size) < 0.05]
        weights[empty if empty.size else light[:1]] = 0.0
    if weights.sum() == 0.0:
        weights[:] = 1.0
    lengths = rng.multinomial(nnz, weights / weights.sum())
    # A row cannot hold more than `cols` entries: move the excess to non-empty rows with room.
    excess = int(np.maximum(lengths - cols, 0).sum())
    lengths = np.minimum(lengths, cols)
    while excess:
        room = np.flatnonzero((lengths < cols) & (weights > 0))
        if room.size == 0:
            raise ValueError(f"nnz={nnz} is too dense for {rows} x {cols} with empty rows; lower nnz")
        take = rng.choice(room, size=min(excess, room.size), replace=False)
        lengths[take] += 1
        excess -= take.size
    return lengths


def make_inputs(config: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols, nnz = int(config["rows"]), int(config["cols"]), int(config["nnz"])
    lengths = _row_lengths(rows, cols, nnz, int(config.get("heavy_rows", 0)), rng)
    row_ptr = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=row_ptr[1:])
    col_idx = np.empty(nnz, dtype=np.int32)
    for r in range(rows):
        k = int(lengths[r])
        if k:
            col_idx[row_ptr[r]:row_ptr[r + 1]] = np.sort(rng.choice(cols, size=k, replace=False))
    magnitude = rng.uniform(0.1, 1.0, size=nnz)
    sign = np.where(rng.random(nnz) < 0.5, -1.0, 1.0)
    values = (magnitude * sign).astype(np.float32)
    return {"row_ptr": row_ptr, "col_idx": col_idx, "values": values}
