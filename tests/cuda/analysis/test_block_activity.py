"""Totals follow which blocks really work (issue 19, part 3): when only every k-th block of a large
grid has work, sampled blocks (first, last, interior strata) can all miss it. Probe blocks catch
that; the grid is then walked whole, or - too large to walk - the totals are unknown, never a number
k times too low."""

from __future__ import annotations

from veriforge.cuda import analysis, costmodel

EVERY_KTH_BLOCK = r"""
__global__ void scale(const float* x, float* y, int n, int stride, int phase) {
    if (blockIdx.x % stride != phase) return;
    int i = (blockIdx.x / stride) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""

OVERSIZED_GRID = r"""
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = 2.0f * x[i];
}
"""


def _totals(src: str, grid: int, **params: int) -> tuple[list[float | None], float | None]:
    rep = analysis.analyze(src, kernel="scale", grid=grid, block=256, params=params, use_nvcc=False)
    return [a.requests for a in rep.global_accesses], rep.flops


def test_work_in_every_32nd_block_counts_like_the_dense_grid() -> None:
    dense = _totals(EVERY_KTH_BLOCK, 128, n=32768, stride=1, phase=0)
    assert dense == ([1024.0, 1024.0], 32768.0)
    # 4096 blocks, 128 of them (0, 32, 64, ...) busy: the same work
    assert _totals(EVERY_KTH_BLOCK, 4096, n=32768, stride=32, phase=0) == dense
    # ... also when the first and the last block are idle (31, 63, ...: every sample misses them)
    assert _totals(EVERY_KTH_BLOCK, 4096, n=32768, stride=32, phase=30) == dense


def test_a_pattern_in_a_grid_too_large_to_walk_is_unknown_not_low() -> None:
    rep = analysis.analyze(EVERY_KTH_BLOCK, kernel="scale", grid=65536, block=256,
                           params={"n": 1 << 19, "stride": 32, "phase": 0}, use_nvcc=False)
    assert rep.flops is None and rep.global_bytes is None
    assert all(a.requests is None and "pattern the sampled blocks miss" in (a.unknown or "")
               for a in rep.global_accesses)
    est = costmodel.estimate(rep, "H100-SXM")
    assert est.status == "unknown" and est.time_s is None


def test_an_oversized_grid_keeps_exact_counts_without_a_whole_walk() -> None:
    """Busy blocks in one stretch, idle ones after it: refinement finds the boundary; probes agree."""
    rep = analysis.analyze(OVERSIZED_GRID, kernel="scale", grid=65536, block=256, params={"n": 1000 * 256},
                           use_nvcc=False)
    # the boundary is found to within a few blocks (refine()), as before the probes
    assert all(8000.0 <= (a.requests or 0) <= 8000.0 * 1.01 for a in rep.global_accesses)
    assert rep.flops is not None and 256000.0 <= rep.flops <= 256000.0 * 1.01
    assert not rep.sampling["exact"]  # sampled, not walked whole
