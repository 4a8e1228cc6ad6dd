"""Region splitting (veriforge.cuda.cpu.regions): kernels with barriers and warp collectives run as
loops over the block's threads instead of one fiber per thread.

Two kinds of tests: the pass's decisions (which kernels split, what their variables become, which
fall back to fibers and why), and real g++ builds whose results with region execution (the
default) equal those of the fiber path (``VF_REGIONS=0`` for the module's kernel server) and the
expected values - including divergent-but-legal patterns and kernels that must fall back.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.cuda.cpu.regions import RegionContext, plan_kernels
from veriforge.cuda.cpu.source import rewrite, scan


def _plan(src: str, name: str, context: RegionContext | None = None):
    plans = {p.name: p for p in plan_kernels(src, context)}
    return plans[name]


# ---- which kernels split, and what their variables become ---------------------------------------

TREE = r"""
__global__ void tree(const float* x, float* partial, int n) {
    __shared__ float s[256];
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < (unsigned)n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
"""


def test_tree_reduction_splits_with_a_uniform_loop_and_recomputed_indices():
    p = _plan(TREE, "tree")
    assert p.split and not p.reason
    assert p.uniform == ["k"]               # the loop runs once per block, as plain C++
    assert sorted(p.recomputed) == ["i", "t"]  # threadIdx.x and blockIdx arithmetic: recomputed
    assert p.slots == []                     # nothing needs a per-thread array
    assert "region_range" in p.code          # `if (t < k)` only visits threads [0, k)


def test_accumulator_across_barriers_gets_a_per_thread_slot():
    src = r"""
#define TILE 16
__global__ void mm(const float* A, const float* B, float* C, int n) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n / TILE; ++t) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t * TILE + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}
"""
    p = _plan(src, "mm")
    assert p.split and p.slots == ["acc"] and p.uniform == ["t"]
    assert sorted(p.recomputed) == ["col", "row"]


def test_barrier_free_kernels_run_as_one_region():
    src = "__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n"
    p = _plan(src, "k")
    assert not p.needs_split and p.split and p.regions == 1
    assert "region_loop" in rewrite(scan(src))
    # ... unless a spin-wait may wait for another thread of the block (fibers let it run)
    spin = "__global__ void k(int* f) { long long t = clock64(); while (f[0] == 0 && clock64() - t < 100) {} }\n"
    p = _plan(spin, "k")
    assert not p.split and "clock" in p.reason


def test_race_probe_build_and_the_switch_keep_the_fiber_path(monkeypatch):
    assert "region_begin" in rewrite(scan(TREE))
    assert "region_begin" not in rewrite(scan(TREE), probe=True)
    monkeypatch.setenv("VERIFORGE_CPU_REGIONS", "0")
    assert "region_begin" not in rewrite(scan(TREE))


def test_block_function_keeps_the_users_line_numbers():
    out = rewrite(scan(TREE))
    assert out.count("\n") > TREE.count("\n")  # the block function is there ...
    # ... and every original line still sits where the #line directives say it is
    current = 1  # the line number the compiler gives the next physical line
    placed: dict[str, set[int]] = {}
    for ln in out.split("\n"):
        m = re.match(r"#line (\d+)", ln)
        if m:
            current = int(m.group(1))
            continue
        placed.setdefault(ln.strip(), set()).add(current)
        current += 1
    original = TREE.split("\n")
    for number, ln in enumerate(original, 1):
        if ln.strip() and sum(x.strip() == ln.strip() for x in original) == 1:
            assert placed[ln.strip()] == {number}, ln


FALLBACKS = [
    ("recursive device function with a barrier", r"""
__device__ void sync_down(float* s, int d) { __syncthreads(); if (d > 0) sync_down(s, d - 1); }
__global__ void k(float* x) { __shared__ float s[64]; s[threadIdx.x] = x[threadIdx.x]; sync_down(s, 2);
    x[threadIdx.x] = s[63 - threadIdx.x]; }
""", r"sync_down\(\) is recursive"),
    ("barrier under a thread-dependent condition", r"""
__global__ void k(int* x) { if (threadIdx.x < 16) { x[threadIdx.x] = 1; __syncthreads(); } }
""", r"depends on the thread"),
    ("volatile spin-wait", r"""
