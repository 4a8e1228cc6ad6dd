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


SAMPLES_STYLE = r"""
namespace cg = cooperative_groups;
template <class T> struct DynShared {
    __device__ inline operator T *() {
        extern __shared__ int __dyn_smem[];
        return (T *)__dyn_smem;
    }
};
template <class T> __global__ void block_sum(T *in, T *out, unsigned int n) {
    cg::thread_block cta = cg::this_thread_block();
    T *sdata = DynShared<T>();
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    T v = (i < n) ? in[i] : 0;
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    sdata[tid] = v;
    cg::sync(cta);
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = v = v + sdata[tid + s];
        cg::sync(cta);
    }
    if (cta.thread_rank() == 0) out[blockIdx.x] = v;
}
"""


def test_cuda_samples_idioms_are_read() -> None:
    """Dynamic shared memory through a struct's conversion operator, cg::sync(group) as a barrier,
    and group.thread_rank(): each used to leave accesses and FLOPs unknown."""
    rep = analysis.analyze(SAMPLES_STYLE, kernel="block_sum", grid=(64,), block=(256,), params={"n": 64 * 512},
                           template_args={"T": "float"}, use_nvcc=False)
    assert rep.flops is not None and rep.flops > 0
    assert all(s.requests is not None for s in rep.shared_accesses) and rep.shared_accesses
    store = next(a for a in rep.global_accesses if a.kind == "store")
    assert store.requests == 64  # one warp request per block: thread_rank() == 0 is lane 0 of warp 0
    assert len(rep.barriers) == 2 and rep.traits["cooperative_groups"]
    assert not [u for u in rep.unknowns if "not followed" in u]


BLOCKDIM_LOOP = r"""
__global__ void total(const float* in, float* out) {
    __shared__ float s[256];
    s[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int i = 0; i < blockDim.x; ++i) t += s[i];
        out[blockIdx.x] = t;
    }
}
"""


def test_a_loop_bounded_by_blockdim_is_not_a_compile_time_trip_count() -> None:
    """blockDim is known for the analysed launch but set at launch time: ptxas cannot merge the
    loop's loads into LDS.128 (one request per iteration, 256 per block, not 64)."""
    rep = analysis.analyze(BLOCKDIM_LOOP, kernel="total", grid=4, block=256, use_nvcc=False)
    load = next(s for s in rep.shared_accesses if s.kind == "load")
    assert load.merged_width == 1 and load.requests == 4 * 256


CG_TILES = r"""
namespace cg = cooperative_groups;
template <int Group>
__global__ void partial(const float* in, float* out) {
    __shared__ float s[32];
    auto cta = cg::this_thread_block();
    auto tile = cg::tiled_partition<Group>(cta);
    float v = in[cta.thread_rank() + blockIdx.x * cta.size()];
    if (tile.thread_rank() == 0) s[tile.meta_group_rank()] = v;
    cg::sync(cta);
    if (cta.thread_rank() == 0) {
        float t = 0.0f;
        for (int i = 0; i < tile.meta_group_size(); i++) t += s[i];
        out[blockIdx.x] = t;
    }
}
"""


def test_cooperative_group_tiles_declared_with_auto_are_followed() -> None:
    """The CUDA samples' multi_warp_cg_reduce: ``auto t = cg::tiled_partition<N>(cta)`` with N a
    template parameter; its thread_rank, meta_group_rank and meta_group_size are known."""
    rep = analysis.analyze(CG_TILES, kernel="partial", grid=8, block=256, template_args={"Group": 64},
                           use_nvcc=False)
    assert not [u for u in rep.unknowns if "meta_group" in u or "thread_rank" in u], rep.unknowns
    store, load = sorted(rep.shared_accesses, key=lambda s: s.line)
    assert store.kind == "store" and store.requests == 8 * 4  # 4 tiles of 64: lanes 0, 64, 128, 192
    assert store.bank_conflict_ways == 1
    assert load.requests == 8 * 4  # thread 0 reads the 4 tile results
    assert [a.requests for a in rep.global_accesses] == [8 * 8, 8]


OPTIONAL_OUTPUT = r"""
__global__ void rowstats(float* out, float* mean, const float* inp, int C) {
    namespace cg = cooperative_groups;
    int row = blockIdx.x;
    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s += inp[row * C + c];
    if (threadIdx.x == 0 && mean != nullptr) mean[row] = s;
    if (out != NULL && threadIdx.x == 0) out[row] = s;
}
"""


def test_an_optional_output_pointer_is_written_unless_its_address_is_null() -> None:
    """llm.c's layernorm: ``if (warp.thread_rank() == 0 && mean != nullptr)``. A pointer parameter
    is an allocation (never null) unless its address is given as 0."""
    rep = analysis.analyze(OPTIONAL_OUTPUT, kernel="rowstats", grid=64, block=128, params={"C": 512},
                           use_nvcc=False)
    assert not [u for u in rep.unknowns if "divergence" in u or "namespace" in u], rep.unknowns
    stores = {a.array: a.requests for a in rep.global_accesses if a.kind == "store"}
    assert stores == {"mean": 64.0, "out": 64.0}
    rep = analysis.analyze(OPTIONAL_OUTPUT, kernel="rowstats", grid=64, block=128, params={"C": 512, "mean": 0},
                           use_nvcc=False)
    stores = {a.array: a.requests for a in rep.global_accesses if a.kind == "store"}
    assert stores["out"] == 64.0 and not stores.get("mean")


def test_a_type_given_as_a_macro_is_a_type() -> None:
    """llm.c's floatX (a typedef in its common.h, which the analysis does not read): -D floatX=float
    makes it a type, as the preprocessor would; without it the element size is unknown."""
    src = ("__global__ void gelu(floatX* out, const floatX* inp, int N) {\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i < N) out[i] = (floatX)(0.5f * (float)inp[i]);\n}\n")
    blind = analysis.analyze(src, kernel="gelu", grid=64, block=256, params={"N": 16384}, use_nvcc=False)
    assert all(a.requests is None or a.unknown for a in blind.global_accesses)
    for name, size in (("float", 4), ("__half", 2)):
        rep = analysis.analyze(src, kernel="gelu", grid=64, block=256, params={"N": 16384},
                               defines={"floatX": name}, use_nvcc=False)
        assert [(a.requests, a.elem_bytes, a.unknown) for a in rep.global_accesses] == [(512.0, size, None)] * 2
