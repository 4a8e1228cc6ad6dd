"""Idioms of hand-optimised kernels (SGEMM tutorials, reductions) that the analysis must follow.

Each kernel here is written for these tests in the style such kernels are written in: work inside
``__device__`` helper templates (register tiles passed as pointers, reference parameters), the
pointer-advance idiom (``A += BK; B += BK * N;``), grid-stride loops, ``float4`` through
``reinterpret_cast``, ``#pragma unroll`` over template trip counts, unsigned template arithmetic.
Expected FLOPs and request counts are computed by hand in the comments. A call the analysis cannot
follow must make FLOPs unknown, never a low number.
"""

from __future__ import annotations

import time

from veriforge.cuda import analysis

WARP_TILED = r"""
typedef unsigned int uint;

namespace tile {
// one BK-deep step of a TM x TN register tile: the inner products live here, not in the kernel
template <int BK, int TM, int TN>
__device__ __forceinline__ void mma_regs(const float *As, const float *Bs, float *regM, float regN[],
                                         float *acc, const uint row, const uint col, int lda, int ldb) {
    for (uint k = 0; k < BK; ++k) {
#pragma unroll
        for (uint m = 0; m < TM; ++m) regM[m] = As[k * lda + row * TM + m];
#pragma unroll
        for (uint n = 0; n < TN; ++n) regN[n] = Bs[k * ldb + col * TN + n];
#pragma unroll
        for (uint m = 0; m < TM; ++m)
#pragma unroll
            for (uint n = 0; n < TN; ++n)
                acc[m * TN + n] += regM[m] * regN[n];
    }
}

// stage a BM x BK tile of A (transposed) and a BK x BN tile of B into shared memory, 16 B a thread
template <int BM, int BN, int BK, int NT>
__device__ void stage(const float *A, const float *B, float *As, float *Bs, int K, int N) {
    for (uint i = threadIdx.x; i < BM * BK / 4; i += NT) {
        const uint r = i / (BK / 4), c4 = i % (BK / 4);
        const float4 v = reinterpret_cast<const float4 *>(&A[r * K + c4 * 4])[0];
        As[(c4 * 4 + 0) * BM + r] = v.x;
        As[(c4 * 4 + 1) * BM + r] = v.y;
        As[(c4 * 4 + 2) * BM + r] = v.z;
        As[(c4 * 4 + 3) * BM + r] = v.w;
    }
    for (uint i = threadIdx.x; i < BK * BN / 4; i += NT) {
        const uint r = i / (BN / 4), c4 = i % (BN / 4);
        reinterpret_cast<float4 *>(Bs)[r * (BN / 4) + c4] = reinterpret_cast<const float4 *>(B + r * N)[c4];
    }
}
}  // namespace tile

template <int BM, int BN, int BK, int TM, int TN>
__global__ void gemm_tiled(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                           float *C) {
    constexpr uint NT = (BM * BN) / (TM * TN);
    const uint threadCol = threadIdx.x % (BN / TN);
    const uint threadRow = threadIdx.x / (BN / TN);
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    float regM[TM];
    float regN[TN];
    float acc[TM * TN] = {0.0f};
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    for (uint k0 = 0; k0 < K; k0 += BK) {
        tile::stage<BM, BN, BK, NT>(A, B, As, Bs, K, N);
        __syncthreads();
        tile::mma_regs<BK, TM, TN>(As, Bs, regM, regN, acc, threadRow, threadCol, BM, BN);
        __syncthreads();
        A += BK;
        B += BK * N;
    }
#pragma unroll
    for (uint m = 0; m < TM; ++m) {
        for (uint n = 0; n < TN; n += 4) {
            float4 c = reinterpret_cast<float4 *>(&C[(threadRow * TM + m) * N + threadCol * TN + n])[0];
            c.x = alpha * acc[m * TN + n + 0] + beta * c.x;
            c.y = alpha * acc[m * TN + n + 1] + beta * c.y;
            c.z = alpha * acc[m * TN + n + 2] + beta * c.z;
            c.w = alpha * acc[m * TN + n + 3] + beta * c.w;
            reinterpret_cast<float4 *>(&C[(threadRow * TM + m) * N + threadCol * TN + n])[0] = c;
        }
    }
}
"""