__global__ void k(volatile int* s) { if (threadIdx.x == 0) s[0] = 1; while (s[0] == 0) {} __syncthreads(); }
""", r"volatile access in a loop condition"),
    ("barrier in a switch", r"""
__global__ void k(int* x, int m) { switch (m) { case 0: __syncthreads(); break; } x[threadIdx.x] = 1; }
""", r"switch"),
    ("barrier in a lambda", r"""
__global__ void k(int* x) { auto f = [&]() { __syncthreads(); }; x[threadIdx.x] = 1; f(); }
""", r"__syncthreads"),
    ("match_any", r"""
__global__ void k(int* x) { unsigned m = __match_any_sync(0xffffffff, x[threadIdx.x]); x[threadIdx.x] = m; }
""", r"__match_any_sync"),
    ("auto variable live across a barrier", r"""
__global__ void k(float* x) { __shared__ float s[64]; auto v = x[threadIdx.x]; v *= 2; s[threadIdx.x] = v;
    __syncthreads(); x[threadIdx.x] = v + s[63 - threadIdx.x]; }
""", r"type cannot be spelled"),
    ("goto", r"""
__global__ void k(int* x) { if (x[0]) goto out; __syncthreads(); out: x[threadIdx.x] = 1; }
""", r"goto"),
    ("collective under ?:", r"""
