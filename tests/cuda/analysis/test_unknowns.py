"""What cannot be determined is reported as unknown with the reason, never guessed."""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.cuda import analysis

KERNELS = Path(__file__).parent / "kernels"
SRC = (KERNELS / "unknowns.cu").read_text()


def test_indirect_index_is_unknown_but_direct_accesses_are_not() -> None:
    rep = analysis.analyze(SRC, kernel="gather", grid=64, block=256, params={"n": 1 << 14}, use_nvcc=False)
    by_text = {a.text: a for a in rep.global_accesses}
    gather = by_text["src[idx[i]]"]
    assert gather.sectors_per_request is None and gather.efficiency is None and gather.bytes is None
    assert "indirect" in (gather.unknown or "") and "idx" in (gather.unknown or "")
    assert by_text["idx[i]"].sectors_per_request == 4
    assert by_text["dst[i]"].sectors_per_request == 4
    assert rep.global_bytes is None and rep.arithmetic_intensity is None
    assert any("src[idx[i]]" in u for u in rep.unknowns)
    assert "global_load_sectors_per_request" not in rep.features
    assert rep.features["global_store_sectors_per_request"] == 4


def test_data_dependent_loop_bounds_make_counts_unknown() -> None:
    rep = analysis.analyze(SRC, kernel="csr_row", grid=64, block=256, params={"rows": 1 << 14}, use_nvcc=False)
    (loop,) = rep.loops
    assert loop.trip_count is None and "rowptr" in (loop.unknown or "")
    assert rep.flops is None
    assert any(u.startswith("FLOPs unknown") for u in rep.unknowns)


def test_pointer_walking_while_loop_is_unknown() -> None:
    # a sentinel-terminated walk: the trip count depends on loaded data, so the pointer's value in
    # an iteration is unknown (a counted walk, `while (n > 0) { ...; p += 32; n--; }`, is not:
    # test_real_idioms.py)
    rep = analysis.analyze(SRC, kernel="walk_ptr", grid=1, block=32, use_nvcc=False)
    store = next(a for a in rep.global_accesses if a.kind == "store")
    assert store.sectors_per_request is None
    assert "changes across iterations" in (store.unknown or "")
    assert rep.loops[0].kind == "while" and rep.loops[0].trip_count is None


def test_missing_parameter_value_is_named() -> None:
    src = r"""
__global__ void k(float* a, int stride) { a[threadIdx.x * stride] = 1.0f; }
"""
    rep = analysis.analyze(src, kernel="k", grid=1, block=32, use_nvcc=False)
    assert rep.global_accesses[0].sectors_per_request is None
    assert "params={'stride': ...}" in (rep.global_accesses[0].unknown or "")
    rep = analysis.analyze(src, kernel="k", grid=1, block=32, params={"stride": 8}, use_nvcc=False)
    assert rep.global_accesses[0].sectors_per_request == 32


def test_missing_template_argument_is_named() -> None:
    src = (KERNELS / "transpose.cu").read_text()
    rep = analysis.analyze(
        src, kernel="transpose_tiled", grid=(2, 2), block=(32, 32), params={"width": 64, "height": 64}, use_nvcc=False
    )
    assert any("template parameter `PAD`" in u for u in rep.unknowns)
    col = next(s for s in rep.shared_accesses if s.text == "tile[threadIdx.x][threadIdx.y]")
    assert col.bank_conflict_ways is None and col.unknown


def test_data_dependent_branch_is_counted_as_an_upper_bound() -> None:
    src = r"""
__global__ void relu_store(const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    if (v > 0.0f) y[i] = v;
}
"""
    rep = analysis.analyze(src, kernel="relu_store", grid=8, block=128, use_nvcc=False)
    store = next(a for a in rep.global_accesses if a.kind == "store")
    # where the branch goes is unknown; the store is counted as if every lane took it, and said so
    assert store.requests == 8 * 128 / 32 and store.sectors_per_request == 4.0
    assert any("v > 0.0f" in u and "store of y" in u for u in rep.upper_bounded)
    assert rep.branches[0].divergent is None


def test_unparseable_lines_are_reported_not_fatal() -> None:
    src = r"""
__global__ void k(float* a) {
    int i = threadIdx.x;
    a[i] = 1.0f;
    @@@ garbage here;
}
"""
    rep = analysis.analyze(src, kernel="k", grid=1, block=32, use_nvcc=False)
    assert any("could not parse" in u for u in rep.unknowns)
    assert rep.global_accesses[0].sectors_per_request == 4


def test_unknown_kernel_and_bad_launch_raise_clear_errors() -> None:
    with pytest.raises(analysis.KernelNotFoundError, match="kernels found: csr_row, gather, walk_ptr"):
        analysis.analyze(SRC, kernel="nope", grid=1, block=32, use_nvcc=False)
    with pytest.raises(analysis.LaunchConfigError, match="at most 1024"):
        analysis.analyze(SRC, kernel="gather", grid=1, block=(64, 32), use_nvcc=False)
    with pytest.raises(analysis.LaunchConfigError, match="positive"):
        analysis.analyze(SRC, kernel="gather", grid=0, block=32, use_nvcc=False)
