"""The ``rows`` operator: thread-per-row kernels become warp- and block-per-row, and stay correct."""

from __future__ import annotations

import re

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators import apply_tunable, find_tunables
from veriforge.optiml.operators.rows import rows_edits

# `if (r < rows) { ... }` guard, a non-identity initial value (bias) and the `v = v + e` form.
ROW_SUM = """
// Each lane walks its own row.
__global__ void row_sum(const float* x, const float* bias, float* y, int rows, int cols) {
    int r = threadIdx.x + blockIdx.x * blockDim.x;
    if (r < rows) {
        float s = bias[r];
        for (int c = 0; c < cols; c++) s = s + x[(long long)r * cols + c];
        y[r] = s;
    }
}

extern "C" void solve(const float* x, const float* bias, float* y, int rows, int cols) {
    int threads = 64;
    row_sum<<<(rows + threads - 1) / threads, threads>>>(x, bias, y, rows, cols);
}
"""

# int max/min (one starting from the first column), a double sum with `-=`, several single-thread writes.
EXTREMES = """
__global__ void extremes(const int* x, int* y, double* z, int rows, int cols) {
    int r = blockDim.x * blockIdx.x + threadIdx.x;
    if (rows <= r) return;
    const int* in = x + r * cols;
    int m = in[0];
    for (int c = 1; c < cols; ++c) m = max(in[c], m);
    int lo = 2147483647;
    for (int c = 0; c < cols; ++c) lo = min(lo, in[c]);
    double acc = 0.0;
    for (int c = 0; c < cols; ++c) {
        double v = (double)in[c];
        acc -= v * 0.5;
    }
    y[2 * r] = m;
    y[2 * r + 1] = lo;
    z[r] = acc;
}

extern "C" void solve(const int* x, int* y, double* z, int rows, int cols) {
    extremes<<<(rows + 255) / 256, 256>>>(x, y, z, rows, cols);
}
"""

# Multi-pass softmax with the row count given as a product of two parameters.
SOFTMAX = """
__global__ void softmax(const float* x, float* y, int batch, int n, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= batch * n) return;
    const float* in = x + (long long)r * cols;
    float* out = y + (long long)r * cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, in[c]);
    float sum = 0.0f;
    for (int c = 0; c < cols; ++c) sum += expf(in[c] - m);
    float inv = 1.0f / sum;
    for (int c = 0; c < cols; ++c) out[c] = expf(in[c] - m) * inv;
}

extern "C" void solve(const float* x, float* y, int batch, int n, int cols) {
    softmax<<<(batch * n + 127) / 128, 128>>>(x, y, batch, n, cols);
}
"""

SHAPES = [(1, 1), (5, 7), (37, 33), (3, 100), (67, 31)]


def _edits(source: str) -> dict[str, str]:
    edits = rows_edits(source)
    assert [e.operator for e in edits] == ["rows", "rows"]
    return {e.evidence["variant"]: e.source for e in edits}


def _check_row_sum(source: str) -> None:
    mod = cpu.compile(source)
    for rows, cols in SHAPES:
        rng = np.random.default_rng(rows * 1000 + cols)
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        bias = rng.standard_normal(rows).astype(np.float32)
        y = np.full(rows, np.nan, np.float32)
        mod.call("solve", [x, bias, y, rows, cols])
        np.testing.assert_allclose(y, x.astype(np.float64).sum(1) + bias, rtol=1e-4, atol=1e-4)


def _check_extremes(source: str) -> None:
    mod = cpu.compile(source)
    for rows, cols in SHAPES:
        rng = np.random.default_rng(rows * 1000 + cols)
        x = rng.integers(-10**6, 10**6, (rows, cols)).astype(np.int32)
        y = np.zeros(2 * rows, np.int32)
        z = np.zeros(rows, np.float64)
        mod.call("solve", [x, y, z, rows, cols])
        assert (y[0::2] == x.max(1)).all() and (y[1::2] == x.min(1)).all()
        np.testing.assert_allclose(z, -0.5 * x.sum(1), rtol=1e-12)


def _check_softmax(source: str, shapes: list[tuple[int, int, int]]) -> None:
    mod = cpu.compile(source)
    for batch, n, cols in shapes:
        rng = np.random.default_rng(batch * 100 + n * 10 + cols)
        x = (rng.standard_normal((batch * n, cols)) * 30).astype(np.float32)
        y = np.full_like(x, np.nan)
        mod.call("solve", [x, y, batch, n, cols])
        e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)