__global__ void k(int* x) { int v = x[threadIdx.x]; x[threadIdx.x] = v > 0 ? __shfl_sync(0xffffffff, v, 0) : 0; }
""", r"\?:"),
]


@pytest.mark.parametrize(("what", "src", "why"), FALLBACKS, ids=[f[0] for f in FALLBACKS])
def test_kernels_the_pass_does_not_understand_keep_fibers(what, src, why):
    p = _plan(src, "k")
    assert p.needs_split and not p.split
    assert re.search(why, p.reason), p.reason
    assert "region_begin" not in rewrite(scan(src))


def test_a_synchronising_function_in_another_file_is_seen_through_the_context():
    header = "__device__ float block_sum(float v) { __shared__ float s[32]; __syncthreads(); return v; }\n"
    src = "__global__ void k(float* x) { x[threadIdx.x] = block_sum(x[threadIdx.x]); __syncthreads(); }\n"
    assert _plan(src, "k").split  # alone, block_sum is an unknown (plain) function
    ctx = RegionContext.from_texts([header, src])
    p = _plan(src, "k", ctx)
    assert not p.split and "calls block_sum(), which synchronises" in p.reason


# ---- built programs: region execution == fiber path == expected --------------------------------

KERNELS = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void tree(const float* x, float* partial, int n) {
    __shared__ float s[256];
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < (unsigned)n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}

// Hillis-Steele scan with a uniform ping-pong index updated between barriers.
__global__ void scan_hs(const float* x, float* y, int n) {
    __shared__ float s[2][128];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t, p = 0;
    s[0][t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int d = 1; d < 128; d <<= 1) {
        s[1 - p][t] = t >= d ? s[p][t] + s[p][t - d] : s[p][t];
        p = 1 - p;
        __syncthreads();
    }
    if (i < n) y[i] = s[p][t];
}

// Template constant conditions around barriers; the thread's partial sum lives across them.
template <unsigned blockSize>
__global__ void reduce_t(const float* in, float* out, unsigned n) {
    __shared__ float sdata[blockSize];
    unsigned tid = threadIdx.x;
    float sum = 0.f;
    for (unsigned i = blockIdx.x * blockSize * 2 + tid; i < n; i += blockSize * 2 * gridDim.x) {
        sum += in[i];
        if (i + blockSize < n) sum += in[i + blockSize];
    }
    sdata[tid] = sum;
    __syncthreads();
    if (blockSize >= 256) { if (tid < 128) sdata[tid] = sum = sum + sdata[tid + 128]; __syncthreads(); }
    if (blockSize >= 128) { if (tid < 64) sdata[tid] = sum = sum + sdata[tid + 64]; __syncthreads(); }
    if (tid < 32) {
        if (blockSize >= 64) sum += sdata[tid + 32];
        for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffff, sum, offset);
    }
    if (tid == 0) out[blockIdx.x] = sum;
}

// Early return before any barrier (a partial last block): exited threads no longer take part.
__global__ void early_exit(const int* x, int* y, int n) {
    __shared__ int s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    s[threadIdx.x] = 2 * x[i];
    __syncthreads();
    int last = min((int)blockDim.x, n - (int)(blockIdx.x * blockDim.x)) - 1;
    y[i] = s[last - threadIdx.x];
}

// 2-D blocks, a per-thread register tile (array) and a parameter every thread advances.
__global__ void tile_sum(const float* a, float* out, int w) {
    __shared__ float t[8][9];
    float acc[2] = {0.f, 0.f};
    a += blockIdx.x * 64;
    for (int r = 0; r < 2; ++r) {
        t[threadIdx.y][threadIdx.x] = a[threadIdx.y * 8 + threadIdx.x] * (r + 1);
        __syncthreads();
        acc[r] = t[threadIdx.x][threadIdx.y] + t[threadIdx.y][(threadIdx.x + 1) % 8];
        __syncthreads();
    }
    out[blockIdx.x * 64 + threadIdx.y * 8 + threadIdx.x] = acc[0] * 10.f + acc[1];
}

// A parameter each thread changes differently, kept per thread across a barrier.
__global__ void param_per_thread(int* x, int k) {
    __shared__ int s[32];
    k += threadIdx.x;
    s[threadIdx.x] = k;
    __syncthreads();
    x[threadIdx.x] = s[31 - threadIdx.x] * 100 + k;
}

// __syncthreads_count / _and / _or.
__global__ void votes(const int* x, int* out) {
    int v = x[blockIdx.x * blockDim.x + threadIdx.x];
    int c = __syncthreads_count(v > 0);
    int a = __syncthreads_and(v > -5);
    int o = __syncthreads_or(v > 7);
    if (threadIdx.x == 0) { out[3 * blockIdx.x] = c; out[3 * blockIdx.x + 1] = a; out[3 * blockIdx.x + 2] = o; }
}

// Warp collectives of every kind.
__global__ void warp_ops(const int* x, int* out) {
    int lane = threadIdx.x & 31, i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    int down = __shfl_down_sync(0xffffffff, v, 3);
    int up = __shfl_up_sync(0xffffffff, v, 2, 16);
    int xr = __shfl_xor_sync(0xffffffff, v, 5);
    int idx = __shfl_sync(0xffffffff, v, (lane * 7) & 31, 8);
    unsigned b = __ballot_sync(0xffffffff, v & 1);
    int any = __any_sync(0xffffffff, v > 90), all = __all_sync(0xffffffff, v >= 0);
    int sum = __reduce_add_sync(0xffffffff, v);
    unsigned mx = __reduce_max_sync(0xffffffff, (unsigned)v);
    unsigned am = 0;
    if (lane % 3 == 0) am = __activemask();
    out[8 * i + 0] = down; out[8 * i + 1] = up; out[8 * i + 2] = xr; out[8 * i + 3] = idx;
    out[8 * i + 4] = (int)b; out[8 * i + 5] = any * 2 + all; out[8 * i + 6] = sum + (int)mx;
    out[8 * i + 7] = (int)am;
}

// Cooperative groups: block sync, a static tile's shuffles, a split loop with break.
__global__ void cg_ops(const float* x, float* out, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    __shared__ float partial[8];
    float v = 0.f;
    for (int i = block.thread_rank() + blockIdx.x * blockDim.x; i < n; i += blockDim.x * gridDim.x) v += x[i];
    for (int o = tile.size() / 2; o > 0; o /= 2) v += tile.shfl_down(v, o);
    if (tile.thread_rank() == 0) partial[block.thread_rank() / 32] = v;
    block.sync();
    if (block.thread_rank() < 32) {
        float w = block.thread_rank() < blockDim.x / 32 ? partial[block.thread_rank()] : 0.f;
        for (int o = 16; o > 0; o /= 2) {
            w += tile.shfl_xor(w, o);
            if (w > 1e30f) break;
        }
        if (block.thread_rank() == 0) out[blockIdx.x] = w;
    }
}

// A loop whose condition reads shared memory (the same for every thread): masks, checked at run time.
__global__ void shared_flag_loop(int* x, int limit) {
    __shared__ int done, round;
    if (threadIdx.x == 0) { done = 0; round = 0; }
    __syncthreads();
    while (!done) {
        x[blockIdx.x * blockDim.x + threadIdx.x] += round;
        __syncthreads();
        if (threadIdx.x == 0) { round++; done = round >= limit; }
        __syncthreads();
    }
}

// do/while, continue in a loop with collectives, and a thread-dependent trip count.
__global__ void warp_loops(const int* x, int* out) {
    int lane = threadIdx.x & 31, i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i], rounds = 0;
    do {
        v += __shfl_xor_sync(0xffffffff, v, 1) & 3;
        ++rounds;
    } while (rounds < 3);
    int acc = 0;
    for (int k = 0; k < 4 + (lane & 3); ++k) {
        if (k == 1) continue;
        acc += k * (v & 7);
    }
    for (int k = 0; k < 4; ++k) {
        int s = __shfl_down_sync(0xffffffff, acc, 1);
        if (s < 0) continue;
        acc ^= s;
    }
    out[i] = acc + rounds;
}

// Dynamic shared memory declared inside the kernel, 3-D blocks.
__global__ void dyn3d(const int* x, int* y) {
    extern __shared__ int buf[];
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int n = blockDim.x * blockDim.y * blockDim.z;
    buf[t] = x[blockIdx.x * n + t];
    __syncthreads();
    y[blockIdx.x * n + t] = buf[n - 1 - t] + threadIdx.z * 1000;
}

// Missing barrier: the race check must still see it (region loops run threads in reverse too).
__global__ void missing_sync(int* d) {
    __shared__ int s[64];
    s[threadIdx.x] = d[threadIdx.x];
    int v = s[63 - threadIdx.x];
    __syncthreads();
    d[threadIdx.x] = v;
}

// A barrier under a condition on per-thread data: left on fibers, which report the divergence.
__global__ void divergent_by_data(const int* flags, int* x) {
    if (flags[threadIdx.x]) { x[threadIdx.x] = 1; __syncthreads(); }
    __syncthreads();
}

// Thread-dependent barrier with the others exiting: stays on fibers, still right.
__global__ void fiber_exit(int* x) {
    __shared__ int s[32];
    if (threadIdx.x < 8) {
        s[threadIdx.x] = x[threadIdx.x];
        __syncthreads();
        x[threadIdx.x] = s[7 - threadIdx.x];
    }
}

// Comparisons of the thread's index with uniform bounds, in their own types (signed/unsigned):
// regions narrowed to the threads an if selects, or split in two at a bound.
__global__ void ranges(int* out, int d, unsigned u) {
    __shared__ int s[64];
    unsigned t = threadIdx.x;
    int it = threadIdx.x;
    s[t] = 0;
    __syncthreads();
    if (t < d) s[t] += 1;  // d < 0 converts to a huge unsigned: true for every thread
    __syncthreads();
    if (it >= d && it < (int)u) s[t] += 10;
    __syncthreads();
    s[t] += it >= 5 ? 100 : 1000;
    for (int j = 0; j < 3; ++j)
        if (it < j) s[t] += 10000;  // j is the region's own counter, not a bound
    __syncthreads();
    out[t] = s[t];
}

// Barrier-free kernels: one region loop (threadIdx a local of the loop).
__device__ int global_index() { return blockIdx.x * blockDim.x + threadIdx.x; }
#define GID global_index()
__global__ void saxpy_gs(int n, float a, const float* x, float* y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}
__global__ void via_device_function(int* out, int n) {
    int i = GID;
    if (i >= n) return;
    out[i] = i * 3 + (int)threadIdx.x;
}
__global__ void offset_params(const int* src, int* dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    src += i;  // every thread moves its own copy of the parameters
    dst += i;
    n -= i;
    *dst = *src * 10 + (n > 0);
}
__global__ void asserting(const int* x) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(x[i] >= 0);
}

__global__ void trap_in_region(int* x) {
    __shared__ int s[32];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    if (s[threadIdx.x] == 5) __trap();
    x[threadIdx.x] = s[0];
}
"""


