"""libcu++ synchronisation on the CPU runtime (runtime/include/cuda/vf_sync.h): cuda::barrier (init, arrive,
wait, arrive_and_wait, arrive_and_drop), cuda::pipeline (thread scope; block scope with a shared state,
partitioned into producers and consumers), cuda::memcpy_async into either, cg::memcpy_async / cg::wait, the
__pipeline_* and __mbarrier_* primitives and nvcuda::experimental::awbarrier. Waits park the CUDA thread in the
fiber scheduler; a barrier whose count is never reached is a deadlock fault naming the line."""

from __future__ import annotations

import re

import pytest

from veriforge.cuda import cpu

PROGRAM = r"""
#include <cstdio>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda_pipeline_primitives.h>
#include <cuda_awbarrier.h>
namespace cg = cooperative_groups;

__global__ void bar_kernel(const float* in, float* out, int n) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ float tile[256];
    __shared__ float partial[8];
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    for (int base = blockIdx.x * 256; base < n; base += gridDim.x * 256) {
        cuda::memcpy_async(&tile[threadIdx.x], &in[base + threadIdx.x], sizeof(float), bar);
        bar.arrive_and_wait();
        float v = tile[(threadIdx.x + 1) % 256];   // another thread's element
        if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
        auto t = bar.arrive();
        bar.wait(std::move(t));
        out[base + threadIdx.x] = v + partial[(threadIdx.x / 32 + 1) % 8];
        bar.arrive_and_wait();
    }
}

__global__ void pipe_kernel(const float* in, float* out, int n) {
    constexpr int stages = 3;
    __shared__ float buf[stages][64];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
    auto block = cg::this_thread_block();
    // warp 0 produces, warps 1.. consume
    auto role = threadIdx.x < 32 ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer;
    auto pipe = cuda::make_pipeline(block, &state, role);
    int chunks = n / 64;
    float acc = 0;
    for (int c = 0; c < chunks; ++c) {
        if (role == cuda::pipeline_role::producer) {
            pipe.producer_acquire();
            cuda::memcpy_async(&buf[c % stages][threadIdx.x * 2], &in[c * 64 + threadIdx.x * 2],
                               2 * sizeof(float), pipe);
            pipe.producer_commit();
        } else {
            pipe.consumer_wait();
            acc += buf[c % stages][(threadIdx.x - 32) % 64];
            pipe.consumer_release();
        }
    }
    if (threadIdx.x >= 32) out[threadIdx.x - 32] = acc;
}

__global__ void thread_pipe_kernel(const float* in, float* out) {
    __shared__ float s[128];
    auto pipe = cuda::make_pipeline();
    const auto shape = cuda::aligned_size_t<alignof(float)>(sizeof(float));
    pipe.producer_acquire();
    cuda::memcpy_async(&s[threadIdx.x], &in[threadIdx.x], shape, pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    __syncthreads();
    out[threadIdx.x] = s[127 - threadIdx.x];
    pipe.consumer_release();
}

__global__ void cg_copy_kernel(const int* in, int* out) {
    __shared__ int s[1000];
    auto block = cg::this_thread_block();
    cg::memcpy_async(block, s, in, sizeof(int) * 1000);
    cg::wait(block);
    for (int i = threadIdx.x; i < 1000; i += blockDim.x) out[i] = s[999 - i];
    __shared__ int t[64];
    __pipeline_memcpy_async(&t[threadIdx.x % 64], &in[threadIdx.x % 64], sizeof(int));
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    if (threadIdx.x == 0) out[1000] = t[63];
}

__global__ void deadlock_kernel() {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x + 1);
    __syncthreads();
    bar.arrive_and_wait();
}

__global__ void drop_kernel(int* out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ int count;
    if (threadIdx.x == 0) { init(&bar, blockDim.x); count = 0; }
    __syncthreads();
    if (threadIdx.x >= 16) { bar.arrive_and_drop(); return; }   // half leave
    for (int i = 0; i < 3; ++i) { atomicAdd(&count, 1); bar.arrive_and_wait(); }
    if (threadIdx.x == 0) *out = count;
}


__global__ void legacy_kernel(int* out) {
    __shared__ nvcuda::experimental::awbarrier aw;
    __shared__ __mbarrier_t mb;
    __shared__ alignas(16) int vals[64];
    if (threadIdx.x == 0) { nvcuda::experimental::init(&aw, blockDim.x); __mbarrier_init(&mb, blockDim.x); }
    __syncthreads();
    vals[threadIdx.x] = threadIdx.x * 2;
    aw.arrive_and_wait();
    int a = vals[(threadIdx.x + 1) % 64];
    __mbarrier_token_t tok = __mbarrier_arrive(&mb);
    while (!__mbarrier_test_wait(&mb, tok)) {}
    out[threadIdx.x] = a + (((unsigned long long)vals & 15) == 0 ? 1000 : 0);
}

int main() {
    int n = 4096;
    float *in, *out; int *iin, *iout;
    cudaMallocManaged(&in, n * sizeof(float)); cudaMallocManaged(&out, n * sizeof(float));
    cudaMallocManaged(&iin, 2000 * sizeof(int)); cudaMallocManaged(&iout, 2000 * sizeof(int));
    for (int i = 0; i < n; ++i) in[i] = i;
    for (int i = 0; i < 2000; ++i) iin[i] = i;
    bar_kernel<<<4, 256>>>(in, out, n);
    cudaDeviceSynchronize();
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        int base = i / 256 * 256, t = i % 256;
        float want = in[base + (t + 1) % 256] + in[base + ((t / 32 + 1) % 8) * 32 + 1];
        if (out[i] != want) bad++;
    }
    printf("barrier bad=%d\n", bad);
    pipe_kernel<<<1, 96>>>(in, out, 640);
    cudaDeviceSynchronize();
    bad = 0;
    for (int t = 0; t < 64; ++t) {
        float want = 0;
        for (int c = 0; c < 10; ++c) want += in[c * 64 + t];
        if (out[t] != want) bad++;
    }
    printf("pipeline bad=%d\n", bad);
    thread_pipe_kernel<<<1, 128>>>(in, out);
    cudaDeviceSynchronize();
    printf("thread pipeline %g %g\n", out[0], out[127]);
    cg_copy_kernel<<<1, 128>>>(iin, iout);
    cudaDeviceSynchronize();
    printf("cg copy %d %d %d\n", iout[0], iout[999], iout[1000]);
    drop_kernel<<<1, 32>>>(iout);
    printf("drop %s %d\n", cudaGetErrorString(cudaDeviceSynchronize()), iout[0]);
    legacy_kernel<<<1, 64>>>(iout);
    cudaDeviceSynchronize();
    bad = 0;
    for (int t = 0; t < 64; ++t) if (iout[t] != ((t + 1) % 64) * 2 + 1000) bad++;
    printf("legacy bad=%d\n", bad);
    deadlock_kernel<<<1, 32>>>();
    printf("deadlock %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
"""


