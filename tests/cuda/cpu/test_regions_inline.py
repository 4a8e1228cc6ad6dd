"""Region splitting through synchronising device functions (region_inline.py) and through
``volatile`` warp-synchronous code (block-wide lockstep, regions.py).

Every kernel here is checked three ways: the pass splits it (``plan_kernels``), it really runs as a
block function (the region module's kernel server runs with ``VF_REGIONS=require``: a block that
runs on fibers is a fault, and so is a barrier or lockstep access reached inside region
execution), and its results equal the fiber path's (``VF_REGIONS=0``) and the expected numbers.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.cuda.cpu.regions import plan_kernels
from veriforge.cuda.cpu.source import rewrite, scan

KERNELS = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// ---- synchronising device functions, three levels deep ---------------------------------------
__device__ float warp_total(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}

template <int Warps>
__device__ float block_total(float v, cg::thread_block block) {
    __shared__ float partial[Warps];           // once per block, however often it is called
    float w = warp_total(v);                   // a call in a declaration
    if (block.thread_rank() % 32 == 0) partial[block.thread_rank() / 32] = w;
    block.sync();
    float sum = 0.f;
    for (int i = 0; i < Warps; ++i) sum += partial[i];
    block.sync();                              // partial is reused by the next call
    return sum;
}

__device__ float block_mean(float v, cg::thread_block g, int n) {
    return block_total<4>(v, g) / n;           // a call in a return expression
}

template <typename T>
__device__ void divide_by_max(T& x, T* scratch) {   // T deduced; x is the caller's variable
    scratch[threadIdx.x] = x;
    __syncthreads();
    T m = scratch[0];
    for (int i = 1; i < blockDim.x; ++i) m = scratch[i] > m ? scratch[i] : m;
    __syncthreads();
    x = x / m;
}

__global__ void standardise(const float* in, float* out, float* stats) {
    cg::thread_block block = cg::this_thread_block();
    __shared__ float scratch[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    float mean = block_mean(v, block, blockDim.x);
    float d = v - mean, var;
    var = block_total<4>(d * d, block) / blockDim.x;            // a call in an assignment
    float both = block_total<4>(1.f, block) + block_total<4>(v, block);
    float s = d * d;
    divide_by_max(s, scratch);
    out[i] = s;
    if (threadIdx.x == 0) {
        stats[3 * blockIdx.x] = mean;
        stats[3 * blockIdx.x + 1] = var;
        stats[3 * blockIdx.x + 2] = both;
    }
}

// Calls nested in a call's arguments run first; thread 0 logs each call between barriers.
__device__ int stamp(int* log, int tag) {
    __syncthreads();
    if (threadIdx.x == 0) log[1 + log[0]++] = tag;
    __syncthreads();
    return tag;
}

__global__ void nested_calls(int* log, int* out) {
    int r = stamp(log, stamp(log, 2) + 1) * 10;
    if (stamp(log, 4) == 4) r += threadIdx.x;                   // a call in an if condition
    out[threadIdx.x] = r;
}

// An early return before warp-synchronous code only (no barrier after it): the lanes that
// return take no part in the scan.
__device__ int prefix_below(volatile int* s, int lane, int limit) {
    if (lane >= limit) return -1;
    for (int d = 1; d < 32; d <<= 1)
        if (lane >= d) s[lane] += s[lane - d];
    return s[lane];
}

__global__ void early_prefix(const int* in, int* out, int limit) {
    __shared__ int s[64];
    int lane = threadIdx.x & 31, w = threadIdx.x / 32;
    s[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
    __syncwarp();
    out[blockIdx.x * blockDim.x + threadIdx.x] = prefix_below(s + 32 * w, lane, limit);
}

// ---- volatile warp-synchronous code ------------------------------------------------------------
// The classic reduction: tree levels with barriers, then the last warp without any.
template <unsigned blockSize>
__device__ void warp_reduce(volatile int* sdata, unsigned tid) {
    if (blockSize >= 64) sdata[tid] += sdata[tid + 32];
    if (blockSize >= 32) sdata[tid] += sdata[tid + 16];
    if (blockSize >= 16) sdata[tid] += sdata[tid + 8];
    if (blockSize >= 8) sdata[tid] += sdata[tid + 4];
    if (blockSize >= 4) sdata[tid] += sdata[tid + 2];
    if (blockSize >= 2) sdata[tid] += sdata[tid + 1];
}

template <unsigned blockSize>
__global__ void reduce_volatile(const int* in, int* out, unsigned n) {
    __shared__ int sdata[blockSize];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (blockSize * 2) + tid;
    unsigned stride = blockSize * 2 * gridDim.x;
    int sum = 0;
    while (i < n) {
        sum += in[i];
        if (i + blockSize < n) sum += in[i + blockSize];
        i += stride;
    }
    sdata[tid] = sum;
    __syncthreads();
    if (blockSize >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
    if (blockSize >= 128) { if (tid < 64) sdata[tid] += sdata[tid + 64]; __syncthreads(); }
    if (tid < 32) warp_reduce<blockSize>(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// Hillis-Steele scan of each warp, in place through a volatile parameter: every lane must read its
// neighbour's value from before the neighbour's own update of the same step.
__global__ void warp_scan_param(volatile int* data) {
    int lane = threadIdx.x & 31, i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int d = 1; d < 32; d <<= 1)
        if (lane >= d) data[i] += data[i - d];
}

// The same unrolled, through a volatile view of shared memory with 32 zeros before each warp's
// values (no lane skips a statement), then a shift: every lane reads its old left neighbour.
__global__ void warp_scan_padded(const int* in, int* out, int* shifted) {
    __shared__ int s[4][64];
    int lane = threadIdx.x & 31, w = threadIdx.x / 32, i = blockIdx.x * blockDim.x + threadIdx.x;
    volatile int* vs = s[w] + 32;
    vs[lane - 32] = 0;
    vs[lane] = in[i];
    vs[lane] += vs[lane - 1];
    vs[lane] = vs[lane] + vs[lane - 2];
    vs[lane] += vs[lane - 4];
    vs[lane] += vs[lane - 8];
    vs[lane] += vs[lane - 16];
    out[i] = vs[lane];
    vs[lane] = vs[lane - 1];
    shifted[i] = vs[lane];
}

// Lanes that skip statements (`if (lane >= d)`), then more volatile accesses: block-wide lockstep
// still gives the hardware's answer. (The fibers' rendezvous counts accesses, so lanes at
// different statements meet each other there and the answer differs: no comparison with them.)
__global__ void warp_scan_divergent(const int* in, int* out, int* shifted) {
    __shared__ int s[128];
    int lane = threadIdx.x & 31, i = threadIdx.x;
    s[i] = in[blockIdx.x * blockDim.x + i];
    __syncthreads();
    volatile int* vs = s;
    if (lane >= 1) vs[i] += vs[i - 1];
    if (lane >= 2) vs[i] += vs[i - 2];
    if (lane >= 4) vs[i] += vs[i - 4];
    if (lane >= 8) vs[i] += vs[i - 8];
    if (lane >= 16) vs[i] += vs[i - 16];
    out[blockIdx.x * blockDim.x + i] = vs[i];
    if (lane < 31) vs[i] = vs[i + 1];
    shifted[blockIdx.x * blockDim.x + i] = vs[i];
}

// A fault inside an inlined function names the function's own line.
__device__ void check_positive(const float* s) {
    __syncthreads();
    assert(s[threadIdx.x] >= 0.f);
}

__global__ void checked(const float* x) {
    __shared__ float s[32];
    s[threadIdx.x] = x[threadIdx.x];
    check_positive(s);
}
"""