@pytest.fixture(scope="module")
def mods(compile_cu):
    """(region module, fiber module) of KERNELS - the same executable, the fiber one's kernel
    server started with VF_REGIONS=0."""
    return compile_cu(KERNELS), compile_cu(KERNELS)


def _run(mods, kernel, grid, block, make_args, shared=0, check=None):
    """Launch with region execution and on fibers; every output array must agree exactly."""
    region_mod, fiber_mod = mods
    a = make_args()
    region_mod.launch(kernel, grid, block, a, shared)
    b = make_args()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VF_REGIONS", "0")
        fiber_mod.launch(kernel, grid, block, b, shared)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
    if check is not None:
        check(a)
    return a


def test_plan_of_the_built_kernels():
    plans = {p.name: p for p in plan_kernels(KERNELS)}
    split = {n for n, p in plans.items() if p.split}
    assert split >= {"tree", "scan_hs", "reduce_t", "early_exit", "tile_sum", "param_per_thread", "votes",
                     "warp_ops", "cg_ops", "shared_flag_loop", "warp_loops", "dyn3d", "missing_sync",
                     "trap_in_region"}
    assert not plans["fiber_exit"].split
    assert plans["param_per_thread"].slots == ["k"]
    assert plans["tile_sum"].slots == ["acc"]
    assert not plans["divergent_by_data"].split and "depends on the thread" in plans["divergent_by_data"].reason