TILE = {"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 4}  # 256 threads, a 4x4 register tile each


def _gemm(n: int = 256) -> analysis.AnalysisReport:
    return analysis.analyze(
        WARP_TILED,
        kernel="gemm_tiled",
        grid=(n // 64, n // 64),
        block=256,
        params={"M": n, "N": n, "K": n, "alpha": 1.0, "beta": 0.5},
        template_args=TILE,
        use_nvcc=False,
    )


def _only_nvcc_unknowns(rep: analysis.AnalysisReport) -> list[str]:
    return [u for u in rep.unknowns if "nvcc" not in u and "ptxas" not in u]


def test_inner_products_in_a_helper_template_are_counted_exactly() -> None:
    rep = _gemm()
    # 2·M·N·K for the products, + 3·M·N for the epilogue (alpha·acc + beta·c: 2 mul, 1 add)
    assert rep.flops == 2 * 256**3 + 3 * 256**2
    assert _only_nvcc_unknowns(rep) == []
    assert rep.traits["device_functions_inlined"] == ["mma_regs", "stage"]
    # __shared__ float As[BM * BK] with template sizes; two barriers in the K loop (32 steps)
    assert rep.traits["shared_mem_static_bytes"] == 2 * 64 * 8 * 4
    assert len(rep.barriers) == 2
    assert max(lp.trip_count or 0 for lp in rep.loops) == 32


def test_pointer_advance_and_float4_tiles_give_exact_requests() -> None:
    rep = _gemm()
    by = {(a.kind, a.array, a.line): a for a in rep.global_accesses}
    assert all(a.unknown is None and a.requests is not None for a in rep.global_accesses)
    a_load = next(a for (k, arr, _), a in by.items() if k == "load" and arr == "A")
    b_load = next(a for (k, arr, _), a in by.items() if k == "load" and arr == "B")
    # A: 128 float4 per block and K step -> threads 0..127 = 4 warps; a warp reads 16 rows x 32 B
    # (one sector each, 32-B aligned because A advances by BK = 8 floats) -> 16 sectors.
    # 16 blocks x 32 K steps x 4 warps = 2048 requests.
    assert a_load.vector_width == 4 and a_load.elem_bytes == 16
    assert a_load.requests == 2048 and a_load.sectors_per_request == 16
    # B: a warp reads 2 rows x 256 contiguous bytes -> 16 sectors, also 2048 requests.
    assert b_load.requests == 2048 and b_load.sectors_per_request == 16
    # C: 4 float4 loads and stores a thread; a warp covers 2 rows x 256 B -> 16 sectors;
    # 16 blocks x 8 warps x 4 = 512 requests each.
    for kind in ("load", "store"):
        c = next(a for (k, arr, _), a in by.items() if k == kind and arr == "C")
        assert c.requests == 512 and c.sectors_per_request == 16
    assert rep.global_bytes == 2 * 2048 * 16 * 32 + 2 * 512 * 16 * 32
    # the helper's shared loads are measured too (register tile loads through `const float *As`)
    assert rep.shared_accesses and all(s.unknown is None for s in rep.shared_accesses)


def test_warp_tiled_analysis_stays_fast() -> None:
    started = time.perf_counter()
    _gemm(1024)
    assert time.perf_counter() - started < 10.0


UNFOLLOWABLE = r"""
extern __device__ float secret_dot(const float *a, const float *b, int n);  // no body here

__device__ float twice(float x) { return 2.0f * x; }
__device__ float twice(float x, float y) { return 2.0f * x + y; }
__device__ int twice(int x) { return 2 * x; }

__device__ float deep(const float *p, int d) { return d > 0 ? deep(p, d - 1) : p[0]; }

__global__ void hidden(const float *A, const float *B, float *out, int n) {
    float s = 0.0f;
    for (int k = 0; k < n; ++k) s += secret_dot(A + k * 32, B + k * 32, 32);
    out[threadIdx.x] = s;
}

__global__ void ambiguous(const float *A, float *out) {
    out[threadIdx.x] = twice(A[threadIdx.x]);
}

__global__ void recursive(const float *A, float *out) {
    out[threadIdx.x] = deep(A, 3);
}

__global__ void by_arity(const float *A, float *out) {
    out[threadIdx.x] = twice(A[threadIdx.x], 1.0f);
}
"""


def test_a_call_without_a_body_makes_flops_and_traffic_unknown() -> None:
    rep = analysis.analyze(UNFOLLOWABLE, kernel="hidden", grid=1, block=32, params={"n": 8}, use_nvcc=False)
    assert rep.flops is None  # not the 8 additions outside the call
    assert any("secret_dot" in u and u.startswith("FLOPs unknown") for u in rep.unknowns)
    assert rep.global_bytes is None  # A and B are passed to it: what it reads is unknown
    hidden = [a for a in rep.global_accesses if "passed to `secret_dot()`" in (a.unknown or "")]
    assert hidden and all(a.requests is None for a in hidden)  # neither where nor how often


def test_unresolved_overloads_and_recursion_are_unknown_not_zero() -> None:
    rep = analysis.analyze(UNFOLLOWABLE, kernel="ambiguous", grid=1, block=32, use_nvcc=False)
    assert rep.flops is None
    assert any("twice()" in u and "overloaded" in u for u in rep.unknowns)
    rep = analysis.analyze(UNFOLLOWABLE, kernel="recursive", grid=1, block=32, use_nvcc=False)
    assert rep.flops is None and any("recursion" in u for u in rep.unknowns)
    # an overload that is the only one taking two arguments is followed: 2 FLOPs a thread
    rep = analysis.analyze(UNFOLLOWABLE, kernel="by_arity", grid=1, block=32, use_nvcc=False)
    assert rep.flops == 64 and _only_nvcc_unknowns(rep) == []


def test_inline_asm_arithmetic_and_memory_are_unknown() -> None:
    src = r"""
__global__ void k(const float *x, float *y) {
    float v;
    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(x + threadIdx.x));
    asm("fma.rn.f32 %0, %1, %1, %1;" : "=f"(v) : "f"(v));
    y[threadIdx.x] = v;
}
"""
    rep = analysis.analyze(src, kernel="k", grid=1, block=32, use_nvcc=False)
    assert rep.flops is None and rep.global_bytes is None
    assert any("inline asm" in u for u in rep.unknowns)


REFS = r"""
__device__ __forceinline__ void fma_acc(float &acc, float a, float b) { acc += a * b; }
__device__ void advance(int &i, int step) { i += step; }
__device__ void add_to(float &dst, float v) { dst += v; }
template <typename T> __device__ T square(T x) { return x * x; }

__global__ void refs(const float *x, float *y, float *out, int n) {
    int i = threadIdx.x;
    float acc = 0.0f;
    fma_acc(acc, x[i], x[i]);   // 2 FLOPs, written back to acc
    advance(i, 1);              // i = threadIdx.x + 1: the store below must use it
    y[i] = acc + square(acc);   // 1 + 1 FLOPs (T deduced as float)
    add_to(out[threadIdx.x * 2], 1.0f);  // a load and a store of out[2 tid] inside add_to: 1 FLOP
}
"""


def test_reference_parameters_write_back_and_alias_memory() -> None:
    rep = analysis.analyze(REFS, kernel="refs", grid=1, block=32, params={"n": 64}, use_nvcc=False)
    assert rep.flops == 32 * (2 + 2 + 1)
    assert _only_nvcc_unknowns(rep) == []
    y = next(a for a in rep.global_accesses if a.array == "y")
    assert y.first_warp_sectors == 5  # y[tid + 1]: 128 bytes from byte 4 -> 5 sectors (4 without write-back)
    outs = {a.kind: a for a in rep.global_accesses if a.array == "out"}
    assert set(outs) == {"load", "store"}
    for a in outs.values():  # out[2 tid]: stride 8 B -> 256 B -> 8 sectors
        assert a.requests == 1 and a.sectors_per_request == 8
        assert a.line == 4  # recorded where the helper reads and writes `dst`


GRID_STRIDE = r"""
__global__ void scale_ptr(const float *x, float *y, int n) {
    const float *px = x + blockIdx.x * blockDim.x + threadIdx.x;
    float *py = y + blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        *py = 2.0f * *px;
        px += blockDim.x * gridDim.x;
        py += blockDim.x * gridDim.x;
    }
}

__global__ void scale_noinit(const float *x, float *y, size_t n) {
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += blockDim.x * gridDim.x) y[i] = 2.0f * x[i];
}

__global__ void scale_while(const float *x, float *y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int stride = blockDim.x * gridDim.x;
    while (i < n) {
        y[i] = 2.0f * x[i];
        i += stride;
    }
}

__global__ void scale_comma(const float *x, float *y, int n) {
    const float *p = x + blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x,
         p += blockDim.x * gridDim.x)
        y[i] = 2.0f * p[0];
}
"""


def test_grid_stride_loops_and_advancing_pointers_are_exact() -> None:
    # 8 blocks x 128 threads = 1024 threads over n = 10000: threads 0..783 run 10 iterations, the
    # rest 9 -> 10000 multiplications. Warp requests: warps 0..24 run 10 (warp 24 holds threads
    # 768..799, the last 16 of them stop after 9), warps 25..31 run 9: 25*10 + 7*9 = 313; sectors:
    # 312 full requests of 4 sectors + warp 24's last one with 16 lanes (2 sectors) = 1250.
    for kernel in ("scale_ptr", "scale_noinit", "scale_while", "scale_comma"):
        rep = analysis.analyze(GRID_STRIDE, kernel=kernel, grid=8, block=128, params={"n": 10000}, use_nvcc=False)
        assert rep.flops == 10000, kernel
        assert _only_nvcc_unknowns(rep) == [], kernel
        for a in rep.global_accesses:
            assert a.requests == 313 and a.bytes == 1250 * 32, (kernel, a)


def test_counted_while_and_do_loops_walk_like_for_loops() -> None:
    src = r"""
__global__ void walk(float *p, int n) {
    while (n > 0) { *p = 0.0f; p += 32; n--; }
}
__global__ void do_k(const float *A, float *C, int K) {
    int k = 0;
    float acc = 0.0f;
    do { k += 8; acc += A[k + threadIdx.x]; } while (k < K);
    C[threadIdx.x] = acc;
}
"""
    rep = analysis.analyze(src, kernel="walk", grid=1, block=32, params={"n": 4}, use_nvcc=False)
    (store,) = rep.global_accesses
    assert store.requests == 4 and store.sectors_per_request == 1 and rep.loops[0].trip_count == 4
    rep = analysis.analyze(src, kernel="do_k", grid=1, block=32, params={"K": 64}, use_nvcc=False)
    assert rep.loops[0].trip_count == 8  # k = 8, 16, ..., 64
    assert rep.flops == 8 * 32
    load = next(a for a in rep.global_accesses if a.kind == "load")
    assert load.requests == 8 and load.unknown is None


def test_ping_pong_indices_of_double_buffered_scans_are_followed() -> None:
    # Hillis-Steele with two shared buffers, in the two spellings real scans use (`cur ^= 1`, and
    # the CUDA samples' `pout = 1 - pout; pin = 1 - pout;`): every access, in the loop and after it,
    # has a known address and is conflict-free.
    src = r"""
__global__ void scan_xor(const float* x, float* y) {
    __shared__ float s[2][256];
    int tid = threadIdx.x;
    int cur = 0;
    s[cur][tid] = x[tid];
    __syncthreads();
    for (int off = 1; off < 256; off <<= 1) {
        float v = s[cur][tid];
        if (tid >= off) v += s[cur][tid - off];
        s[cur ^ 1][tid] = v;
        cur ^= 1;
        __syncthreads();
    }
    y[tid] = s[cur][tid];
}
__global__ void scan_reflect(const float* x, float* y) {
    __shared__ float t[2 * 256];
    int tid = threadIdx.x, pout = 0, pin = 1;
    t[pout * 256 + tid] = x[tid];
    __syncthreads();
    for (int off = 1; off < 256; off *= 2) {
        pout = 1 - pout;
        pin = 1 - pout;
        t[pout * 256 + tid] = t[pin * 256 + tid] + (tid >= off ? t[pin * 256 + tid - off] : 0.0f);
        __syncthreads();
    }
    y[tid] = t[pout * 256 + tid];
}
"""
    for kernel in ("scan_xor", "scan_reflect"):
        rep = analysis.analyze(src, kernel=kernel, grid=4, block=256, use_nvcc=False)
        assert rep.shared_accesses, kernel
        for acc in rep.shared_accesses:
            assert acc.unknown is None and acc.bank_conflict_ways == 1, (kernel, acc)
    # a toggle under a condition is not a fixed period-2 step: left unknown, not guessed
    cond = src.replace("        cur ^= 1;", "        if (off < 64) cur ^= 1;")
    rep = analysis.analyze(cond, kernel="scan_xor", grid=4, block=256, use_nvcc=False)
    assert any(a.unknown for a in rep.shared_accesses if "cur" in a.text)


def test_pragma_between_a_loop_header_and_its_unbraced_body() -> None:
    # tree-sitter would end the outer loop at the directive; the body must still be the inner loop
    src = r"""
template <int TM, int TN>
__global__ void outer(float *out) {
    float acc[TM * TN];
#pragma unroll
    for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n)
            acc[m * TN + n] = 1.5f * m + n;
    out[threadIdx.x] = acc[0];
}
"""
    rep = analysis.analyze(src, kernel="outer", grid=1, block=32, template_args={"TM": 4, "TN": 8}, use_nvcc=False)
    assert rep.flops == 32 * 4 * 8 * 2
    assert not any("parse" in u for u in rep.unknowns)
    assert [lp.unrolled for lp in rep.loops] == [True, True]


def test_functional_casts_and_template_arguments_from_expressions() -> None:
    src = r"""
#define WARP 32
template <unsigned int N>
__device__ __forceinline__ float tree(float v) {
    if (N >= 32) v += __shfl_down_sync(0xffffffffu, v, 16);
    if (N >= 16) v += __shfl_down_sync(0xffffffffu, v, 8);
    if (N >= 2) v += __shfl_down_sync(0xffffffffu, v, 1);
    return v;
}
template <unsigned int BLOCK>
__global__ void reduce(const float *x, float *out) {
    float v = x[blockIdx.x * BLOCK + threadIdx.x] * float(2);
    v = tree<BLOCK>(v);
    v = tree<BLOCK / WARP>(v);  // 64 / 32 = 2: only the last step
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}
"""
    rep = analysis.analyze(src, kernel="reduce", grid=4, block=64, template_args={"BLOCK": 64}, use_nvcc=False)
    # per thread: 1 (cast operand) + 3 (tree<64>) + 1 (tree<2>) = 5
    assert rep.flops == 4 * 64 * 5
    assert _only_nvcc_unknowns(rep) == []
