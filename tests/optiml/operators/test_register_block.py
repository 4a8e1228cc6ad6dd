"""The register_block operator: register-blocked matmuls (NN, NT, fmaf, double, epilogues, early
returns) stay correct for ragged shapes and for moves of any of its five #defines, near misses get no
edit, and the search keeps the edit on a bundled matmul."""

from __future__ import annotations

import re

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators import find_tunables
from veriforge.optiml.operators.register_block import DEFAULTS, register_block_edits
from veriforge.optiml.operators.tune import couplings, tune_edits


def _bundled_naive(task: str) -> str:
    from veriforge.cuda.tasks import bundled_tasks, load_task

    spec = next(s for s in map(load_task, bundled_tasks("c2cuda")) if s.id == task)
    return (spec.folder / spec.implementations[0].file).read_text()


# NN layout, if-block guard: the bundled naive matmul (the linear layer and the double GEMM come from
# the matmul_kernels fixture, shared with test_tile_shared.py).
MATMUL_NN = _bundled_naive("matmul_fp32")

# Ragged everywhere: below one block tile, K below BK, sizes over two block tiles with tails.
SHAPES = ((37, 53, 19), (5, 3, 7), (70, 130, 40))


def _only_edit(source: str) -> str:
    edits = register_block_edits(source)
    assert len(edits) == 1
    assert edits[0].operator == "register_block"
    return edits[0].source


def _with(source: str, **values: int) -> str:
    for name, value in values.items():
        source, n = re.subn(rf"#define {name} \d+", f"#define {name} {value}", source)
        assert n == 1
    return source


def _check_matmul(source: str) -> None:
    mod = cpu.compile(source, sanitize=True)  # out-of-bounds loads fault
    rng = np.random.default_rng(3)
    for m, n, k in SHAPES:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        c = np.full((m, n), np.nan, np.float32)
        mod.call("solve", [a, b, c, m, n, k])
        np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_nn_matmul_is_correct_with_the_defaults() -> None:
    new = _only_edit(MATMUL_NN)
    assert "dim3(THREADS_X, THREADS_Y)" in new and "acc_r[TM][TN]" in new
    assert "block.x" not in new.split("extern")[0]
    assert "return" not in new.split("extern")[0]
    _check_matmul(new)


@pytest.mark.parametrize("values", [
    # every define moved at once, none to its default: 4 x 1 micro-tiles, 32 x 4 threads, K slices of 8
    {"TM": 4, "TN": 1, "BK": 8, "THREADS_X": 32, "THREADS_Y": 4},
    # the textbook 64 x 64 block tile (4 x 4 per thread) with a K slice longer than some K
    {"TM": 4, "TN": 4, "BK": 32, "THREADS_X": 16, "THREADS_Y": 16},
])
def test_nn_matmul_is_correct_for_other_sizes(values: dict[str, int]) -> None:
    _check_matmul(_with(_only_edit(MATMUL_NN), **values))


def test_linear_layer_with_fmaf_early_returns_and_relu(matmul_kernels) -> None:
    new = _only_edit(matmul_kernels.linear)
    assert "? (b[o]) : 0.0f" in new  # the bias start is read only for elements in range
    assert "fmaf(" in new  # the update is kept as written (fused), not turned into a separate mul + add
    matmul_kernels.check_linear(new)


def test_double_gemm_with_bias_start_and_alpha_beta_epilogue(matmul_kernels) -> None:
    new = _only_edit(matmul_kernels.gemm_f64)
    assert "__shared__ double" in new
    matmul_kernels.check_gemm_f64(new)


def test_every_tune_move_changes_only_the_defines() -> None:
    new = _only_edit(MATMUL_NN)
    tunables = {t.name: t for t in find_tunables(new)}
    assert set(DEFAULTS) <= set(tunables)
    # tune's coupling heuristic may tie some of them (a shared extent TM * THREADS_Y walked by threadIdx):
    # that only makes it move them together, which is as correct as moving any one alone.
    assert all({c.a, c.b} <= set(DEFAULTS) for c in couplings(new))
    moved = set()
    for edit in tune_edits(new):
        changed = {m.group(1) for m in re.finditer(r"#define (\w+) (\d+)", edit.source)
                   if f"#define {m.group(1)} {m.group(2)}" not in new}
        assert changed and changed <= set(DEFAULTS)  # tune moves the defines, nothing else
        assert re.sub(r"#define \w+ \d+", "", edit.source) == re.sub(r"#define \w+ \d+", "", new)
        moved |= changed
    assert moved == set(DEFAULTS)


def test_findings_raise_the_prior() -> None:
    plain = register_block_edits(MATMUL_NN)[0].prior
    motivated = register_block_edits(MATMUL_NN, [{"kind": "compute_bound", "severity": 0.7, "line": 3,
                                                  "message": "m"}])[0]
    assert motivated.prior > plain >= 2.0 and motivated.evidence["findings"]


@pytest.mark.parametrize("old, new", [
    # both operands along the same coordinate (not a matmul: no micro-tile)
    ("B[k * N + col]", "B[k * M + row]"),
    # an exit in the epilogue would skip the thread's other micro-tile elements
    ("C[row * N + col] = acc;", "if (acc > 1.0f) return; C[row * N + col] = acc;"),
    # a thread builtin in the epilogue no longer means what it meant
    ("C[row * N + col] = acc;", "C[row * N + col] = acc + threadIdx.x;"),
    # the operand is written
    ("C[row * N + col] = acc;", "C[row * N + col] = acc; ((float*)B)[col] = 0.0f;"),
    # a guard that bounds one coordinate only, or from below
    ("if (row < M && col < N)", "if (row < M)"),
    ("if (row < M && col < N)", "if (row < M && col > N)"),
    # the accumulation is not acc += X * Y
    ("acc += A[row * K + k] * B[k * N + col];", "acc -= A[row * K + k] * B[k * N + col];"),
    ("acc += A[row * K + k] * B[k * N + col];", "acc = fmaf(A[row * K + k], B[k * N + col], 1.0f);"),
    # k elsewhere in the update
    ("acc += A[row * K + k] * B[k * N + col];", "acc += A[row * K + k] * B[k * N + col] * k;"),
    # a loop that does not start at 0
    ("for (int k = 0; k < K; ++k)", "for (int k = 1; k < K; ++k)"),
])
def test_refuses_near_misses(old: str, new: str) -> None:
    assert old in MATMUL_NN
    assert register_block_edits(MATMUL_NN.replace(old, new)) == []


@pytest.mark.nvcc
def test_edits_compile_with_nvcc(matmul_kernels) -> None:
    from veriforge.cuda.toolchain.compiler import compile as nvcc_compile

    for source in (MATMUL_NN, matmul_kernels.linear, matmul_kernels.gemm_f64):
        nvcc_compile(_only_edit(source), arch="sm_90")


def test_search_keeps_the_edit_on_the_bundled_matmul() -> None:
    from veriforge.optiml.operators import BuiltinProposer
    from veriforge.optiml.xsearch import XSearchSettings, optimize

    # the start and the edit; no re-measurements (held-out sizes, final top-k, suspicious speedups): kept short
    settings = XSearchSettings(max_evaluations=2, heldout=False, final_top_k=0, suspicious_factor=None)
    result = optimize(task="matmul_fp32", settings=settings, proposers=[BuiltinProposer(["register_block"])])
    assert result.best.state.metadata.get("operator") == "register_block"
    assert result.best_time < 0.9 * result.start_time  # faster by the estimate