def test_tree_reduction(mods):
    rng = np.random.default_rng(1)
    n = 256 * 7 + 100
    x = rng.standard_normal(n).astype(np.float32)
    part = _run(mods, "tree", 8, 256, lambda: [x, np.full(8, np.nan, np.float32), n])[1]
    want = np.add.reduceat(np.concatenate([x, np.zeros(8 * 256 - n, np.float32)]), np.arange(0, 2048, 256))
    np.testing.assert_allclose(part, want, rtol=1e-4, atol=1e-4)


def test_scan_with_uniform_ping_pong(mods):
    x = np.arange(1, 128 * 3 + 1, dtype=np.float32)
    y = _run(mods, "scan_hs", 3, 128, lambda: [x, np.zeros_like(x), x.size])[1]
    np.testing.assert_array_equal(y, np.cumsum(x.reshape(3, 128), axis=1).ravel())


@pytest.mark.parametrize("block", [64, 128, 256])
def test_template_block_size_conditions_and_warp_shuffles(mods, block):
    x = np.arange(5000, dtype=np.float32) % 17
    out = _run(mods, f"reduce_t<{block}>", 3, block, lambda: [x, np.zeros(3, np.float32), x.size])[1]
    assert out.sum() == x.sum()


def test_early_return_before_the_barrier(mods):
    x = np.arange(100, dtype=np.int32)
    y = _run(mods, "early_exit", 2, 64, lambda: [x, np.full(100, -1, np.int32), 100])[1]
    np.testing.assert_array_equal(y[:64], 2 * x[:64][::-1])
    np.testing.assert_array_equal(y[64:], 2 * x[64:][::-1])


def test_two_dimensional_blocks_register_array_and_advanced_parameter(mods):
    a = np.arange(3 * 64, dtype=np.float32)
    out = _run(mods, "tile_sum", 3, (8, 8), lambda: [a, np.zeros_like(a), 8])[1]
    t = a.reshape(3, 8, 8)
    want = np.empty((3, 8, 8), np.float32)
    for r in (1, 2):
        s = t * r
        acc = np.transpose(s, (0, 2, 1)) + np.roll(s, -1, axis=2)
        want = acc * 10 if r == 1 else want + acc
    np.testing.assert_allclose(out.reshape(3, 8, 8), want, rtol=1e-6)


def test_parameter_changed_per_thread(mods):
    x = _run(mods, "param_per_thread", 1, 32, lambda: [np.zeros(32, np.int32), 1000])[0]
    t = np.arange(32)
    np.testing.assert_array_equal(x, (1000 + 31 - t) * 100 + 1000 + t)


def test_syncthreads_count_and_or(mods):
    x = np.array([1, -1, 2, 8, -7, 3, 0, 9], np.int32)
    out = _run(mods, "votes", 2, 4, lambda: [x, np.zeros(6, np.int32)])[1]
    np.testing.assert_array_equal(out, [3, 1, 1, 2, 0, 1])


