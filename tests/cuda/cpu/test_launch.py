"""Module.launch against numpy references with random data: indexing, shared memory, templates,
structs, vector and half types, math and integer intrinsics, atomics, warp collectives and
cooperative groups."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from veriforge.cuda import cpu

SOURCE = r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void saxpy(int n, float a, const float* __restrict__ x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void index3d(int* out) {
    unsigned bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned gid = bid * (blockDim.x * blockDim.y * blockDim.z) + tid;
    out[gid] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z
             + 1000 * blockIdx.x + 10000 * blockIdx.y + 100000 * blockIdx.z;
}

template <int B, typename T>
__global__ void __launch_bounds__(B) block_sum(const T* x, T* out) {
    __shared__ T s[B];
    unsigned t = threadIdx.x;
    s[t] = x[blockIdx.x * B + t];
    __syncthreads();
    for (int k = B / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

__global__ void reverse_blocks(const int* in, int* out) {
    extern __shared__ int buf[];
    int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    buf[t] = in[base + t];
    __syncthreads();
    out[base + t] = buf[blockDim.x - 1 - t];
}

struct Affine { float scale; float shift; int n; };
__global__ void affine(Affine p, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = p.scale * x[i] + p.shift;
}

__global__ void vec4_scale(const float* x, float* y, int n4, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        v.x *= s; v.y *= s; v.z *= s; v.w *= s;
        reinterpret_cast<float4*>(y)[i] = v;
    }
}

__global__ void half_ops(const __half* x, __half* y, __half a, __nv_bfloat16* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = __hfma(a, x[i], y[i]);
        b[i] = __float2bfloat16(__half2float(x[i]) * 2.0f);
    }
}

__global__ void math_funcs(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    float* o = out + 8 * i;
    o[0] = __expf(v); o[1] = rsqrtf(v + 1.0f); o[2] = __fdividef(v, 3.0f); o[3] = __sinf(v);
    o[4] = fmaf(v, v, 1.0f); o[5] = __saturatef(v - 0.5f); o[6] = tanhf(v); o[7] = max(v, 0.25f) + min(2, 3);
}

__global__ void int_funcs(const unsigned* x, const unsigned* y, unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned a = x[i], b = y[i];
    unsigned* o = out + 8 * i;
    o[0] = __popc(a); o[1] = __clz((int)a); o[2] = __ffs((int)a); o[3] = __brev(a);
    o[4] = __umulhi(a, b); o[5] = __byte_perm(a, b, 0x5140); o[6] = __funnelshift_l(a, b, b & 31);
    o[7] = __popcll(((unsigned long long)a << 32) | b);
}

__global__ void atomics(const int* v, int n, int* iacc, unsigned* uacc, unsigned long long* ull, float* facc,
                        double* dacc, int* imin, int* imax, unsigned* bits, unsigned* wrap, int* cas_max) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = v[i];
    atomicAdd(iacc, x);
    atomicSub(uacc, 1u);
    atomicAdd(ull, (unsigned long long)(x & 0xff) << 32);
    atomicAdd(facc, 0.5f * x);
    atomicAdd(dacc, 0.25 * x);
    atomicMin(imin, x);
    atomicMax(imax, x);
    atomicOr(bits, 1u << (x & 31));
    atomicXor(bits + 1, (unsigned)x);
    atomicAnd(bits + 2, ~(1u << (i & 31)));
    atomicInc(wrap, 6u);
    int old = *cas_max, assumed;
    do { assumed = old; old = atomicCAS(cas_max, assumed, assumed > x ? assumed : x); } while (old != assumed);
}

__global__ void warp_ops(const int* x, int* out) {
    int tid = threadIdx.x, lane = tid & 31, N = blockDim.x;
    int v = x[tid];
    out[0 * N + tid] = __shfl_sync(0xffffffff, v, lane ^ 3);
    out[1 * N + tid] = __shfl_up_sync(0xffffffff, v, 1);
    out[2 * N + tid] = __shfl_down_sync(0xffffffff, v, 2);
    out[3 * N + tid] = __shfl_xor_sync(0xffffffff, v, 5);
    out[4 * N + tid] = __shfl_down_sync(0xffffffff, v, 1, 8);
    out[5 * N + tid] = (int)__ballot_sync(0xffffffff, v > 0);
    out[6 * N + tid] = __any_sync(0xffffffff, v > 900) + 2 * __all_sync(0xffffffff, v > -1000);
    out[7 * N + tid] = (int)__match_any_sync(0xffffffff, v & 3);
    out[8 * N + tid] = __reduce_add_sync(0xffffffff, v);
    double d = __shfl_sync(0xffffffff, (double)v * 0.5, 31 - lane);
    out[9 * N + tid] = (int)(d * 2.0);
}

__global__ void cg_reduce(const float* x, float* out, int* count_pos) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    float v = x[blockIdx.x * blockDim.x + block.thread_rank()];
    float s = cg::reduce(tile, v, cg::plus<float>());
    __shared__ float partial[32];
    if (tile.thread_rank() == 0) partial[tile.meta_group_rank()] = s;
    block.sync();
    int positives = __syncthreads_count(v > 0.0f);
    if (block.thread_rank() == 0) {
        float t = 0;
        for (unsigned w = 0; w < tile.meta_group_size(); ++w) t += partial[w];
        out[blockIdx.x] = t;
        count_pos[blockIdx.x] = positives;
    }
}

__global__ void hello(int tag) {
    if (threadIdx.x < 2) printf("hello from thread %d block %d tag %d\n", threadIdx.x, blockIdx.x, tag);
}
"""


