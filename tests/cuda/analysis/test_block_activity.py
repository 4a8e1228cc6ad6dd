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
    """Busy blocks in one stretch, idle ones after it: the switch is found to the block (bisection
    of single-block walks), the partial last block stands for itself; probes agree."""
    rep = analysis.analyze(OVERSIZED_GRID, kernel="scale", grid=65536, block=256, params={"n": 1000 * 256},
                           use_nvcc=False)
    assert [a.requests for a in rep.global_accesses] == [8000.0, 8000.0]
    assert rep.flops == 256000.0
    assert not rep.sampling["exact"]  # sampled, not walked whole
    # the CUDA samples' vectorAdd with n = 50000 (196 blocks, the last one partial) launched on
    # the largest grid CUDA allows: before, the gap after block 0 went to an idle sample (8 requests)
    for grid in (196, 4096, 65535, 2**31 - 1):
        assert _totals(OVERSIZED_GRID, grid, n=50000) == ([1563.0, 1563.0], 50000.0), grid


GUARDED_2D = r"""
__global__ void scale(float* a, int n, int m) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < n && y < m) a[y * n + x] = 2.0f * a[y * n + x];
}
"""


def test_a_2d_grid_larger_than_its_data_in_both_dimensions_counts_exactly() -> None:
    want = None
    for grid in ((32, 19), (1000, 1000), (4096, 60000)):
        rep = analysis.analyze(GUARDED_2D, kernel="scale", grid=grid, block=(16, 16), params={"n": 500, "m": 300},
                               use_nvcc=False)
        got = ([a.requests for a in rep.global_accesses], rep.flops)
        want = want or got
        assert got == want == ([4800.0, 4800.0], 150000.0), grid


HALF_LOADED = r"""
__global__ void scale(const float* x, float* y, int n) {
    __shared__ float s[256];
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    float v = (i < n) ? x[i] : 0.0f;          // past the data: no load, but the block still works
    if (i + blockDim.x < n) v += x[i + blockDim.x];
    s[threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.x == 0) y[blockIdx.x] = s[0] + s[255];
}
"""


def test_blocks_that_all_work_but_not_all_load_count_the_loads_exactly() -> None:
    """The CUDA samples' reduce3 on twice the blocks its data needs: every block stores, only the
    first half loads. Told apart by which sites they reach, not by whether they work (loads were
    20 % high on --grid 4096)."""
    for grid in (2048, 4096, 65535):
        rep = analysis.analyze(HALF_LOADED, kernel="scale", grid=grid, block=256, params={"n": 1 << 20},
                               use_nvcc=False)
        loads = [a.requests for a in rep.global_accesses if a.kind == "load"]
        stores = [a.requests for a in rep.global_accesses if a.kind == "store"]
        assert loads == [16384.0, 16384.0] and stores == [float(grid)], grid


TEMPLATE_DEAD_BRANCH = r"""
template <bool pow2>
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 0.0f;
    if (pow2) {
        v = x[i];
    } else {
        while (i < n) { v += x[i]; i += gridDim.x * blockDim.x; }
    }
    y[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
"""


def test_a_branch_a_template_argument_makes_dead_is_not_an_unknown() -> None:
    """The samples' reduce6<…, nIsPow2=true>: the else side never runs in any block, so whether its
    loop diverges is known (no), and the divergence feature stays defined."""
    rep = analysis.analyze(TEMPLATE_DEAD_BRANCH, kernel="scale", grid=4096, block=256, params={"n": 1 << 20},
                           template_args={"pow2": "true"}, use_nvcc=False)
    assert not [u for u in rep.unknowns if "divergence" in u], rep.unknowns
    loop = next(b for b in rep.branches if b.kind == "loop")
    assert loop.divergent is False and loop.unknown is None
    assert rep.features["divergent_branches"] == 0.0


def test_a_branch_only_unsampled_blocks_may_reach_stays_unknown() -> None:
    src = TEMPLATE_DEAD_BRANCH.replace("if (pow2)", "if (blockIdx.x != 12345)")
    rep = analysis.analyze(src, kernel="scale", grid=65536, block=256, params={"n": 1 << 20},
                           template_args={"pow2": "true"}, use_nvcc=False)
    loop = next(b for b in rep.branches if b.kind == "loop")
    assert loop.divergent is None and "never reached" in (loop.unknown or "")


def test_pinning_spends_walks_on_a_few_switches_never_on_a_pattern(monkeypatch) -> None:
    """Bisection is for a few switches (the data's end); work in every other block has a switch
    between every pair of samples and is left to the probes - a kernel cannot make every analysis
    spend the whole budget of single-block walks."""
    import importlib

    from veriforge.cuda.analysis import launch

    analyze_mod = importlib.import_module("veriforge.cuda.analysis.analyze")  # the package exports the function

    walks = []
    real = launch.pin_boundaries

    def counting(lanes, walker, walk):  # type: ignore[no-untyped-def]
        return real(lanes, walker, lambda ln: walks.append(1) or walk(ln))

    monkeypatch.setattr(analyze_mod, "pin_boundaries", counting)
    fresh = OVERSIZED_GRID + "// not in the per-process memo\n"
    assert _totals(fresh, 2**31 - 1, n=50000) == ([1563.0, 1563.0], 50000.0)
    assert 0 < len(walks) <= 2 * 31
    walks.clear()
    rep = analysis.analyze(EVERY_KTH_BLOCK + "// fresh\n", kernel="scale", grid=65536, block=256,
                           params={"n": 1 << 22, "stride": 2, "phase": 1}, use_nvcc=False)
    assert walks == []
    assert rep.flops is None or rep.flops == float(1 << 22)  # unknown or right, never low