SPLIT = ["standardise", "nested_calls", "early_prefix", "reduce_volatile", "warp_scan_param", "warp_scan_padded",
         "warp_scan_divergent", "checked"]


@pytest.fixture(scope="module")
def mods(compile_cu):
    """(region module, fiber module) of KERNELS: the same executable twice, the first one's kernel
    server started with VF_REGIONS=require, the second's with VF_REGIONS=0."""
    return compile_cu(KERNELS), compile_cu(KERNELS)


def _launch(mod, regions: str, kernel, grid, block, args, shared=0):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VF_REGIONS", regions)
        mod.launch(kernel, grid, block, args, shared)


def _run(mods, kernel, grid, block, make_args, shared=0):
    """Launch as a block function (required) and on fibers: every output array must agree exactly."""
    region_mod, fiber_mod = mods
    a = make_args()
    _launch(region_mod, "require", kernel, grid, block, a, shared)
    b = make_args()
    _launch(fiber_mod, "0", kernel, grid, block, b, shared)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
    return a


def test_every_kernel_splits_with_its_functions_inlined():
    plans = {p.name: p for p in plan_kernels(KERNELS)}
    for name in SPLIT:
        assert plans[name].split, (name, plans[name].reason)
    # nested functions inlined innermost first, every call its own copy
    assert plans["standardise"].inlined == ["warp_total", "block_total", "block_mean", "warp_total", "block_total",
                                            "warp_total", "block_total", "warp_total", "block_total",
                                            "divide_by_max"]
    assert plans["nested_calls"].inlined == ["stamp"] * 3
    # six `s[t] += s[t + k]`, each a load of both and then a store: 18 accesses in lockstep
    assert plans["reduce_volatile"].inlined == ["warp_reduce"] and plans["reduce_volatile"].lockstep == 18
    assert plans["warp_scan_param"].lockstep == 3 and plans["warp_scan_padded"].lockstep > 10
    # the volatile parameter is a LockstepPtr on the fiber path: region code takes its plain pointer
    assert "::vf::lockstep_raw(data)" in plans["warp_scan_param"].code
    # `vs[lane] = vs[lane - 1]`: every thread's load into a temporary in one region, the stores in the next
    code = plans["warp_scan_padded"].code
    m = re.search(r"int (vf_val\d+) = vs\[lane - 1\];", code)
    assert m and "region_loop_plain" in code[m.end():code.index(f"vs[lane] = {m.group(1)};")]
    assert plans["early_prefix"].inlined == ["prefix_below"] and plans["early_prefix"].lockstep > 0
    code = plans["standardise"].code
    # the function's __shared__ array is declared once, at the top of the block function
    assert len(re.findall(r"__shared__ float partial_vfs\d+\[", code)) == 1
    assert re.search(r"\bfloat\s*\*\s*scratch_vf\d+ = scratch;", code)      # T deduced from the argument
    assert "cg::sync" not in code and "block_total" not in code             # nothing left to call
    # the fiber path below keeps the user's calls
    assert "block_mean(v, block, blockDim.x)" in rewrite(scan(KERNELS))


