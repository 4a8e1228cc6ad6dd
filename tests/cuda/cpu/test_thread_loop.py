"""Blocks run as loops over their threads, and the scheduler learns about a thread only when it
waits (issue 15): threads that return without waiting - before, between or after the ones that
wait - must still count as exited for barriers and warp collectives, in both run orders, in 1-D
and 3-D blocks."""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda import cpu

SOURCE = r"""
// The first half of the block returns before anybody waits; the second half passes a barrier.
__global__ void early_exit_then_barrier(int* out) {
    __shared__ int s[256];
    int t = threadIdx.x;
    if (t < 128) { out[t] = -1; return; }
    s[t] = t;
    __syncthreads();
    out[t] = s[128 + ((t - 128 + 1) & 127)];
}
// The second half returns after the first half already waits at the barrier: the barrier
// completes when the loop runs out of threads.
__global__ void barrier_then_late_exit(int* out) {
    __shared__ int s[256];
    int t = threadIdx.x;
    if (t >= 128) { out[t] = -1; return; }
    s[t] = 2 * t;
    __syncthreads();
    out[t] = s[127 - t];
}
// Lanes 16..31 of every warp return; the others shuffle with a full mask (exited lanes do not
// take part) and with their own half mask.
__global__ void half_warp_shuffle(int* out) {
    int t = threadIdx.x, lane = t & 31;
    if (lane >= 16) return;
    int v = t;
    for (int o = 8; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o, 16);
    int w = __shfl_sync(0x0000ffffu, t, 0);
    out[t] = lane == 0 ? v : w;
}
// A 3-D block with a barrier between every step and quiet exits at the end of each row.
__global__ void block3d(int* out) {
    __shared__ int s[4][4][8];
    unsigned x = threadIdx.x, y = threadIdx.y, z = threadIdx.z;
    unsigned lin = x + 8 * (y + 4 * z);
    if (x == 7) { out[blockIdx.x * 128 + lin] = -2; return; }
    s[z][y][x] = (int)lin;
    __syncthreads();
    int v = __syncthreads_count(x < 3);
    out[blockIdx.x * 128 + lin] = s[3 - z][3 - y][6 - x] * 1000 + v;
}
// No synchronisation at all: threadIdx of a 2-D block walked by the loop.
__global__ void index2d(int* out) {
    unsigned lin = threadIdx.x + blockDim.x * threadIdx.y;
    out[blockIdx.x * blockDim.x * blockDim.y + lin] = threadIdx.x + 100 * threadIdx.y;
}
"""


@pytest.fixture(scope="module")
def mod():
    m = cpu.compile(SOURCE)
    yield m
    m.close()


def test_early_exit_then_barrier(mod):
    out = np.zeros(256, np.int32)
    mod.launch("early_exit_then_barrier", 1, 256, [out])
    t = np.arange(128, 256)
    assert (out[:128] == -1).all()
    assert (out[128:] == 128 + ((t - 128 + 1) & 127)).all()


def test_barrier_then_late_exit(mod):
    out = np.zeros(256, np.int32)
    mod.launch("barrier_then_late_exit", 2, 256, [out])
    t = np.arange(128)
    assert (out[:128] == 2 * (127 - t)).all()
    assert (out[128:] == -1).all()


def test_half_warp_shuffle(mod):
    out = np.full(256, 7, np.int32)
    mod.launch("half_warp_shuffle", 1, 256, [out])
    for warp in range(8):
        base = warp * 32
        assert out[base] == sum(range(base, base + 16))
        assert (out[base + 1:base + 16] == base).all()
        assert (out[base + 16:base + 32] == 7).all()


def test_block3d_barriers_and_quiet_exits(mod):
    out = np.zeros(2 * 128, np.int32)
    mod.launch("block3d", 2, (8, 4, 4), [out])
    for b in range(2):
        for z in range(4):
            for y in range(4):
                for x in range(8):
                    lin = x + 8 * (y + 4 * z)
                    got = out[b * 128 + lin]
                    if x == 7:
                        assert got == -2
                    else:
                        other = (6 - x) + 8 * ((3 - y) + 4 * (3 - z))
                        assert got == other * 1000 + 3 * 16, (b, x, y, z, got)


def test_index2d(mod):
    out = np.zeros(3 * 12 * 5, np.int32)
    mod.launch("index2d", 3, (12, 5), [out])
    x, y = np.meshgrid(np.arange(12), np.arange(5))
    ref = (x + 100 * y).reshape(-1)
    assert (out.reshape(3, -1) == ref).all()


@pytest.mark.parametrize(("kernel", "grid", "block", "size"), [
    ("early_exit_then_barrier", 1, 256, 256),
    ("barrier_then_late_exit", 2, 256, 256),
    ("half_warp_shuffle", 1, 256, 256),
    ("block3d", 2, (8, 4, 4), 256),
    ("index2d", 3, (12, 5), 180),
])
def test_reverse_order_gives_the_same_result(mod, kernel, grid, block, size):
    report = mod.race_check(kernel, grid, block, [np.zeros(size, np.int32)])
    assert not report.differences, report
