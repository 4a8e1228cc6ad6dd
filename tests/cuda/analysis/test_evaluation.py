"""Lane evaluation: macros, templates, loops, pointers, device functions."""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.cuda import analysis

KERNELS = Path(__file__).parent / "kernels"


def one(src: str, kernel: str = "k", **kw: object) -> analysis.AnalysisReport:
    kw.setdefault("grid", 4)
    kw.setdefault("block", 128)
    return analysis.analyze(src, kernel=kernel, use_nvcc=False, **kw)  # type: ignore[arg-type]


def test_function_like_macros_and_constexpr_are_expanded() -> None:
    src = r"""
#define IDX(r, c) ((r) * LD + (c))
constexpr int LD = 64;
static const int STRIDE = LD / 32;
__global__ void k(float* m) {
    int r = threadIdx.x, c = blockIdx.x;
    m[IDX(r, c)] = 0.0f;                  // column walk: 32 sectors
    m[IDX(c, r)] = 1.0f;                  // row walk: 4 sectors
    m[threadIdx.x * STRIDE] = 2.0f;       // stride 2: 8 sectors
}
"""
    rep = one(src)
    assert [a.sectors_per_request for a in rep.global_accesses] == [32, 4, 8]
    assert [a.line for a in rep.global_accesses] == [7, 8, 9]


def test_defines_override_and_template_type_arguments() -> None:
    src = r"""
template <typename T, int S = 1>
__global__ void k(T* a) { a[threadIdx.x * S * SCALE] = T(0); }
"""
    rep = one(src, template_args={"T": "double"}, defines={"SCALE": 2})
    acc = rep.global_accesses[0]
    assert acc.elem_bytes == 8 and acc.sectors_per_request == 16  # 32 lanes * 16 B apart
    rep = one(src, template_args={"T": "half", "S": 1}, defines={"SCALE": 1})
    assert rep.global_accesses[0].elem_bytes == 2 and rep.global_accesses[0].sectors_per_request == 2


def test_grid_stride_loop_trip_counts_weight_requests() -> None:
    rep = analysis.analyze(
        (KERNELS / "vector.cu").read_text(),
        kernel="grid_stride",
        grid=8,
        block=256,
        params={"n": 8 * 256 * 10, "a": 2.0},
        use_nvcc=False,
    )
    (loop,) = rep.loops
    assert loop.trip_count == 10 and not loop.trip_count_varies
    for acc in rep.global_accesses:
        assert acc.requests == pytest.approx(8 * 8 * 10)
    assert rep.flops == pytest.approx(8 * 256 * 10 * 2)
    assert rep.global_bytes == pytest.approx(3 * 8 * 256 * 10 * 4)


def test_shift_loop_is_simulated_and_tree_reduction_diverges_late() -> None:
    rep = analysis.analyze(
        (KERNELS / "reduce.cu").read_text(), kernel="tree_reduce", grid=16, block=256, use_nvcc=False
    )
    (loop,) = rep.loops
    assert loop.trip_count == 8  # stride 128, 64, ..., 1
    br = next(b for b in rep.branches if b.condition == "tid < stride")
    # strides 128..32 keep whole warps together; 16..1 split warp 0
    assert br.divergent is True and br.scope == "some"
    assert len(rep.barriers) == 2 and not any(b.under_thread_dependent_condition for b in rep.barriers)
    # s[tid] += s[tid + stride]: 128+64+...+1 = 255 additions per block
    assert rep.flops == pytest.approx(16 * 255)


def test_local_pointer_offsets_and_2d_blocks() -> None:
    src = r"""
__global__ void k(const float* A, float* out, int ld) {
    const float* row = A + blockIdx.y * ld;
    float* o = &out[blockIdx.y * ld];
    o[threadIdx.x + threadIdx.y * 32] = row[threadIdx.y + threadIdx.x * 2];
}
"""
    rep = one(src, grid=(1, 4), block=(32, 4), params={"ld": 1024})
    by = {a.kind: a for a in rep.global_accesses}
    assert by["store"].sectors_per_request == 4
    # warps with an odd threadIdx.y start 4 B into a sector: 9 sectors instead of 8
    assert by["load"].sectors_per_request == pytest.approx(8.5)
    assert by["load"].first_warp_sectors == 8


def test_device_function_accesses_are_followed() -> None:
    src = r"""
__device__ float load_scaled(const float* p, int i, float s) { return p[i * 3] * s; }
__global__ void k(const float* a, float* b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    b[i] = load_scaled(a, i, 2.0f);
}
"""
    rep = one(src)
    load = next(a for a in rep.global_accesses if a.kind == "load")
    assert load.line == 2 and load.sectors_per_request == 12 and load.array == "a"
    assert rep.flops == pytest.approx(4 * 128)
    assert rep.traits["device_functions_inlined"] == ["load_scaled"]


def test_int_division_and_modulo_follow_c_semantics() -> None:
    src = r"""
__global__ void k(float* a) {
    int lane = threadIdx.x % 32;
    int w = threadIdx.x / 32;
    a[w * 32 + (31 - lane)] = 0.0f;      // reversed inside the warp: still 4 sectors
    a[(threadIdx.x >> 1) << 1] = 1.0f;   // pairs share a word: 4 sectors, 50% useful
}
"""
    rep = one(src)
    assert [a.sectors_per_request for a in rep.global_accesses] == [4, 4]
    assert rep.global_accesses[1].efficiency == pytest.approx(0.5)