def test_row_sum_both_variants_are_correct() -> None:
    edits = _edits(ROW_SUM)
    warp, block = edits["warp"], edits["block"]
    # warp-per-row: the lane strides, the butterfly, one writer, the old block expression in the new grid
    assert "for (int c = lane; c < cols; c += 32)" in warp
    assert "__shfl_xor_sync(0xffffffffu, s, off)" in warp and "if (lane == 0) y[r] = s;" in warp
    assert "<<<((long long)(rows) * 32 + threads - 1) / threads, threads>>>" in warp
    # block-per-row: the new tunable strides and launches, one block per row
    assert "#define ROW_THREADS 256" in block and "c += ROW_THREADS" in block
    assert "row_sum<<<rows, ROW_THREADS>>>" in block and "if (threadIdx.x == 0) y[r] = s;" in block
    assert "__global__ void row_sum(const float* x, const float* bias, float* y, int rows, int cols)" in block
    for source in (warp, block):
        assert "if (r >= rows) return;" in source and source.count("{") == source.count("}")
        _check_row_sum(source)


def test_int_max_min_and_double_sum_are_correct() -> None:
    edits = _edits(EXTREMES)
    # the int max starts from in[0], not the identity: lanes start at INT_MIN and in[0] is folded in after
    assert "m = max(m_in, m);" in edits["warp"]
    assert "__shared__ int row_partial_int[32];" in edits["block"]
    assert "__shared__ double row_partial_double[32];" in edits["block"]
    for source in edits.values():
        _check_extremes(source)


def test_softmax_is_correct_at_every_block_size_tune_can_pick() -> None:
    edits = _edits(SOFTMAX)
    shapes = [(1, 1, 1), (2, 3, 33), (5, 3, 7), (1, 7, 129)]
    # block-per-row: ROW_THREADS is the tunable; it must work for any power of two 32..1024
    [t] = [t for t in find_tunables(edits["block"]) if t.name == "ROW_THREADS"]
    assert "block" in t.roles
    for value in (32, 64, 256, 1024):
        _check_softmax(apply_tunable(edits["block"], t, value), shapes)
    # warp-per-row: the original literal block stays tunable and the grid follows it
    warp = edits["warp"]
    assert "<<<((long long)(batch * n) * 32 + 127) / 128, 128>>>" in warp
    [lit] = [t for t in find_tunables(warp) if t.kind == "launch"]
    for value in (32, 128, 512):
        _check_softmax(apply_tunable(warp, lit, value), shapes[1:3])


def test_prior_and_evidence_follow_the_findings() -> None:
    findings = [{"kind": "uncoalesced_load", "severity": 0.8, "line": 7, "message": "stride"},
                {"kind": "bank_conflict", "severity": 0.5, "line": 3, "message": "unrelated"}]
    edits = rows_edits(SOFTMAX, findings)
    assert {e.evidence["variant"] for e in edits} == {"warp", "block"}
    for e in edits:
        assert [f["kind"] for f in e.evidence["findings"]] == ["uncoalesced_load"]
        assert e.evidence["reductions"] == ["m", "sum"] and e.evidence["rows"] == "batch * n"
        assert e.prior >= 2.8
    assert all(e.prior < 2.5 for e in rows_edits(SOFTMAX))


