"""The expected answers from CUDA.md "Static structure analysis" (issue 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.cuda import analysis

KERNELS = Path(__file__).parent / "kernels"


def src(name: str) -> str:
    return (KERNELS / name).read_text()


STRIDES = r"""
__global__ void strided(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    float y = a[2 * i];
    float z = a[33 * i];
    out[i] = x + y + z;
}
"""


def _by_text(rep: analysis.AnalysisReport, text: str, kind: str = "load") -> analysis.GlobalAccess:
    hits = [a for a in rep.global_accesses if a.text == text and a.kind == kind]
    assert len(hits) == 1, [a.text for a in rep.global_accesses]
    return hits[0]


@pytest.mark.parametrize(
    ("text", "sectors", "efficiency"),
    [("a[i]", 4, 1.0), ("a[2 * i]", 8, 0.5), ("a[33 * i]", 32, 0.125)],
)
def test_coalescing_of_strided_fp32_loads(text: str, sectors: int, efficiency: float) -> None:
    rep = analysis.analyze(STRIDES, kernel="strided", grid=1024, block=256, params={"n": 1 << 18}, use_nvcc=False)
    acc = _by_text(rep, text)
    assert acc.elem_bytes == 4
    assert acc.sectors_per_request == pytest.approx(sectors)
    assert acc.first_warp_sectors == sectors
    assert acc.efficiency == pytest.approx(efficiency)
    assert acc.requests == pytest.approx(1024 * 256 / 32)
    assert acc.bytes == pytest.approx(acc.requests * sectors * 32)
    assert acc.line == {"a[i]": 4, "a[2 * i]": 5, "a[33 * i]": 6}[text]


def test_naive_transpose_store_is_32_sectors_per_request() -> None:
    rep = analysis.analyze(
        src("transpose.cu"),
        kernel="transpose_naive",
        grid=(32, 32),
        block=(32, 32),
        params={"width": 1024, "height": 1024},
        use_nvcc=False,
    )
    store = _by_text(rep, "out[x * height + y]", "store")
    load = _by_text(rep, "in[y * width + x]", "load")
    assert store.sectors_per_request == 32
    assert store.efficiency == pytest.approx(0.125)
    assert load.sectors_per_request == 4
    assert rep.features["global_store_sectors_per_request"] == 32
    assert rep.features["global_load_sectors_per_request"] == 4


def test_float4_accesses_move_16_bytes_per_lane() -> None:
    rep = analysis.analyze(
        src("vector.cu"), kernel="copy_float4", grid=256, block=256, params={"n": 1 << 18}, use_nvcc=False
    )
    for acc in rep.global_accesses:
        assert acc.elem_bytes == 16 and acc.vector_width == 4
        assert acc.sectors_per_request == 16  # 32 lanes x 16 B = 512 B = 16 sectors
        assert acc.efficiency == 1.0
    assert rep.traits["vectorized"] and rep.traits["vector_widths"] == [16]
    # C-style casts through a pointer give the same answer
    rep2 = analysis.analyze(
        src("vector.cu"), kernel="copy_cast", grid=256, block=256, params={"n": 1 << 18}, use_nvcc=False
    )
    assert [a.sectors_per_request for a in rep2.global_accesses] == [16, 16]
    assert {a.kind for a in rep2.global_accesses} == {"load", "store"}


@pytest.mark.parametrize(("pad", "ways"), [(0, 32), (1, 1)])
def test_shared_tile_column_read_bank_conflicts(pad: int, ways: int) -> None:
    rep = analysis.analyze(
        src("transpose.cu"),
        kernel="transpose_tiled",
        grid=(32, 32),
        block=(32, 32),
        params={"width": 1024, "height": 1024},
        template_args={"PAD": pad},
        use_nvcc=False,
    )
    col = [s for s in rep.shared_accesses if s.text == "tile[threadIdx.x][threadIdx.y]"]
    row = [s for s in rep.shared_accesses if s.text == "tile[threadIdx.y][threadIdx.x]"]
    assert col[0].kind == "load" and col[0].bank_conflict_ways == ways
    assert row[0].kind == "store" and row[0].bank_conflict_ways == 1
    assert rep.features["shared_load_bank_conflict_ways"] == ways
    assert rep.traits["shared_mem_static_bytes"] == 32 * (32 + pad) * 4
    # the transposed global store is coalesced in the tiled version
    assert all(a.sectors_per_request == 4 for a in rep.global_accesses)


def test_modulo_two_branch_diverges_in_every_warp() -> None:
    rep = analysis.analyze(
        src("control.cu"), kernel="even_odd", grid=64, block=256, params={"n": 1 << 14}, use_nvcc=False
    )
    (br,) = rep.branches
    assert br.condition == "threadIdx.x % 2 == 0"
    assert br.divergent is True and br.scope == "all" and br.divergent_fraction == 1.0
    assert rep.features["divergent_branches"] == 1


def test_warp_aligned_branch_is_not_divergent() -> None:
    rep = analysis.analyze(src("control.cu"), kernel="half_block", grid=64, block=256, use_nvcc=False)
    (br,) = rep.branches
    assert br.divergent is False and br.scope == "none"
    assert br.thread_dependent
    # a threshold that is not a multiple of 32 splits exactly one warp per block
    unaligned = src("control.cu").replace("threadIdx.x < 128", "threadIdx.x < 100")
    rep = analysis.analyze(unaligned, kernel="half_block", grid=64, block=256, use_nvcc=False)
    br = rep.branches[0]
    assert br.divergent is True and br.scope == "some" and br.divergent_fraction == pytest.approx(1 / 8)


def test_bounds_check_diverges_only_in_the_tail_warp() -> None:
    bounds = r"""