def test_every_warp_collective(mods):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 100, size=96).astype(np.int32)
    out = _run(mods, "warp_ops", 1, 96, lambda: [x, np.zeros(8 * 96, np.int32)])[1].reshape(96, 8)
    for w in range(3):
        v = x[32 * w:32 * w + 32]
        lanes = np.arange(32)
        got = out[32 * w:32 * w + 32]
        np.testing.assert_array_equal(got[:, 0], np.where(lanes + 3 < 32, v[np.minimum(lanes + 3, 31)], v))
        seg = lanes & ~15
        np.testing.assert_array_equal(out[32 * w:32 * w + 32, 1], np.where(lanes - 2 >= seg, v[lanes - 2], v))
        np.testing.assert_array_equal(out[32 * w:32 * w + 32, 2], v[lanes ^ 5])
        np.testing.assert_array_equal(out[32 * w:32 * w + 32, 3], v[(lanes & ~7) + ((lanes * 7) & 7)])
        ballot = sum(1 << int(lane) for lane in lanes if v[lane] & 1)
        assert np.all(out[32 * w:32 * w + 32, 4].view(np.uint32) == ballot)
        assert np.all(out[32 * w:32 * w + 32, 5] == (2 * int((v > 90).any()) + 1))
        assert np.all(out[32 * w:32 * w + 32, 6] == v.sum() + v.max())
        am = sum(1 << int(lane) for lane in lanes if lane % 3 == 0)
        np.testing.assert_array_equal(out[32 * w:32 * w + 32, 7].view(np.uint32),
                                      np.where(lanes % 3 == 0, am, 0))


def test_cooperative_groups_block_and_tile(mods):
    x = np.ones(4096, np.float32)
    out = _run(mods, "cg_ops", 4, 128, lambda: [x, np.zeros(4, np.float32), x.size])[1]
    np.testing.assert_array_equal(out, np.full(4, 1024.0, np.float32))


def test_loop_condition_in_shared_memory(mods):
    x = _run(mods, "shared_flag_loop", 2, 64, lambda: [np.zeros(128, np.int32), 5])[0]
    assert np.all(x == sum(range(5)))


def test_do_while_continue_and_thread_dependent_trip_counts(mods):
    x = np.arange(64, dtype=np.int32) * 7 % 23
    _run(mods, "warp_loops", 2, 32, lambda: [x, np.zeros(64, np.int32)])


