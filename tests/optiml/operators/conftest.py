"""Fixtures shared by the operator tests: the matmul kernels that both matmul operators' tests edit
(``kernels/``), and the checks that run an edited one on ragged shapes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

KERNELS = Path(__file__).parent / "kernels"
#: ragged everywhere: below every tile, K below every K slice, sizes over two tiles with tails
MATMUL_SHAPES = ((37, 53, 19), (5, 3, 7), (70, 33, 40))


@dataclass(frozen=True)
class MatmulKernels:
    """``linear``: a naive linear layer y = relu(x W^T + b) (fmaf, bias start, early returns);
    ``gemm_f64``: a double GEMM C = alpha (bias + A B) + beta C. ``check_*`` compile an edit of one
    (sanitized: out-of-bounds accesses fault) and compare it with NumPy on :data:`MATMUL_SHAPES`."""

    linear: str
    gemm_f64: str
    check_linear: Callable[[str], None]
    check_gemm_f64: Callable[[str], None]


def _check_linear(source: str) -> None:
    from veriforge.cuda import cpu

    mod = cpu.compile(source, sanitize=True)
    rng = np.random.default_rng(5)
    for m, n, k in MATMUL_SHAPES:
        x = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        w = rng.uniform(-1, 1, (n, k)).astype(np.float32)
        b = rng.uniform(-1, 1, n).astype(np.float32)
        y = np.full((m, n), np.nan, np.float32)
        mod.call("solve", [x, w, b, y, m, n, k])
        ref = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + b, 0.0)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def _check_gemm_f64(source: str) -> None:
    from veriforge.cuda import cpu

    mod = cpu.compile(source, sanitize=True)
    rng = np.random.default_rng(9)
    for m, n, k in MATMUL_SHAPES:
        a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
        bias, c0 = rng.uniform(-1, 1, n), rng.uniform(-1, 1, (m, n))
        c = c0.copy()
        mod.call("solve", [a, b, bias, c, 0.5, -2.0, m, n, k])
        # the same terms in the same order as the original loop: exact up to NumPy's own summation order
        np.testing.assert_allclose(c, 0.5 * (bias + a @ b) - 2.0 * c0, rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="session")
def matmul_kernels() -> MatmulKernels:
    return MatmulKernels((KERNELS / "linear_relu.cu").read_text(), (KERNELS / "gemm_f64.cu").read_text(),
                         _check_linear, _check_gemm_f64)
