"""Real-world idioms that are undefined or unusual but that GPUs run, and the CPU runtime must too:
warp-synchronous volatile reductions (lockstep), typed dynamic shared memory in templates,
cudaLaunchKernel with an argument array."""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda import cpu

SOURCE = r"""
__device__ void warpReduce(volatile int *sdata, int tid) {
    sdata[tid] += sdata[tid + 32]; sdata[tid] += sdata[tid + 16]; sdata[tid] += sdata[tid + 8];
    sdata[tid] += sdata[tid + 4];  sdata[tid] += sdata[tid + 2];  sdata[tid] += sdata[tid + 1];
}
__global__ void reduce(const int *in, int *out) {
    __shared__ int sdata[128];
    int tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * 128 + tid];
    __syncthreads();
    if (tid < 64) sdata[tid] += sdata[tid + 64];
    __syncthreads();
    if (tid < 32) warpReduce(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
template <typename T> __global__ void rev(T *d) {
    extern __shared__ __align__(sizeof(T)) unsigned char my_smem[];
    T *s = reinterpret_cast<T *>(my_smem);
    s[threadIdx.x] = d[threadIdx.x];
    __syncthreads();
    d[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
__global__ void axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
template <class T> __global__ void fill(T *p, T v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}
extern "C" int launch_by_address(const float *x, float *y, int *marks, int n) {
    float a = 3.0f;
    void *args[] = {&a, &x, &y, &n};
    cudaError_t e1 = cudaLaunchKernel((const void *)axpy, dim3((n + 63) / 64), dim3(64), args, 0, 0);
    int seven = 7;
    void *args2[] = {&marks, &seven, &n};
    cudaError_t e2 = cudaLaunchKernel(fill<int>, dim3((n + 63) / 64), dim3(64), args2);
    return e1 * 1000 + e2;
}
extern "C" int launch_a_host_function(int n) {
    void *args[] = {&n};
    return cudaLaunchKernel((const void *)&launch_a_host_function, dim3(1), dim3(1), args, 0, 0);
}
"""


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture(scope="module")
def mod(compile_cu):
    return compile_cu(SOURCE)


def test_volatile_warp_synchronous_reduction_gives_the_gpu_answer(mod, rng):
    x = rng.integers(-1000, 1000, size=128 * 16).astype(np.int32)
    out = np.zeros(16, np.int32)
    mod.launch("reduce", 16, 128, [x, out])
    np.testing.assert_array_equal(out, x.reshape(16, 128).sum(axis=1))
    # the same in reverse thread order (the race probe): lockstep does not depend on the schedule
    assert mod.race_check("reduce", 16, 128, [x, np.zeros(16, np.int32)]).ok


@pytest.mark.parametrize(("name", "dtype"), [("rev<double>", np.float64), ("rev<float>", np.float32),
                                             ("rev<short>", np.int16)])
def test_typed_dynamic_shared_memory_with_align_sizeof(mod, name, dtype):
    d = np.arange(64).astype(dtype)
    mod.launch(name, 1, 64, [d], shared_mem=64 * d.itemsize)
    np.testing.assert_array_equal(d, np.arange(64)[::-1].astype(dtype))


def test_cudaLaunchKernel_by_address_and_with_a_template(mod, rng):
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    want = y + 3.0 * x
    marks = np.zeros(n, np.int32)
    assert mod.call("launch_by_address", [x, y, marks, n]) == 0
    np.testing.assert_allclose(y, want, rtol=1e-6)
    assert np.all(marks == 7)
    with pytest.raises(cpu.LaunchError, match="is not a kernel of this program"):
        mod.call("launch_a_host_function", [1])
