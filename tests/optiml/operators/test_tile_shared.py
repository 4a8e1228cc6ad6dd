"""The tile_shared operator: tiled matmuls (NN and NT layouts) stay correct for ragged shapes and any
TILE, and kernels it does not fully understand get no edit."""

from __future__ import annotations

import re

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators import find_tunables
from veriforge.optiml.operators.tile_shared import tile_shared_edits

# NN layout, guard as an if-block, literal 16x16 block.
MATMUL_NN = """
__global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = acc;
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    mm<<<grid, block>>>(A, B, C, M, N, K);
}
"""

# NT layout (B is N x K), early-return guard, coordinates declared in the other order through an alias.
MATMUL_NT = """
__global__ void mmnt(const float* A, const float* B, float* C, int M, int N, int K) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int arow = i * K;
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += A[arow + k] * B[j * K + k];
    C[i * N + j] = 2.0f * acc;
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(8, 8);
    dim3 grid((N + 7) / 8, (M + 7) / 8);
    mmnt<<<grid, block>>>(A, B, C, M, N, K);
}
"""

SHAPES = ((37, 53, 19), (5, 3, 7), (33, 17, 40))  # ragged everywhere, K < every TILE, K over 32


def _only_edit(source: str) -> str:
    edits = tile_shared_edits(source)
    assert len(edits) == 1
    assert edits[0].operator == "tile_shared"
    return edits[0].source


def _with_tile(source: str, value: int) -> str:
    out, n = re.subn(r"#define TILE \d+", f"#define TILE {value}", source)
    assert n == 1
    return out


def _check(source: str, transposed: bool, scale: float = 1.0) -> None:
    mod = cpu.compile(source, sanitize=True)  # out-of-bounds loads fault
    rng = np.random.default_rng(7)
    for m, n, k in SHAPES:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, k) if transposed else (k, n)).astype(np.float32)
        c = np.full((m, n), np.nan, np.float32)
        mod.call("solve", [a, b, c, m, n, k])
        ref = scale * (a.astype(np.float64) @ (b.T if transposed else b).astype(np.float64))
        np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tile", [16, 8, 32])
def test_nn_matmul_tiled_is_correct_for_any_tile(tile: int) -> None:
    new = _only_edit(MATMUL_NN)
    assert "__syncthreads()" in new and "dim3(TILE, TILE)" in new
    _check(_with_tile(new, tile), transposed=False)


@pytest.mark.parametrize("tile", [16, 8, 32])
def test_nt_matmul_tiled_is_correct_for_any_tile(tile: int) -> None:
    new = _only_edit(MATMUL_NT)
    assert "[TILE][TILE + 1]" in new  # the B tile is read down a column: padded
    assert "return;" not in new  # no early exit before the barriers
    _check(_with_tile(new, tile), transposed=True, scale=2.0)


def test_tile_is_a_tunable() -> None:
    assert "TILE" in {t.name for t in find_tunables(_only_edit(MATMUL_NN))}


def test_findings_raise_the_prior() -> None:
    plain = tile_shared_edits(MATMUL_NN)[0].prior
    motivated = tile_shared_edits(MATMUL_NN, [{"kind": "memory_bound", "severity": 0.8, "line": 3,
                                               "message": "m"}])[0]
    assert plain >= 2.0 and motivated.prior > plain and motivated.evidence["findings"]


def test_linear_layer_is_tiled(matmul_kernels) -> None:
    new = _only_edit(matmul_kernels.linear)
    assert "acc = fmaf(x_tile[" in new  # the fused update is kept as written
    assert "? (b[o]) : 0.0f" in new  # the bias is read only where the original reads it
    matmul_kernels.check_linear(new)


def test_double_gemm_with_alpha_beta_epilogue(matmul_kernels) -> None:
    matmul_kernels.check_gemm_f64(_with_tile(_only_edit(matmul_kernels.gemm_f64), 8))


@pytest.mark.parametrize("old, new", [
    # the accumulation forms users write
    ("acc += A[row * K + k] * B[k * N + col];", "acc = acc + A[row * K + k] * B[k * N + col];"),
    ("acc += A[row * K + k] * B[k * N + col];", "acc = A[row * K + k] * B[k * N + col] + acc;"),
    ("acc += A[row * K + k] * B[k * N + col];", "acc += B[k * N + col] * A[row * K + k];"),
    ("acc += A[row * K + k] * B[k * N + col];", "acc = __fmaf_rn(A[row * K + k], B[k * N + col], acc);"),
    # guards: extent on the left, a provable non-strict form, a negated form
    ("if (row < M && col < N)", "if (M > row && N > col)"),
    ("if (row < M && col < N)", "if (row <= M - 1 && !(col >= N))"),
    # epilogues with activations and other read-only pointers
    ("C[row * N + col] = acc;", "C[row * N + col] = tanhf(acc);"),
    ("C[row * N + col] = acc;", "float v = acc + B[col]; C[row * N + col] = fmaxf(v, 0.0f);"),
    # a double accumulator over float operands
    ("float acc = 0.0f;", "double acc = 0.0;"),
    # the user's own unroll pragma on the loop
    ("        for (int k = 0; k < K; ++k) {", "#pragma unroll 4\n        for (int k = 0; k < K; ++k) {"),
])
def test_accepts_what_users_write(old: str, new: str) -> None:
    assert old in MATMUL_NN
    edit = _only_edit(MATMUL_NN.replace(old, new))
    body = edit.split("extern")[0]
    assert "__syncthreads()" in body and "return" not in body


