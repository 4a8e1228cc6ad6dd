"""`a < b && c > d` is not a template: the analysis must read real bounds checks as comparisons."""

from __future__ import annotations

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