__global__ void scale(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] *= 2.0f;
}
"""
    rep = analysis.analyze(bounds, kernel="scale", grid=4, block=256, params={"n": 1000}, use_nvcc=False)
    br = rep.branches[0]
    assert br.divergent is True and br.scope == "tail"
    assert br.divergent_fraction == pytest.approx(1 / 32)
    # n a multiple of the block: nothing diverges
    rep = analysis.analyze(bounds, kernel="scale", grid=4, block=256, params={"n": 1024}, use_nvcc=False)
    assert rep.branches[0].divergent is False
    # large sampled grid: the tail is still found in the last block
    rep = analysis.analyze(bounds, kernel="scale", grid=4096, block=256, params={"n": (1 << 20) - 5}, use_nvcc=False)
    assert rep.branches[0].scope == "tail"
    assert rep.global_accesses[0].useful_bytes == pytest.approx(((1 << 20) - 5) * 4)


def test_barrier_under_thread_dependent_condition_is_flagged() -> None:
    rep = analysis.analyze(src("control.cu"), kernel="bad_barrier", grid=1, block=256, use_nvcc=False)
    assert len(rep.barriers) == 2
    inside, after = rep.barriers
    assert inside.line == 21 and inside.under_thread_dependent_condition
    assert inside.condition == "threadIdx.x < 128"
    assert inside.divergent_in_launch is True
    assert not after.under_thread_dependent_condition
    assert rep.features["barriers"] == 2
    assert rep.traits["barriers_under_thread_dependent_condition"] == 1


def test_barrier_after_thread_dependent_return_is_flagged() -> None:
    rep = analysis.analyze(
        src("control.cu"), kernel="early_exit", grid=4, block=256, params={"n": 1024}, use_nvcc=False
    )
    (bar,) = rep.barriers
    assert bar.under_thread_dependent_condition
    assert "return" in (bar.condition or "")
    assert bar.divergent_in_launch is False  # n = 1024 fills every block; still flagged from the source


@pytest.mark.parametrize("tile", [8, 16, 32])
def test_tiled_matmul_arithmetic_intensity_is_tile_over_4(tile: int) -> None:
    n = 512
    rep = analysis.analyze(
        src("matmul.cu"),
        kernel="matmul_tiled",
        grid=(n // tile, n // tile),
        block=(tile, tile),
        params={"N": n},
        defines={"TILE": tile},
        use_nvcc=False,
    )
    assert rep.flops == pytest.approx(2 * n**3)
    loads = sum(a.bytes or 0 for a in rep.global_accesses if a.kind == "load")
    assert loads == pytest.approx(2 * n**3 * 4 / tile)  # every thread loads 2 floats per tile step
    assert rep.arithmetic_intensity == pytest.approx(tile / 4, rel=0.08)  # C stores add ~1/ (2N/TILE)
    assert rep.features["arithmetic_intensity"] == rep.arithmetic_intensity
    inner = [lp for lp in rep.loops if lp.unrolled is True]
    assert inner and inner[0].trip_count == tile
    assert [lp.trip_count for lp in rep.loops if lp.unrolled is False] == [n / tile]


def test_naive_matmul_has_far_lower_intensity_than_tiled() -> None:
    kw = dict(grid=(32, 32), block=(16, 16), params={"N": 512}, use_nvcc=False)
    naive = analysis.analyze(src("matmul.cu"), kernel="matmul_naive", **kw)
    tiled = analysis.analyze(src("matmul.cu"), kernel="matmul_tiled", **kw)
    assert naive.flops == pytest.approx(tiled.flops)
    assert naive.arithmetic_intensity < 0.6 < 3.5 < tiled.arithmetic_intensity
    a_load = _by_text(naive, "A[row * N + k]")
    assert a_load.sectors_per_request == 2  # two rows of 16 threads: one broadcast sector each
    assert a_load.efficiency == pytest.approx(0.125)
