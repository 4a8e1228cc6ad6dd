"""Reading the real values of integer inputs: index arrays give real addresses and trip counts.

CSR sparse kernels, gathers and binary searches do work that depends on their input *values*; without
them the analysis can only say "unknown". With ``data`` (the contents of read-only integer inputs)
the counts must be exact — computed here by hand from the arrays — and float inputs never read.
"""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda import analysis
from veriforge.cuda.evaluate.estimate import LazyInputs, estimate_launches

CSR = r"""
__global__ void spmv_scalar(const int* row_ptr, const int* col_idx, const float* values, const float* x,
                            float* y, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int p = row_ptr[r]; p < row_ptr[r + 1]; ++p) acc += values[p] * x[col_idx[p]];
        y[r] = acc;
    }
}
__global__ void find_row(const int* __restrict__ row_ptr, int* owner, int rows, int nnz) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= nnz) return;
    int lo = 0, hi = rows - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (__ldg(&row_ptr[mid]) <= p) lo = mid; else hi = mid - 1;
    }
    owner[p] = lo;
}
extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y,
                      int rows) {
    spmv_scalar<<<(rows + 63) / 64, 64>>>(row_ptr, col_idx, values, x, y, rows);
}
"""


def _csr(rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 40, size=rows)  # rows of 0..39 entries: trip counts vary inside and across warps
    row_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    col_idx = rng.integers(0, 500, size=int(row_ptr[-1])).astype(np.int32)
    return row_ptr, col_idx


def test_csr_trip_counts_come_from_row_ptr_and_are_counted_exactly() -> None:
    rows = 256
    row_ptr, col_idx = _csr(rows)
    nnz = int(row_ptr[-1])
    kw = dict(kernel="spmv_scalar", grid=rows // 64, block=64, params={"rows": rows}, use_nvcc=False)
    blind = analysis.analyze(CSR, **kw)
    assert blind.flops is None or any("values" in u or "row_ptr" in u for u in blind.unknowns)
    rep = analysis.analyze(CSR, **kw, data={"row_ptr": (row_ptr, 0), "col_idx": (col_idx, 0)})
    assert rep.flops == 2 * nnz  # one multiply-add per stored entry, from the real row lengths
    loads = {a.array: a for a in rep.global_accesses if a.kind == "load"}
    assert all(a.unknown is None for a in loads.values()), loads
    # warp requests of values[p]: each warp runs as many iterations as its longest row
    lengths = np.diff(row_ptr).reshape(-1, 32)
    assert loads["values"].requests == pytest.approx(float(lengths.max(axis=1).sum()))
    assert "row_ptr" in rep.sampling["input_values"] and "col_idx" in rep.sampling["input_values"]


def test_a_binary_search_over_an_input_is_run_iteration_by_iteration() -> None:
    rows = 100
    row_ptr, _ = _csr(rows, seed=3)
    nnz = int(row_ptr[-1])
    kw = dict(kernel="find_row", grid=(nnz + 127) // 128, block=128, params={"rows": rows, "nnz": nnz},
              use_nvcc=False)
    blind = analysis.analyze(CSR, **kw)
    assert any("while" in u or "row_ptr" in u for u in blind.unknowns)
    rep = analysis.analyze(CSR, **kw, data={"row_ptr": (row_ptr, 0)})
    (search,) = [a for a in rep.global_accesses if a.array == "row_ptr"]
    assert search.unknown is None
    # lo/hi halve a range of 100 rows: 6 or 7 probes per thread, every one counted
    (loop,) = rep.loops
    assert loop.trip_count in (6, 7) and loop.unknown is None
    store = next(a for a in rep.global_accesses if a.kind == "store")
    assert store.unknown is None and store.requests == pytest.approx(-(-nnz // 32), abs=1)


def test_float_inputs_are_never_drawn_or_read() -> None:
    rows = 128
    row_ptr, col_idx = _csr(rows, seed=5)
    drawn: list[int] = []

    def draw() -> dict:
        drawn.append(1)
        return {"row_ptr": row_ptr, "col_idx": col_idx, "values": np.ones(int(row_ptr[-1]), np.float32),
                "x": np.ones(500, np.float32)}

    names = ["row_ptr", "col_idx", "values", "x"]
    est = estimate_launches(CSR, "solve", {"rows": rows}, inputs=LazyInputs(draw, names))
    assert est.complete and drawn == [1]  # integer index arrays were needed: drawn once
    assert any("row_ptr" in a for a in est.assumptions)
    saxpy = r"""
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}
extern "C" void solve(const float* x, float* y, int n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }
"""
    drawn.clear()
    est = estimate_launches(saxpy, "solve", {"n": 1 << 20}, inputs=LazyInputs(draw, ["x"]))
    assert est.complete and drawn == []  # a float input decides no address: never drawn


def test_bool_and_expression_template_arguments_do_not_crash_the_analysis() -> None:
    # found on published CUSP-style code: `spmv_csr_vector_kernel<256, false>` crashed with ValueError
    src = r"""
template <unsigned int BLOCK, bool UseCache>
__global__ void k(const float* x, float* y, int n) {
    int i = BLOCK * blockIdx.x + threadIdx.x;
    if (i < n) y[i] = UseCache ? x[i] * 2.0f : x[i];
}
"""
    for use_cache in ("false", False, "true", True):
        rep = analysis.analyze(src, kernel="k", grid=4, block=256, params={"n": 1000}, use_nvcc=False,
                               template_args={"BLOCK": "2 * 128", "UseCache": use_cache})
        assert rep.flops == (1000 if use_cache in ("true", True) else 0), use_cache
    rep = analysis.analyze(src, kernel="k", grid=4, block=256, params={"n": 1000}, use_nvcc=False,
                           template_args={"BLOCK": "not a number", "UseCache": "false"})
    assert any("BLOCK" in u and "not a number" in u for u in rep.unknowns)
