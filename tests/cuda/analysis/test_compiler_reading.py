"""Reading code as the compiler does: `a < b && c > d` is not a template, and consecutive shared
loads of an unrolled loop are one vector load."""

from __future__ import annotations

import pytest

from veriforge.cuda import analysis
from veriforge.cuda.analysis.parse import parse_source

HALO = r"""
__global__ void halo(const float* in, float* out, int ny, int nx) {
    int gr = blockIdx.y * blockDim.y + threadIdx.y - 1;
    int gc = blockIdx.x * blockDim.x + threadIdx.x - 1;
    out[(gr + 1) * (nx + 2) + gc + 1] = (gr >= 0 && gr < ny && gc >= 0 && gc < nx) ? in[gr * nx + gc] : 0.0f;
}
template <int N>
__global__ void templated(float* out) { out[threadIdx.x] = N; }
"""


def test_bounds_check_with_less_and_greater_is_a_comparison() -> None:
    rep = analysis.analyze(HALO, kernel="halo", grid=(4, 4), block=(32, 8), params={"ny": 30, "nx": 126},
                           use_nvcc=False)
    load = next(a for a in rep.global_accesses if a.kind == "load")
    # tree-sitter alone reads `gr < ny && gc >` as a template and the guarded load as never run
    assert load.requests is not None and load.requests > 0
    assert load.useful_bytes == 30 * 126 * 4  # exactly the in-range elements are read


def test_rewrite_keeps_lines_and_real_templates() -> None:
    parsed = parse_source(HALO)
    assert parsed.text.count("\n") == HALO.count("\n")
    assert "templated" in parsed.functions and parsed.functions["templated"][0].template


REGTILE = r"""
template <int TM>
__global__ void regtile(const float* A, float* out, int steps) {
    __shared__ float As[1024];
    As[threadIdx.x] = A[blockIdx.x * 256 + threadIdx.x];
    As[threadIdx.x + 256] = A[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    float regM[TM];
    float acc = 0.0f;
    for (int i = 0; i < TM; ++i) regM[i] = As[(threadIdx.x % 32) * TM + i];
    for (int i = 0; i < TM; ++i) acc += regM[i];
    for (int i = 0; i < steps; ++i) acc += As[(threadIdx.x % 32) * TM + i];
    out[blockIdx.x * 256 + threadIdx.x] = acc;
}
"""


def test_consecutive_shared_loads_of_an_unrolled_loop_merge_like_ptxas() -> None:
    rep = analysis.analyze(REGTILE, kernel="regtile", grid=(8,), block=(256,), params={"steps": 8},
                           template_args={"TM": 8}, use_nvcc=False)
    loads = sorted((s for s in rep.shared_accesses if s.kind == "load"), key=lambda s: s.line)
    const_loop, runtime_loop = loads
    # TM is a compile-time constant: 8 scalar loads per thread become 2 LDS.128
    assert const_loop.merged_width == 4
    assert const_loop.requests == pytest.approx(runtime_loop.requests / 4)
    # the same addresses in a loop whose trip count is a kernel argument stay scalar
    assert runtime_loop.merged_width == 1
    assert runtime_loop.wavefronts_per_request is not None and runtime_loop.wavefronts_per_request >= 8
    assert const_loop.wavefronts_per_request is not None
    merged = const_loop.wavefronts_per_request * const_loop.requests
    assert merged < runtime_loop.wavefronts_per_request * runtime_loop.requests
