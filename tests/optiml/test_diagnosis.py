"""Bottleneck diagnosis on real static analyses of small kernels, and on ncu-style feature dicts."""

from __future__ import annotations

import pytest

from veriforge.cuda import analysis
from veriforge.optiml.diagnosis import Finding, diagnose, primary_bottleneck, ridge_point, summarize

STRIDED = """
__global__ void strided(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i * 32];
    }
}
"""

CONFLICT = """
__global__ void conflict(float* out) {
    __shared__ float tile[32][32];
    int t = threadIdx.x;
    tile[t][0] = (float)t;
    __syncthreads();
    out[blockIdx.x * 32 + t] = tile[t][0];
}
"""

DIVERGE = """
__global__ void diverge(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x % 2 == 0) {
        out[i] = 1.0f;
    } else {
        out[i] = 2.0f;
    }
    if (threadIdx.x < 16) {
        __syncthreads();
    }
}
"""


def _kinds(findings: list[Finding]) -> set[str]:
    return {f.kind for f in findings}


def test_uncoalesced_load_is_found_at_its_line_with_the_sector_count() -> None:
    rep = analysis.analyze(STRIDED, "strided", grid=1024, block=256, params={"n": 1 << 18}, use_nvcc=False)
    found = diagnose(rep)
    loads = [f for f in found if f.kind == "uncoalesced_load"]
    assert len(loads) == 1
    f = loads[0]
    assert f.line == 5
    assert f.evidence["sectors_per_request"] == pytest.approx(32)
    assert f.evidence["efficiency"] == pytest.approx(0.125)
    assert "32 sectors per request (12.5% efficiency)" in f.message
    # the coalesced store on the same line is not reported
    assert "uncoalesced_store" not in _kinds(found)
    # the JSON form of the report gives the same findings
    assert [x.to_dict() for x in diagnose(rep.to_dict())] == [x.to_dict() for x in found]
    assert primary_bottleneck(found) == "uncoalesced load (line 5)"


def test_bank_conflicts_divergence_and_conditional_barrier() -> None:
    rep = analysis.analyze(CONFLICT, "conflict", grid=4, block=32, use_nvcc=False)
    conflicts = [f for f in diagnose(rep) if f.kind == "bank_conflict"]
    assert conflicts and all(f.line in (5, 7) for f in conflicts)
    assert conflicts[0].evidence["ways"] == 32
    assert conflicts[0].message.startswith("32-way shared-memory bank conflicts at line")

    rep = analysis.analyze(DIVERGE, "diverge", grid=8, block=64, params={"n": 512}, use_nvcc=False)
    found = diagnose(rep)
    div = [f for f in found if f.kind == "divergent_branch"]
    assert [f.line for f in div] == [4, 9]
    bar = [f for f in found if f.kind == "barrier_divergence"]
    assert len(bar) == 1 and bar[0].line == 10 and bar[0].severity == 1.0
    assert found[0].kind == "barrier_divergence"  # the correctness hazard ranks first


def test_feature_dicts_from_a_profile_use_the_same_vocabulary() -> None:
    feats = {
        "global_load_sectors_per_request": 16.0,
        "global_load_efficiency": 0.25,
        "theoretical_occupancy": 0.25,
        "occupancy_limit_registers": 2.0,
        "occupancy_limit_warps": 8.0,
        "occupancy_limit_shared_mem": 16.0,
        "registers_per_thread": 128.0,
        "arithmetic_intensity": 0.08,
        "warp_execution_efficiency": 0.5,
        "barrier_stall_fraction": 0.4,
        "dram_throughput": 0.3,
        "spill_bytes": 64.0,
    }
    found = diagnose(feats, gpu="H100-SXM")
    by = {f.kind: f for f in found}
    assert by["low_occupancy"].message.startswith("occupancy limited by registers to 25%")
    assert by["low_occupancy"].evidence["limiter"] == "registers"
    assert "0.08 FLOP/B vs ridge 20" in by["memory_bound"].message
    assert {"uncoalesced_load", "low_warp_efficiency", "barrier_stall", "low_dram_throughput",
            "register_spill"} <= set(by)
    assert all(f.line is None for f in found)
    assert [f.severity for f in found] == sorted((f.severity for f in found), reverse=True)
    text = summarize(found, limit=3)
    assert text.count("\n- ") == 3 and "more" in text.splitlines()[-1]
    assert Finding.from_dict(found[0].to_dict()) == found[0]


def test_healthy_kernel_gives_no_coalescing_or_occupancy_findings() -> None:
    feats = {"global_load_efficiency": 1.0, "global_load_sectors_per_request": 4.0,
             "theoretical_occupancy": 1.0, "arithmetic_intensity": 50.0}
    found = diagnose(feats)
    assert _kinds(found) == {"compute_bound"}
    assert ridge_point("H200") < ridge_point("H100-SXM")
