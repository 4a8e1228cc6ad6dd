"""Traits: vectorisation, unrolling, __restrict__/__ldg, shared memory, atomics, warp primitives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from veriforge.cuda import analysis
from veriforge.cuda.features import FEATURES

KERNELS = Path(__file__).parent / "kernels"


def test_reduction_traits_dynamic_smem_atomics_and_shuffles() -> None:
    # extern __shared__ __align__(16) ... breaks tree-sitter-cuda unless pre-processed
    rep = analysis.analyze(
        (KERNELS / "reduce.cu").read_text(),
        kernel="reduce_sum",
        grid=64,
        block=256,
        params={"n": 1 << 14},
        dynamic_smem=32,
        use_nvcc=False,
    )
    t = rep.traits
    assert not [u for u in rep.unknowns if "could not parse" in u]
    assert t["uses_dynamic_smem"] and t["dynamic_smem_bytes"] == 32
    assert t["shared_mem"]["arrays"][0] == {"name": "partial", "bytes": None, "dynamic": True, "line": 8}
    assert t["atomics"] == {"count": 1, "kinds": {"atomicAdd": 1}, "spaces": {"global": 1}}
    assert t["warp_primitives"] == ["__shfl_down_sync"]
    assert t["device_functions_inlined"] == ["warp_sum"]
    assert t["const_restrict_params"] == ["in"] and t["read_only"]
    assert not t["restrict"]  # `out` is not __restrict__
    # the shuffle loop inside the inlined device function was evaluated: 5 iterations, 1 FLOP each,
    # once for every thread and once more for the 32 threads of warp 0 in each block
    assert rep.flops == pytest.approx(64 * 256 * 5 + 64 * 32 * 5)
    atomic = [a for a in rep.global_accesses if a.kind == "atomic"]
    assert len(atomic) == 1 and atomic[0].requests == 64  # one lane of one warp per block
    assert rep.features["shared_mem_dynamic_bytes"] == 32


def test_ldg_restrict_unroll_and_fp32_flops() -> None:
    src = r"""
#define UNROLL 4
__global__ void saxpy4(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * UNROLL;
    #pragma unroll UNROLL
    for (int j = 0; j < UNROLL; ++j) {
        y[base + j] = fmaf(a, __ldg(&x[base + j]), y[base + j]);
    }
    #pragma unroll 1
    for (int j = 0; j < 2; ++j) { y[j] = 0.0f; }
}
"""
    rep = analysis.analyze(src, kernel="saxpy4", grid=16, block=128, params={"n": 8192, "a": 2.0}, use_nvcc=False)
    t = rep.traits
    assert t["restrict"] and t["ldg"] == 1 and t["read_only"]
    assert [lp.unrolled for lp in rep.loops] == [4, 1]
    assert t["unrolled"] and t["unrolled_loops"] == [{"line": 6, "unroll": 4}]
    ldg = [a for a in rep.global_accesses if a.read_only]
    assert len(ldg) == 1 and ldg[0].text.startswith("__ldg")
    # each lane strides by 4 floats: 16 B apart -> 16 sectors per request, 25% efficiency
    assert ldg[0].sectors_per_request == 16 and ldg[0].efficiency == pytest.approx(0.25)
    assert rep.flops == pytest.approx(16 * 128 * 4 * 2)  # fmaf = 2 FLOPs


def test_cooperative_and_warp_level_primitives_are_listed() -> None:
    src = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void vote(const int* in, int* out) {
    cg::thread_block block = cg::this_thread_block();
    unsigned m = __ballot_sync(0xffffffffu, in[threadIdx.x] > 0);
    if (__any_sync(0xffffffffu, m)) out[threadIdx.x] = __popc(m);
    block.sync();
    __syncwarp();
    atomicMax(&out[0], 1);
}
"""
    rep = analysis.analyze(src, kernel="vote", grid=1, block=64, use_nvcc=False)
    assert rep.traits["warp_primitives"] == ["__any_sync", "__ballot_sync", "__syncwarp"]
    assert rep.traits["cooperative_groups"]
    assert [b.name for b in rep.barriers] == ["block.sync"]
    assert rep.traits["atomics"]["kinds"] == {"atomicMax": 1}
    # the branch on a ballot result depends on data: divergence unknown with the reason
    (br,) = rep.branches
    assert br.divergent is None and "depends on" in (br.unknown or "")
    assert "divergent_branches" not in rep.features


def test_report_is_json_and_features_use_the_shared_vocabulary() -> None:
    rep = analysis.analyze(
        (KERNELS / "matmul.cu").read_text(),
        kernel="matmul_tiled",
        grid=(8, 8),
        block=(16, 16),
        params={"N": 128},
        use_nvcc=False,
    )
    data = json.loads(json.dumps(rep.to_dict()))
    assert data["grid"] == [8, 8, 1] and data["block"] == [16, 16, 1]
    assert data["global_accesses"][0]["sectors_per_request"] == 4
    assert set(rep.features) <= set(FEATURES)
    assert rep.features["global_load_efficiency"] == 1.0
    assert rep.features["shared_mem_static_bytes"] == 2 * 16 * 16 * 4
    assert "theoretical_occupancy" not in rep.features  # no ptxas -> not determined
    assert any("occupancy unknown" in u for u in rep.unknowns)
    assert rep.occupancy is None and rep.resources is None


def test_analysis_of_a_typical_kernel_is_fast() -> None:
    src = (KERNELS / "matmul.cu").read_text()
    analysis.analyze(src, kernel="matmul_tiled", grid=(64, 64), block=(16, 16), params={"N": 1024}, use_nvcc=False)
    rep = analysis.analyze(
        src, kernel="matmul_tiled", grid=(64, 64), block=(16, 16), params={"N": 1024}, use_nvcc=False
    )
    assert rep.duration_s < 0.5