@pytest.mark.parametrize("old, new", [
    # an operand indexed by both coordinates
    ("B[k * N + col]", "B[k * N + col + row]"),
    # a non-unit k stride in both strides
    ("A[row * K + k]", "A[row * K + 2 * k]"),
    # an accumulation that is not acc += X * Y
    ("acc += A[row * K + k] * B[k * N + col];", "acc += A[row * K + k] + B[k * N + col];"),
    # a second loop
    ("C[row * N + col] = acc;", "for (int q = 0; q < 1; ++q) C[row * N + col] = acc;"),
    # a guard that is not a pure bound of both coordinates
    ("if (row < M && col < N)", "if (row < M && col < N && A[0] > 0.0f)"),
    ("if (row < M && col < N)", "if (row < M)"),
    # an exit inside the loop: no barrier placement keeps every thread in step
    ("acc += A[row * K + k] * B[k * N + col];", "{ if (acc > 9.0f) return; acc += A[row * K + k] * B[k * N + col]; }"),
    # existing shared memory
    ("float acc = 0.0f;", "__shared__ float s[4]; float acc = 0.0f;"),
    # operands of different types
    ("const float* A", "const double* A"),
    # an accumulation that is not the product added to acc
    ("acc += A[row * K + k] * B[k * N + col];", "acc = fmaf(A[row * K + k], B[k * N + col], 0.0f);"),
    ("acc += A[row * K + k] * B[k * N + col];", "acc = acc * A[row * K + k] + B[k * N + col];"),
    # a guard bound from below, or twice on one axis
    ("if (row < M && col < N)", "if (row > M && col < N)"),
    ("if (row < M && col < N)", "if (row < M && col < N && row < K)"),
    # a guard extent that is not an expression of parameters
    ("if (row < M && col < N)", "if (row < M && col < (int)A[0])"),
    # the operand is written in the kernel
    ("C[row * N + col] = acc;", "C[row * N + col] = acc; ((float*)A)[0] = 0.0f;"),
])
def test_refuses_what_it_does_not_understand(old: str, new: str) -> None:
    assert old in MATMUL_NN
    assert tile_shared_edits(MATMUL_NN.replace(old, new)) == []


def test_refuses_two_launch_sites() -> None:
    twice = MATMUL_NN.replace("mm<<<grid, block>>>(A, B, C, M, N, K);",
                              "mm<<<grid, block>>>(A, B, C, M, N, K);\n    mm<<<grid, block>>>(A, B, C, M, N, K);")
    assert tile_shared_edits(twice) == []


def test_early_return_before_other_work_is_refused() -> None:
    # After the early return, work other than acc's declaration precedes the loop: the guard cannot simply
    # become a predicate below the loop (that store would have to be predicated too), so no edit.
    src = MATMUL_NT.replace("float acc = 0.0f;", "C[i * N + j] = 0.0f;\n    float acc = 0.0f;")
    assert tile_shared_edits(src) == []


@pytest.mark.nvcc
def test_edits_compile_with_nvcc(matmul_kernels) -> None:
    from veriforge.cuda.toolchain.compiler import compile as nvcc_compile

    for source in (MATMUL_NN, MATMUL_NT, matmul_kernels.linear, matmul_kernels.gemm_f64):
        nvcc_compile(_only_edit(source), arch="sm_90")


def test_bundled_matmul_through_the_evaluator() -> None:
    from veriforge.core.types import Candidate
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.tasks import bundled_tasks, load_task
    from veriforge.optiml.objective import time_of

    spec = next(s for s in map(load_task, bundled_tasks("c2cuda")) if s.id == "matmul_transposed_b")
    naive = (spec.folder / spec.implementations[0].file).read_text()
    base, _ = time_of(evaluate(spec, Candidate(source=naive, language="cuda"), backend="cpu").measurements,
                      "estimated")
    result = evaluate(spec, Candidate(source=_only_edit(naive), language="cuda"), backend="cpu")
    assert result.correct, result.verdict.reason
    tiled, _ = time_of(result.measurements, "estimated")
    assert base and tiled and tiled < 0.4 * base  # L1 serves part of the naive kernel's reuse too
