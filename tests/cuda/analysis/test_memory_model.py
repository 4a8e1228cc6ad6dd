"""Sector and bank arithmetic on hand-made address patterns, and the sampled-warp layout."""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda.analysis import launch, memory


def lanes(addr: list[int] | np.ndarray) -> np.ndarray:
    return np.asarray(addr, dtype=np.float64).reshape(1, 32)


FULL = np.ones((1, 32), bool)


def test_sectors_for_contiguous_strided_misaligned_and_broadcast() -> None:
    i = np.arange(32)
    assert memory.sectors_per_warp(lanes(4 * i), 4, FULL)[0][0] == 4
    assert memory.sectors_per_warp(lanes(4 * i + 4), 4, FULL)[0][0] == 5  # misaligned by one float
    assert memory.sectors_per_warp(lanes(np.zeros(32)), 4, FULL)[0][0] == 1  # broadcast
    sec, useful = memory.sectors_per_warp(lanes(16 * i + 8), 16, FULL)  # float4 straddling sectors
    assert sec[0] == 17 and useful[0] == 512
    half = FULL.copy()
    half[0, 16:] = False
    assert memory.sectors_per_warp(lanes(4 * i), 4, half)[0][0] == 2


def test_bank_conflicts_broadcast_and_wide_accesses() -> None:
    i = np.arange(32)
    assert memory.bank_ways(lanes(4 * 32 * i), 4, FULL)[0][0] == 32  # column of a [32][32] float tile
    assert memory.bank_ways(lanes(4 * 33 * i), 4, FULL)[0][0] == 1  # padded [32][33]
    assert memory.bank_ways(lanes(4 * 2 * i), 4, FULL)[0][0] == 2  # stride 2 words
    assert memory.bank_ways(lanes(np.zeros(32)), 4, FULL)[0][0] == 1  # one word: broadcast
    ways, waves = memory.bank_ways(lanes(16 * i), 16, FULL)  # float4 row: 4 quarter-warp phases
    assert ways[0] == 1 and waves[0] == 4
    ways, waves = memory.bank_ways(lanes(8 * i), 8, FULL)  # double row: 2 half-warp phases
    assert ways[0] == 1 and waves[0] == 2


def test_lane_layout_matches_hardware_warp_formation() -> None:
    lay = launch.build_lanes((2, 1, 1), (16, 4, 1))
    assert lay.shape == (4, 32)  # 2 blocks x 2 warps
    tx, ty, _ = lay.tid
    assert list(tx[0, :18]) == [*list(range(16)), 0, 1]
    assert list(ty[0, 14:18]) == [0, 0, 1, 1]
    assert lay.exact and lay.launch_warps == 4


def test_partial_warps_and_stratified_sampling() -> None:
    lay = launch.build_lanes((1000, 1, 1), (48, 1, 1))
    assert not lay.exact
    # first, the middles of 5 equal interior strata (998 blocks), last
    assert lay.sampled_blocks == ((0, 0, 0), (100, 0, 0), (299, 0, 0), (499, 0, 0), (698, 0, 0), (898, 0, 0),
                                  (999, 0, 0))
    assert lay.launch_warps == pytest.approx(1000 * 2)  # 48 threads = 2 warps, the second half-empty
    assert lay.valid[1].sum() == 16
    assert list(lay.tail_block) == [False] * 12 + [True, True]


def test_oversized_grid_with_idle_blocks_is_not_cheaper() -> None:
    """An optimiser once quadrupled a grid (extra blocks fail the bounds check and exit) and the
    single middle sample, idle, made the launch look ~10x cheaper. Idle blocks must not lower the work."""
    from veriforge.cuda import analysis

    src = """
    __global__ void k(const float* a, float* b, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) b[i] = 2.0f * a[i];
    }"""
    n = 8192
    tight = analysis.analyze(src, kernel="k", grid=n // 64, block=64, params={"n": n}, use_nvcc=False)
    loose = analysis.analyze(src, kernel="k", grid=4 * n // 64, block=64, params={"n": n}, use_nvcc=False)
    assert tight.global_bytes == pytest.approx(n * 8, rel=0.01)
    assert loose.global_bytes == pytest.approx(tight.global_bytes, rel=0.3)


@pytest.mark.parametrize(("value", "expected"), [(256, (256, 1, 1)), ((16, 16), (16, 16, 1)), ([2, 3, 4], (2, 3, 4))])
def test_dim3_normalisation(value: object, expected: tuple[int, int, int]) -> None:
    assert launch.dim3(value, "grid") == expected  # type: ignore[arg-type]


def test_dim3_rejects_bad_values() -> None:
    for bad in (0, (1, 2, 3, 4), "x", (2, -1), True):
        with pytest.raises(launch.LaunchConfigError):
            launch.dim3(bad, "block")  # type: ignore[arg-type]