def test_inlined_code_keeps_the_functions_line_numbers():
    code = {p.name: p for p in plan_kernels(KERNELS)}["standardise"].code
    lines = KERNELS.split("\n")
    want = next(n for n, ln in enumerate(lines, 1) if "if (block.thread_rank() % 32 == 0)" in ln)
    assert f"#line {want}\nif (block.thread_rank() % 32 == 0)" in code
    spans = re.findall(r"// vf-regions: lines (\d+)-(\d+)", code)
    first = next(n for n, ln in enumerate(lines, 1) if ln.startswith("__device__ float warp_total"))
    assert (str(first), str(first + 3)) in spans  # the inlined function's lines belong to the kernel


def test_multi_level_functions_calls_in_expressions_and_templates(mods):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(3 * 128).astype(np.float32)
    out, stats = _run(mods, "standardise", 3, 128,
                      lambda: [x, np.zeros_like(x), np.zeros(9, np.float32)])[1:]
    blocks = x.reshape(3, 128).astype(np.float64)
    mean = blocks.mean(axis=1)
    d2 = (blocks - mean[:, None]) ** 2
    np.testing.assert_allclose(stats[0::3], mean, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(stats[1::3], d2.mean(axis=1), rtol=1e-4)
    np.testing.assert_allclose(stats[2::3], 128 + blocks.sum(axis=1), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(out.reshape(3, 128), d2 / d2.max(axis=1, keepdims=True), rtol=1e-3, atol=1e-5)


def test_calls_in_arguments_and_conditions_run_in_order(mods):
    log, out = _run(mods, "nested_calls", 1, 64, lambda: [np.zeros(8, np.int32), np.zeros(64, np.int32)])
    np.testing.assert_array_equal(log[:4], [3, 2, 3, 4])
    np.testing.assert_array_equal(out, 30 + np.arange(64))


@pytest.mark.parametrize("limit", [32, 20, 0])
def test_early_return_before_warp_synchronous_code(mods, limit):
    x = (np.arange(128) % 7).astype(np.int32)
    out = _run(mods, "early_prefix", 2, 64, lambda: [x, np.zeros(128, np.int32), limit])[1]
    warps = x.reshape(4, 32)
    want = np.where(np.arange(32) < limit, np.cumsum(warps, axis=1), -1).ravel()
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("block", [32, 64, 128, 256])
def test_classic_volatile_warp_reduce(mods, block):
    x = (np.arange(10000) % 97 - 40).astype(np.int32)
    out = _run(mods, f"reduce_volatile<{block}>", 5, block, lambda: [x, np.zeros(5, np.int32), x.size])[1]
    assert out.sum() == x.sum()
    per_block = np.zeros(5, np.int64)  # each block's own elements (grid-stride, two per step)
    for b in range(5):
        idx = np.concatenate([np.arange(b * 2 * block + t, x.size, 2 * block * 5) for t in range(2 * block)])
        per_block[b] = x[idx].sum()
    np.testing.assert_array_equal(out, per_block)


def test_volatile_hillis_steele_scan_through_a_parameter(mods):
    d = (np.arange(256) * 7 % 11).astype(np.int32)
    got = _run(mods, "warp_scan_param", 2, 128, lambda: [d.copy()])[0]
    np.testing.assert_array_equal(got, np.cumsum(d.reshape(8, 32), axis=1).ravel())


def test_volatile_hillis_steele_scan_and_shift_in_shared_memory(mods):
    x = (np.arange(256) * 5 % 13 - 6).astype(np.int32)
    out, shifted = _run(mods, "warp_scan_padded", 2, 128,
                        lambda: [x, np.zeros(256, np.int32), np.zeros(256, np.int32)])[1:]
    scan_ = np.cumsum(x.reshape(8, 32), axis=1)
    np.testing.assert_array_equal(out, scan_.ravel())
    np.testing.assert_array_equal(shifted, np.concatenate([np.zeros((8, 1), int), scan_[:, :31]], axis=1).ravel())


def test_volatile_scan_with_lanes_that_skip_statements(mods):
    region_mod, _ = mods
    x = (np.arange(256) * 5 % 13 - 6).astype(np.int32)
    out, shifted = np.zeros(256, np.int32), np.zeros(256, np.int32)
    _launch(region_mod, "require", "warp_scan_divergent", 2, 128, [x, out, shifted])
    scan_ = np.cumsum(x.reshape(8, 32), axis=1)
    np.testing.assert_array_equal(out, scan_.ravel())
    np.testing.assert_array_equal(shifted, np.concatenate([scan_[:, 1:], scan_[:, 31:]], axis=1).ravel())


def test_a_fault_in_an_inlined_function_names_its_line(mods):
    region_mod, _ = mods
    line = next(n for n, ln in enumerate(KERNELS.split("\n"), 1) if "assert(s[threadIdx.x] >= 0.f)" in ln)
    x = np.ones(32, np.float32)
    _launch(region_mod, "require", "checked", 1, 32, [x])
    x[7] = -1
    want = rf"kernel.cu:{line}: .*thread: \[7,0,0\] Assertion `s\w*\[threadIdx.x\] >= 0.f`"
    with pytest.raises(cpu.KernelFault, match=want):
        _launch(region_mod, "require", "checked", 1, 32, [x])


def test_require_mode_reports_a_block_that_ran_on_fibers(compile_cu):
    # the check the tests above rely on: a kernel the pass leaves on fibers fails under require
    src = r"""
__global__ void fibers_only(int* x) {
    if (threadIdx.x < 8) { x[threadIdx.x] += 1; __syncthreads(); }
}
"""
    assert not plan_kernels(src)[0].split
    mod = compile_cu(src)
    with pytest.raises(cpu.KernelFault, match=r"ran on fibers, not as a block function"):
        _launch(mod, "require", "fibers_only", 1, 8, [np.zeros(8, np.int32)])


# ---- what keeps the fiber path ------------------------------------------------------------------

REFUSED = [
    ("early return before a barrier", r"""
__device__ float guarded(float* s, float v, int n) {
    if (threadIdx.x >= n) return 0.f;
    s[threadIdx.x] = v;
    __syncthreads();
    return s[0] + s[1];
}
__global__ void k(float* x, int n) { __shared__ float s[64]; x[threadIdx.x] = guarded(s, x[threadIdx.x], n); }
""", r"a return in guarded\(\) before a __syncthreads\(\)"),
    ("recursion through two functions", r"""
__device__ void pong(float* s, int d);
__device__ void ping(float* s, int d) { __syncthreads(); if (d > 0) pong(s, d - 1); }
__device__ void pong(float* s, int d) { __syncthreads(); if (d > 0) ping(s, d - 1); }
__global__ void k(float* s) { ping(s, 3); }
""", r"ping\(\) is recursive"),
    ("function pointer", r"""
__device__ void wait_all(float* s) { __syncthreads(); s[threadIdx.x] += 1.f; }
__global__ void k(float* s) { void (*f)(float*) = wait_all; f(s); __syncthreads(); }
""", r"wait_all\(\).*other than by calling it"),
    ("overloads", r"""
__device__ float total(float v) { __syncthreads(); return v; }
__device__ int total(int v) { __syncthreads(); return v; }
__global__ void k(float* x) { x[threadIdx.x] = total(x[threadIdx.x]); }
""", r"total\(\), which synchronises and is overloaded"),
    ("name capture", r"""
__device__ float scale;
__device__ float times(float v) { __syncthreads(); return v * scale; }
__global__ void k(float* x) { float scale = 2.f; x[threadIdx.x] = times(x[threadIdx.x]) * scale; }
""", r"times\(\) uses 'scale', which the calling kernel declares too"),
    ("call under ?:", r"""
__device__ float synced(float v) { __syncthreads(); return v; }
__global__ void k(float* x, int c) { x[threadIdx.x] = c ? synced(x[threadIdx.x]) : 0.f; }
""", r"synced\(\), which synchronises, under \?:"),
    ("call in a loop condition", r"""
__device__ int synced(int v) { __syncthreads(); return v; }
__global__ void k(int* x) { while (synced(x[0]) > 0) x[0]--; }
""", r"loop or switch header"),
    ("volatile access in a thread-dependent loop", r"""
__global__ void k(volatile int* s, const int* n) {
    for (int i = 0; i < n[threadIdx.x]; ++i) s[threadIdx.x] += s[threadIdx.x + 1];
    __syncthreads();
}
""", r"volatile access in a loop whose trip count depends on the thread"),
    ("two volatile stores in one statement", r"""
__global__ void k(volatile int* s) { s[threadIdx.x] = s[threadIdx.x + 32] = 1; __syncthreads(); }
""", r"two stores through volatile pointers in one statement"),
]


@pytest.mark.parametrize(("what", "src", "why"), REFUSED, ids=[r[0] for r in REFUSED])
def test_what_the_pass_cannot_inline_or_order_keeps_fibers(what, src, why):
    p = next(p for p in plan_kernels(src) if p.name == "k")
    assert p.needs_split and not p.split
    assert re.search(why, p.reason), p.reason
    assert "region_begin" not in rewrite(scan(src))


def test_refused_kernels_still_run_on_fibers(compile_cu):
    src = REFUSED[0][1]
    mod = compile_cu(src)
    x = np.arange(64, dtype=np.float32)
    mod.launch("k", 1, 64, [x, 64])  # every thread reaches the barrier: fine on fibers
    np.testing.assert_array_equal(x, np.full(64, 1.0, np.float32))