REFUSED = {
    # a scan: the running max is read (stored) inside its loop
    "scan": """
__global__ void k(const int* x, int* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int run = -2147483647 - 1;
    for (int c = 0; c < cols; ++c) {
        run = max(run, x[r * cols + c]);
        y[r * cols + c] = run;
    }
}
extern "C" void solve(const int* x, int* y, int rows, int cols) {
    k<<<(rows + 127) / 128, 128>>>(x, y, rows, cols);
}
""",
    # the accumulator feeds its own update
    "acc_read": """
__global__ void k(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += x[r * cols + c] * s;
    y[r] = s;
}
extern "C" void solve(const float* x, float* y, int rows, int cols) {
    k<<<(rows + 127) / 128, 128>>>(x, y, rows, cols);
}
""",
    # memory accumulated at an index without the loop variable
    "rmw_not_indexed": """
__global__ void k(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (int c = 0; c < cols; ++c) y[r] += x[r * cols + c];
}
extern "C" void solve(const float* x, float* y, int rows, int cols) {
    k<<<(rows + 127) / 128, 128>>>(x, y, rows, cols);
}
""",
    # a loop that exits early
    "break": """
__global__ void k(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) { if (x[r * cols + c] < 0.0f) break; s += x[r * cols + c]; }
    y[r] = s;
}
extern "C" void solve(const float* x, float* y, int rows, int cols) {
    k<<<(rows + 127) / 128, 128>>>(x, y, rows, cols);
}
""",
    # a 2-D launch
    "dim3": """
__global__ void k(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += x[r * cols + c];
    y[r] = s;
}
extern "C" void solve(const float* x, float* y, int rows, int cols) {
    dim3 block(32, 4);
    k<<<(rows + 127) / 128, block>>>(x, y, rows, cols);
}
""",
    # sliding window (conv1d): the thread index is added, not a row stride
    "conv1d": """
__global__ void k(const float* x, const float* w, float* y, int m, int kk) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {
        float s = 0.0f;
        for (int j = 0; j < kk; ++j) s += x[i + j] * w[j];
        y[i] = s;
    }
}
extern "C" void solve(const float* x, const float* w, float* y, int n, int kk) {
    k<<<(n - kk + 128) / 128, 128>>>(x, w, y, n - kk + 1, kk);
}
""",
    # column walk (gemv_transposed): the loop variable strides by N
    "column_walk": """
__global__ void k(const float* A, const float* x, float* y, int M, int N) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < N) {
        float acc = 0.0f;
        for (int i = 0; i < M; ++i) acc += A[i * N + j] * x[i];
        y[j] = acc;
    }
}
extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    k<<<(N + 127) / 128, 128>>>(A, x, y, M, N);
}
""",
    # no loop at all (saxpy)
    "elementwise": """
__global__ void k(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void solve(float a, const float* x, float* y, int n) {
    k<<<(n + 255) / 256, 256>>>(a, x, y, n);
}
""",
    # a later pass reads what an earlier pass wrote (other threads' elements, no barrier)
    "read_after_write": """
__global__ void k(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float* out = y + (long long)r * cols;
    for (int c = 0; c < cols; ++c) out[c] = x[r * cols + c] * 2.0f;
    float s = 0.0f;
    for (int c = 1; c < cols; ++c) s += out[c - 1];
    out[0] = s;
}
extern "C" void solve(const float* x, float* y, int rows, int cols) {
    k<<<(rows + 127) / 128, 128>>>(x, y, rows, cols);
}
""",
    # already cooperative
    "shared_memory": """
__global__ void k(const float* x, float* y, int rows, int cols) {
    __shared__ float buf[128];
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += x[r * cols + c];
    buf[threadIdx.x] = s;
    y[r] = buf[threadIdx.x];
}
extern "C" void solve(const float* x, float* y, int rows, int cols) {
    k<<<(rows + 127) / 128, 128>>>(x, y, rows, cols);
}
""",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refuses_what_it_cannot_parallelise(name: str) -> None:
    assert rows_edits(REFUSED[name]) == []


def test_applying_twice_gives_nothing_more() -> None:
    for e in rows_edits(SOFTMAX):
        assert rows_edits(e.source) == []


@pytest.mark.nvcc
def test_edits_compile_with_nvcc() -> None:
    from veriforge.cuda.toolchain.compiler import compile as nvcc_compile

    for source in (SOFTMAX, EXTREMES, ROW_SUM):
        for e in rows_edits(source):
            result = nvcc_compile(e.source, arch="sm_90")  # raises NvccCompileError when it does not compile
            assert not [w for w in result.warnings if re.search(r"row_partial|lane|off\b", str(w))]


def test_bundled_gemv_through_the_evaluator() -> None:
    from veriforge.core.types import Candidate
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.tasks import bundled_tasks, load_task

    spec = next(s for s in map(load_task, bundled_tasks("c2cuda")) if s.id == "gemv")
    naive = (spec.folder / spec.implementations[0].file).read_text()
    edits = rows_edits(naive)
    assert {e.evidence["variant"] for e in edits} == {"warp", "block"}
    for e in edits:
        result = evaluate(spec, Candidate(source=e.source, language="cuda"), backend="cpu")
        assert result.correct, result.verdict.reason