@pytest.fixture(scope="module")
def output(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(PROGRAM, filename="bar.cu", timeout=120)
    assert res.returncode == 0, res.stderr
    return res


def test_barrier_phases_order_shared_memory_between_threads(output):
    assert "barrier bad=0" in output.stdout


def test_partitioned_block_pipeline_hands_stages_from_producers_to_consumers(output):
    assert "pipeline bad=0" in output.stdout


def test_thread_pipeline_and_group_copies(output):
    assert "thread pipeline 127 0" in output.stdout
    assert "cg copy 999 0 63" in output.stdout


def test_arrive_and_drop_shrinks_later_phases(output):
    assert "drop no error 48" in output.stdout   # 16 threads x 3 phases after the other 16 dropped out


def test_legacy_awbarrier_mbarrier_and_shared_alignas(output):
    assert "legacy bad=0" in output.stdout


def test_a_barrier_that_never_completes_is_a_deadlock_fault(output):
    assert "deadlock unspecified launch failure" in output.stdout
    lines = PROGRAM.splitlines()   # line 1 is the empty first line of PROGRAM
    line = next(i + 1 for i, text in enumerate(lines) if "bar.arrive_and_wait();" in text
                and "blockDim.x + 1" in lines[i - 2])
    assert re.search(rf"deadlock: .*32 thread\(s\) wait at cuda::barrier::wait \(line {line}\b", output.stderr)