def test_dynamic_shared_memory_in_three_dimensional_blocks(mods):
    x = np.arange(2 * 64, dtype=np.int32)
    y = _run(mods, "dyn3d", 2, (4, 4, 4), lambda: [x, np.zeros_like(x)], shared=64 * 4)[1]
    t = np.arange(64)
    for b in range(2):
        np.testing.assert_array_equal(y[64 * b:64 * b + 64], x[64 * b + 63 - t] + (t // 16) * 1000)


def test_kernel_that_must_fall_back_still_runs(mods):
    x = np.arange(32, dtype=np.int32)
    y = _run(mods, "fiber_exit", 1, 32, lambda: [x.copy()])[0]
    np.testing.assert_array_equal(y[:8], x[:8][::-1])
    np.testing.assert_array_equal(y[8:], x[8:])


def test_race_check_still_sees_a_missing_barrier(mods):
    region_mod, _ = mods
    report = region_mod.race_check("missing_sync", 1, 64, [np.arange(64, dtype=np.int32)])
    assert not report.ok
    assert region_mod.race_check("tree", 2, 256, [np.ones(512, np.float32), np.zeros(2, np.float32), 512]).ok


def test_divergent_barrier_on_data_is_still_a_fault(mods):
    region_mod, _ = mods
    flags = np.zeros(32, np.int32)
    flags[:5] = 1
    with pytest.raises(cpu.KernelFault, match=r"divergent __syncthreads\(\)"):
        region_mod.launch("divergent_by_data", 1, 32, [flags, np.zeros(32, np.int32)])
    # the same condition true everywhere is fine
    region_mod.launch("divergent_by_data", 1, 32, [np.ones(32, np.int32), np.zeros(32, np.int32)])


@pytest.mark.parametrize(("d", "u"), [(-1, 40), (3, 64), (70, 2)])
def test_thread_ranges_in_the_comparisons_own_types(mods, d, u):
    code = {p.name: p for p in plan_kernels(KERNELS)}["ranges"].code
    assert "region_true_range" in code and "region_split" in code
    out = _run(mods, "ranges", 1, 64, lambda: [np.zeros(64, np.int32), d, u])[0]
    t = np.arange(64)
    want = (np.ones(64, bool) if d < 0 else t < d) * 1 + ((t >= d) & (t < u)) * 10
    want += np.where(t >= 5, 100, 1000) + 10000 * np.maximum(0, 2 - t)
    np.testing.assert_array_equal(out, want)


def test_barrier_free_kernels_as_one_region(mods):
    plans = {p.name: p for p in plan_kernels(KERNELS)}
    assert all(plans[k].split and plans[k].regions == 1
               for k in ("saxpy_gs", "via_device_function", "asserting", "offset_params"))
    x = np.arange(1000, dtype=np.float32)
    y = _run(mods, "saxpy_gs", 3, 64, lambda: [1000, 2.0, x, np.ones(1000, np.float32)])[3]
    np.testing.assert_array_equal(y, 2 * x + 1)
    out = _run(mods, "via_device_function", 4, 32, lambda: [np.full(128, -1, np.int32), 100])[0]
    i = np.arange(100)
    np.testing.assert_array_equal(out[:100], i * 3 + i % 32)  # the device function saw each thread's index
    assert np.all(out[100:] == -1)
    x = np.arange(50, dtype=np.int32)
    out = _run(mods, "offset_params", 2, 32, lambda: [x, np.full(64, -1, np.int32), 50])[1]
    np.testing.assert_array_equal(out[:50], x * 10 + 1)
    region_mod, _ = mods
    bad = np.zeros(64, np.int32)
    bad[37] = -1
    with pytest.raises(cpu.KernelFault, match=r"thread: \[5,0,0\].*x\[i\] >= 0"):
        region_mod.launch("asserting", 2, 32, [bad])


def test_trap_inside_a_region_names_the_thread(mods):
    region_mod, _ = mods
    with pytest.raises(cpu.KernelFault, match=r"__trap\(\) at line \d+ in thread \(5,0,0\)"):
        region_mod.launch("trap_in_region", 1, 32, [np.arange(32, dtype=np.int32)])


# ---- the kernel zoo's shared-memory and reduction kernels, both ways ----------------------------

def _zoo():
    spec = importlib.util.spec_from_file_location("vf_zoo_sources", Path(__file__).with_name("test_kernel_zoo.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def zoo_mods(compile_cu):
    zoo = _zoo()
    return {name: (compile_cu(src), compile_cu(src)) for name, src in
            (("reduce", zoo.REDUCE_SRC), ("shared", zoo.SHARED_SRC))}


def test_zoo_kernels_split(zoo_mods):
    zoo = _zoo()
    plans = {p.name: p for src in (zoo.REDUCE_SRC, zoo.SHARED_SRC) for p in plan_kernels(src)}
    for name in ("reduce", "histogram256", "block_scan", "ballot_compact", "matmul_tiled", "transpose_padded",
                 "softmax_rows", "layernorm_rows", "bitonic_sort_block", "stencil1d"):
        assert plans[name].split, (name, plans[name].reason)


ZOO_LAUNCHES = [
    ("reduce", "reduce<256>", 4, 256, lambda r: [r.standard_normal(5000).astype(np.float32),
                                                  np.zeros(4, np.float32), 5000]),
    ("reduce", "block_scan", 3, 128, lambda r: [r.integers(-9, 9, 300).astype(np.int32),
                                                 np.zeros(300, np.int32), 300]),
    ("reduce", "ballot_compact_1block", 1, 64, lambda r: [r.integers(0, 99, 64).astype(np.int32),
                                                           np.zeros(64, np.int32), np.zeros(1, np.int32), 64]),
    ("reduce", "histogram256", 4, 128, lambda r: [r.integers(0, 256, 3000).astype(np.uint8),
                                                   np.zeros(256, np.uint32), 3000]),
    ("shared", "matmul_tiled", (3, 2), (16, 16), lambda r: [r.standard_normal((20, 33)).astype(np.float32),
                                                             r.standard_normal((33, 40)).astype(np.float32),
                                                             np.zeros((20, 40), np.float32), 20, 40, 33]),
    ("shared", "transpose_padded", (2, 3), (32, 8), lambda r: [np.zeros((40, 70), np.float32),
                                                               r.standard_normal((70, 40)).astype(np.float32),
                                                               40, 70]),
    ("shared", "bitonic_sort_block", 2, 256, lambda r: [r.integers(-1000, 1000, 512).astype(np.int32)], 1024),
]


@pytest.mark.parametrize("launch", ZOO_LAUNCHES, ids=[z[1] for z in ZOO_LAUNCHES])
def test_zoo_kernels_agree_with_the_fiber_path(zoo_mods, launch):
    src, kernel, grid, block, make, *shared = launch
    kernel = kernel.replace("_1block", "")  # one block: the atomics' order is deterministic
    seed = 11
    a = _run(zoo_mods[src], kernel, grid, block, lambda: make(np.random.default_rng(seed)), *shared)
    assert any(isinstance(x, np.ndarray) and x.any() for x in a)


# ---- safety net: block functions that do not compile ---------------------------------------------

def test_stripping_the_block_functions_gives_the_plain_rewrite(monkeypatch):
    from veriforge.cuda.cpu.regions import has_region_code, strip_region_code

    with_regions = rewrite(scan(KERNELS))
    assert has_region_code(with_regions)
    monkeypatch.setenv("VERIFORGE_CPU_REGIONS", "0")
    assert strip_region_code(with_regions) == rewrite(scan(KERNELS))


def test_which_compile_errors_are_the_passes_fault():
    from veriforge.cuda.cpu.regions import region_induced, region_ranges

    text = '#line 1 "kernel.cu"\n' + rewrite(scan(TREE))
    spans = region_ranges(text)
    assert spans == [("kernel.cu", 2, 12)]  # the kernel's lines
    twin = ("kernel.cu: In lambda function:\nkernel.cu:7:5: error: 'y' was not declared in this scope\n"
            "kernel.cu: In function 'void tree(const float*, float*, int)':\n"
            "kernel.cu:7:5: error: 'y' was not declared in this scope\n")
    assert not region_induced(twin, spans)  # the user's error, in both copies of the kernel
    ours = "kernel.cu: In lambda function:\nkernel.cu:9:1: error: 'tidx' was not declared in this scope\n"
    assert region_induced(ours, spans)
    once = ("kernel.cu: In function 'void tree(const float*, float*, int)':\n"
            "kernel.cu:8:1: error: 'tile' was not declared\n")
    assert region_induced(once, spans)  # block-level code of the block function only
    assert region_induced("kernel.cu:3:1: error: 'vf_s0' was not declared in this scope\n", spans)
    assert region_induced("kernel.cu:1000003:1: error: expected ';'\n", spans)  # generated code
    assert region_induced("vf_regions.h: In instantiation of 'T* vf::RegionArena::take(unsigned int)':\n"
                          "kernel.cu:1000009:32:   required from here\n"
                          "vf_regions.h:218:18: error: '__restrict__' qualifiers cannot be applied to 'void'\n", spans)
    host = "kernel.cu: In function 'int main()':\nkernel.cu:30:1: error: expected ';'\n"
    assert not region_induced(host, spans)  # outside every split kernel


def test_a_block_function_that_does_not_compile_falls_back_to_fibers(compile_cu, monkeypatch):
    from veriforge.cuda.cpu import regions

    real = regions._Gen.generate

    def broken(self, seq):
        return real(self, seq).replace("::vf::region_end();", "vf_no_such_name(); ::vf::region_end();", 1)

    monkeypatch.setattr(regions._Gen, "generate", broken)
    src = TREE.replace("tree(", "tree_broken(")
    mod = compile_cu(src)  # builds: the block function is dropped, the kernel runs on fibers
    x = np.ones(512, np.float32)
    part = np.zeros(2, np.float32)
    mod.launch("tree_broken", 2, 256, [x, part, 512])
    np.testing.assert_array_equal(part, [256, 256])
