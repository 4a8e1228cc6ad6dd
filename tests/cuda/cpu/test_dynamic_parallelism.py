"""Dynamic parallelism in the CPU runtime (runtime/device_launch.cpp): kernels launched from device
code run after the launching grid and complete before it counts as complete, recursively; tail
launches run after the parent and its other children; fire-and-forget launches run too; nesting is
limited to 24 levels and pending launches to cudaLimitDevRuntimePendingLaunchCount, reported to the
launching thread by device-side cudaGetLastError; faults in a child reach the host."""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda import cpu

PROGRAM = r"""
#include <cstdio>
__device__ int g_seq = 0;

__global__ void child(int* out, int base, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[base + i] = base + i + 1;
}
__global__ void parent(int* out) {        // each of 4 x 8 threads launches a child grid for its slice
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    child<<<2, 4>>>(out, t * 8, 8);
}

__global__ void rec(int* depth_seen, int depth, int max_depth) {   // recursion, one thread
    depth_seen[depth] = depth + 100;
    if (depth + 1 < max_depth) rec<<<1, 1>>>(depth_seen, depth + 1, max_depth);
}

__global__ void record(int* order, int slot) { order[slot] = atomicAdd(&g_seq, 1); }
__global__ void tail_parent(int* order) {
    if (threadIdx.x == 0) {
        record<<<1, 1, 0, cudaStreamTailLaunch>>>(order, 0);       // runs after everything else below
        record<<<1, 1>>>(order, 1);
        record<<<1, 1, 0, cudaStreamFireAndForget>>>(order, 2);
        cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        record<<<1, 1, 0, s>>>(order, 3);
        cudaStreamDestroy(s);
    }
}

__global__ void deep(int* err, int depth) {   // launches until CUDA's 24 levels refuse
    if (depth > 40) return;
    deep<<<1, 1>>>(err, depth + 1);
    err[depth] = (int)cudaGetLastError();
}

__global__ void noop() {}
__global__ void many(int* err) { noop<<<1, 1>>>(); err[threadIdx.x] = (int)cudaGetLastError(); }
__global__ void bad_config(int* err) {
    noop<<<1, 2048>>>(); err[0] = (int)cudaGetLastError(); err[1] = (int)cudaGetLastError();
}

int main() {
    int* out; cudaMallocManaged(&out, 256 * sizeof(int));
    for (int i = 0; i < 256; ++i) out[i] = 0;
    parent<<<4, 8>>>(out);
    printf("parent %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    int ok = 1; for (int i = 0; i < 256; ++i) ok &= out[i] == i + 1;
    printf("children %d\n", ok);

    int* seen; cudaMallocManaged(&seen, 32 * sizeof(int));
    for (int i = 0; i < 32; ++i) seen[i] = -1;
    rec<<<1, 1>>>(seen, 0, 12);
    printf("rec %s %d %d %d\n", cudaGetErrorName(cudaDeviceSynchronize()), seen[0], seen[11], seen[12]);

    int* order; cudaMallocManaged(&order, 4 * sizeof(int));
    tail_parent<<<2, 32>>>(order);
    cudaDeviceSynchronize();
    printf("tail-last %d\n", order[0] > order[1] && order[0] > order[2] && order[0] > order[3]);

    int* err; cudaMallocManaged(&err, 64 * sizeof(int));
    for (int i = 0; i < 64; ++i) err[i] = -1;
    deep<<<1, 1>>>(err, 0);
    printf("deep %s", cudaGetErrorName(cudaDeviceSynchronize()));
    for (int i = 20; i < 26; ++i) printf(" %d", err[i]);
    printf("\n");

    cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 5);
    size_t lim = 0; cudaDeviceGetLimit(&lim, cudaLimitDevRuntimePendingLaunchCount);
    for (int i = 0; i < 64; ++i) err[i] = -1;
    many<<<1, 8>>>(err);
    cudaDeviceSynchronize();
    printf("pending limit %zu:", lim); for (int i = 0; i < 8; ++i) printf(" %d", err[i]); printf("\n");
    cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 2048);
    bad_config<<<1, 1>>>(err);
    printf("bad config %s %d %d\n", cudaGetErrorName(cudaDeviceSynchronize()), err[0], err[1]);
    printf("done\n");
    return 0;
}
"""