@pytest.fixture(scope="module")
def mod(compile_cu):
    return compile_cu(SOURCE)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def test_saxpy_random(mod, rng):
    n = 1000 + int(rng.integers(0, 100))
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    expect = np.float32(1.75) * x + y
    res = mod.launch("saxpy", (n + 127) // 128, 128, [n, 1.75, x, y])
    np.testing.assert_allclose(y, expect, rtol=1e-6)
    assert res.kernel == "saxpy" and res.seconds >= 0


def test_3d_grid_and_block_indices(mod):
    grid, block = (3, 2, 2), (4, 2, 3)
    nthreads = 4 * 2 * 3
    out = np.zeros(3 * 2 * 2 * nthreads, np.int32)
    mod.launch("index3d", grid, block, [out])
    expect = []
    for bz in range(2):
        for by in range(2):
            for bx in range(3):
                for tz in range(3):
                    for ty in range(2):
                        for tx in range(4):
                            expect.append(tx + 10 * ty + 100 * tz + 1000 * bx + 10000 * by + 100000 * bz)
    np.testing.assert_array_equal(out, np.array(expect, np.int32))


@pytest.mark.parametrize(
    ("name", "dtype"), [("block_sum<256, float>", np.float32), ("block_sum<64,double>", np.float64)]
)
def test_template_instantiation_by_name(mod, rng, name, dtype):
    b = int(name.split("<")[1].split(",")[0])
    x = rng.standard_normal(b * 7).astype(dtype)
    out = np.zeros(7, dtype)
    mod.launch(name, 7, b, [x, out])
    np.testing.assert_allclose(out, x.reshape(7, b).sum(axis=1), rtol=1e-4)


def test_dynamic_shared_memory(mod, rng):
    x = rng.integers(-1000, 1000, 5 * 96).astype(np.int32)
    out = np.zeros_like(x)
    mod.launch("reverse_blocks", 5, 96, [x, out], shared_mem=96 * 4)
    np.testing.assert_array_equal(out, x.reshape(5, 96)[:, ::-1].reshape(-1))


def test_struct_by_value_as_ctypes_and_numpy(mod, rng):
    class Affine(ctypes.Structure):
        _fields_ = [("scale", ctypes.c_float), ("shift", ctypes.c_float), ("n", ctypes.c_int)]

    x = rng.standard_normal(300).astype(np.float32)
    y = np.zeros_like(x)
    mod.launch("affine", 3, 128, [Affine(2.0, -1.0, 300), x, y])
    np.testing.assert_allclose(y, 2 * x - 1, rtol=1e-6)
    rec = np.array((0.5, 3.0, 100), dtype=[("scale", "<f4"), ("shift", "<f4"), ("n", "<i4")])
    y2 = np.zeros_like(x)
    mod.launch("affine", 3, 128, [rec, x, y2])
    np.testing.assert_allclose(y2[:100], 0.5 * x[:100] + 3, rtol=1e-6)
    assert np.all(y2[100:] == 0)


def test_float4_reinterpret_cast(mod, rng):
    x = rng.standard_normal(4 * 77).astype(np.float32)
    y = np.zeros_like(x)
    mod.launch("vec4_scale", 1, 128, [x, y, 77, -3.0])
    np.testing.assert_allclose(y, -3 * x, rtol=1e-6)


def test_half_and_bfloat16(mod, rng):
    n = 200
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float16)
    b = np.zeros(n, np.uint16)
    expect = (np.float32(1.5) * x.astype(np.float32) + y.astype(np.float32)).astype(np.float16)
    mod.launch("half_ops", 2, 128, [x, y, 1.5, b, n])
    np.testing.assert_allclose(y.astype(np.float32), expect.astype(np.float32), rtol=2e-3, atol=2e-3)
    as_float = (b.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_allclose(as_float, 2 * x.astype(np.float32), rtol=1e-2)


def test_math_intrinsics(mod, rng):
    n = 257
    x = rng.uniform(0.0, 2.0, n).astype(np.float32)
    out = np.zeros(8 * n, np.float32)
    mod.launch("math_funcs", 3, 128, [x, out, n])
    o = out.reshape(n, 8).astype(np.float64)
    xd = x.astype(np.float64)
    ref = np.stack([np.exp(xd), 1 / np.sqrt(xd + 1), xd / 3, np.sin(xd), xd * xd + 1, np.clip(xd - 0.5, 0, 1),
                    np.tanh(xd), np.maximum(xd, 0.25) + 2], axis=1)
    np.testing.assert_allclose(o, ref, rtol=2e-6, atol=1e-6)


def _brev(v: int) -> int:
    return int(f"{v:032b}"[::-1], 2)


def test_integer_intrinsics(mod, rng):
    n = 64
    x = rng.integers(1, 2**32, n, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(8 * n, np.uint32)
    mod.launch("int_funcs", 1, 64, [x, y, out, n])
    o = out.reshape(n, 8)
    for i in range(n):
        a, b = int(x[i]), int(y[i])
        perm_src = a | (b << 32)
        perm = sum(((perm_src >> (8 * ((0x5140 >> (4 * k)) & 7))) & 0xFF) << (8 * k) for k in range(4))
        funnel = ((((b << 32) | a) << (b & 31)) >> 32) & 0xFFFFFFFF
        expect = [bin(a).count("1"), 32 - a.bit_length(), (a & -a).bit_length(), _brev(a), (a * b) >> 32, perm,
                  funnel, bin((a << 32) | b).count("1")]
        assert list(o[i]) == expect, (i, a, b)


def test_atomics_all_kinds(mod, rng):
    n = 3000
    v = rng.integers(-500, 500, n).astype(np.int32)
    iacc = np.zeros(1, np.int32)
    uacc = np.array([n + 7], np.uint32)
    ull = np.zeros(1, np.uint64)
    facc = np.zeros(1, np.float32)
    dacc = np.zeros(1, np.float64)
    imin = np.array([10**6], np.int32)
    imax = np.array([-(10**6)], np.int32)
    bits = np.array([0, 0, 0xFFFFFFFF], np.uint32)
    wrap = np.zeros(1, np.uint32)
    cas_max = np.array([-(10**6)], np.int32)
    mod.launch("atomics", (n + 255) // 256, 256, [v, n, iacc, uacc, ull, facc, dacc, imin, imax, bits, wrap, cas_max])
    assert iacc[0] == v.sum()
    assert uacc[0] == 7
    assert ull[0] == sum((int(x) & 0xFF) << 32 for x in v)
    assert facc[0] == pytest.approx(0.5 * v.sum(), rel=1e-5, abs=1e-2)
    assert dacc[0] == pytest.approx(0.25 * v.sum())
    assert imin[0] == v.min() and imax[0] == v.max() and cas_max[0] == v.max()
    assert bits[0] == np.bitwise_or.reduce(np.uint32(1) << (v.astype(np.uint32) & 31))
    assert bits[1] == np.bitwise_xor.reduce(v.astype(np.uint32))
    assert bits[2] == 0  # every bit cleared by some thread
    assert wrap[0] == n % 7  # atomicInc wraps to 0 after 6


def test_warp_collectives(mod, rng):
    nt = 64
    x = rng.integers(-1000, 1000, nt).astype(np.int32)
    out = np.zeros(10 * nt, np.int32)
    mod.launch("warp_ops", 1, nt, [x, out])
    o = out.reshape(10, nt)
    tid = np.arange(nt)
    lane, base = tid & 31, tid & ~31
    np.testing.assert_array_equal(o[0], x[base + (lane ^ 3)])
    np.testing.assert_array_equal(o[1], np.where(lane >= 1, x[np.maximum(tid - 1, 0)], x))
    np.testing.assert_array_equal(o[2], np.where(lane + 2 < 32, x[np.minimum(tid + 2, nt - 1)], x))
    np.testing.assert_array_equal(o[3], x[base + (lane ^ 5)])
    seg = lane & ~7
    np.testing.assert_array_equal(o[4], np.where(lane + 1 < seg + 8, x[np.minimum(tid + 1, nt - 1)], x))
    for w in range(2):
        xs = x[32 * w : 32 * w + 32]
        ballot = sum(1 << i for i in range(32) if xs[i] > 0)
        assert np.all(o[5, 32 * w : 32 * w + 32].view(np.uint32) == ballot)
        assert np.all(o[6, 32 * w : 32 * w + 32] == int(np.any(xs > 900)) + 2)
        for i in range(32):
            expect = sum(1 << k for k in range(32) if (xs[k] & 3) == (xs[i] & 3))
            assert int(o[7, 32 * w + i]) & 0xFFFFFFFF == expect
        assert np.all(o[8, 32 * w : 32 * w + 32] == xs.sum())
        np.testing.assert_array_equal(o[9, 32 * w : 32 * w + 32], xs[::-1])


def test_cooperative_groups_reduce_and_syncthreads_count(mod, rng):
    x = rng.standard_normal(4 * 128).astype(np.float32)
    out = np.zeros(4, np.float32)
    cnt = np.zeros(4, np.int32)
    mod.launch("cg_reduce", 4, 128, [x, out, cnt])
    np.testing.assert_allclose(out, x.reshape(4, 128).sum(1), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(cnt, (x.reshape(4, 128) > 0).sum(1))


def test_device_printf_is_captured(mod):
    res = mod.launch("hello", 2, 32, [7])
    lines = sorted(res.stdout.splitlines())
    assert lines == sorted(f"hello from thread {t} block {b} tag 7" for t in range(2) for b in range(2))


def test_same_array_twice_aliases_and_const_is_not_written(mod, rng):
    x = rng.standard_normal(64).astype(np.float32)
    before = x.copy()
    mod.launch("saxpy", 1, 64, [64, 2.0, x, x])  # y = 2x + y with x and y the same buffer
    np.testing.assert_allclose(x, 3 * before, rtol=1e-6)
    ro = rng.standard_normal(64).astype(np.float32)
    ro.flags.writeable = False
    y = np.zeros(64, np.float32)
    mod.launch("saxpy", 1, 64, [64, 1.0, ro, y])  # read-only input through a const pointer is fine
    np.testing.assert_allclose(y, ro)


def test_kernel_table_reports_signatures(mod):
    info = mod.kernels["saxpy"]
    assert [p.type for p in info.params] == ["int", "float", "const float*", "float*"]
    assert info.signature == "saxpy(int, float, const float*, float*)"
    assert "block_sum" in mod.template_kernels


def test_many_launches_are_cheap(mod):
    x = np.ones(256, np.float32)
    y = np.zeros(256, np.float32)
    import time

    t0 = time.perf_counter()
    for _ in range(50):
        mod.launch("saxpy", 1, 256, [256, 1.0, x, y])
    per_launch = (time.perf_counter() - t0) / 50
    assert np.all(y == 50)
    assert per_launch < 0.02  # a few ms at most: the server process is reused


def test_cpu_package_exports_public_api():
    from veriforge import errors

    assert issubclass(cpu.CompileError, errors.CompileError)
    assert cpu.LaunchError is errors.LaunchError and cpu.KernelFault is errors.KernelFault
    for name in ("compile", "run_program", "Module", "RaceReport", "LaunchError", "KernelFault",
                 "KernelTimeoutError", "UnsupportedFeatureError", "ProgramResult"):
        assert hasattr(cpu, name)