@pytest.fixture(scope="module")
def run(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(PROGRAM, filename="dp.cu", timeout=120)
    assert res.returncode == 0 and "done" in res.stdout, res.stdout + res.stderr
    return res.stdout


def test_children_complete_before_the_parent_grid_does(run):
    assert "parent cudaSuccess\nchildren 1\n" in run


def test_recursive_launches(run):
    assert "rec cudaSuccess 100 111 -1\n" in run


def test_tail_launch_runs_after_the_other_children(run):
    assert "tail-last 1\n" in run


def test_nesting_depth_is_limited_to_24_levels(run):
    # grids at depths 0..23 launch fine; the grid at depth 23 cannot launch a 25th level
    assert "deep cudaSuccess 0 0 0 65 -1 -1\n" in run     # 65 = cudaErrorLaunchMaxDepthExceeded


def test_pending_launch_count_limit(run):
    # 5 launches may wait; the 6th..8th launch of the same grid fail with cudaErrorLaunchPendingCountExceeded (69)
    assert "pending limit 5: 0 0 0 0 0 69 69 69\n" in run


def test_invalid_child_configuration_is_a_device_side_error(run):
    assert "bad config cudaSuccess 9 0\n" in run          # cudaGetLastError reads, then clears


FAULTS = r"""
#include <cstdio>
__global__ void bad_child(int* p) { if (threadIdx.x == 3) __trap(); p[threadIdx.x] = 1; }
__global__ void parent(int* p) { if (threadIdx.x == 0) bad_child<<<1, 8>>>(p); }
__global__ void cdp1(int* p) { bad_child<<<1, 1>>>(p); cudaDeviceSynchronize(); }
int main(int argc, char**) {
    int* p; cudaMallocManaged(&p, 64);
    if (argc > 1) cdp1<<<1, 1>>>(p); else parent<<<1, 4>>>(p);
    printf("%s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
"""


def test_a_fault_in_a_child_reaches_the_host(cpu_session_home, monkeypatch):
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    res = cpu.run_program(FAULTS, filename="faults.cu")
    assert res.stdout == "cudaErrorLaunchFailure\n", res.stderr
    assert "kernel 'bad_child'" in res.stderr and "__trap" in res.stderr


def test_device_side_cuda_device_synchronize_is_refused(cpu_session_home, monkeypatch):
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    res = cpu.run_program(FAULTS, filename="faults.cu", argv=("cdp1",))
    assert res.stdout == "cudaErrorLaunchFailure\n", res.stderr
    assert "cudaDeviceSynchronize() in device code" in res.stderr and "kernel 'cdp1'" in res.stderr


def test_module_launch_runs_device_launched_grids(compile_cu):
    mod = compile_cu("__global__ void leaf(int* x, int i) { x[i] = 10 * i; }\n"
                     "__global__ void root(int* x) { leaf<<<1, 1>>>(x, threadIdx.x); }\n")
    x = np.zeros(16, np.int32)
    mod.launch("root", 1, 16, [x])
    np.testing.assert_array_equal(x, 10 * np.arange(16))


def test_cuda_launch_kernel_from_device_code_and_under_capture(cpu_session_home, monkeypatch):
    monkeypatch.setenv("VERIFORGE_HOME", cpu_session_home)
    src = r"""
#include <cstdio>
__global__ void leaf(int* x, int v) { x[threadIdx.x] = v; }
__global__ void root(int* x) {
    int v = 5; void* args[] = {&x, &v};
    cudaLaunchKernel(leaf, dim3(1), dim3(8), args, 0, 0);   // device-side launch through the API
}
int main() {
    int* x; cudaMallocManaged(&x, 64);
    root<<<1, 1>>>(x);
    cudaDeviceSynchronize();
    printf("%d %d\n", x[0], x[7]);
    cudaStream_t s; cudaStreamCreate(&s); cudaGraph_t g; cudaGraphExec_t e;
    int v = 9; void* args[] = {&x, &v};
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaLaunchKernel((const void*)leaf, dim3(1), dim3(8), args, 0, s);
    cudaStreamEndCapture(s, &g);
    printf("captured %d\n", x[0]);
    cudaGraphInstantiate(&e, g, 0); cudaGraphLaunch(e, s); cudaStreamSynchronize(s);
    printf("%d\n", x[3]);
    return 0;
}
"""
    res = cpu.run_program(src)
    assert res.ok and res.stdout == "5 5\ncaptured 5\n9\n", res.stdout + res.stderr
