#include <cuda_runtime.h>
#include <stdint.h>
#include <limits.h>
#include <math.h>

static int ck_grid(long long work, int threads, int blocks_per_sm) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (sms <= 0) sms = 16;
    long long blocks = (work + threads - 1) / threads;
    long long cap = (long long)sms * blocks_per_sm;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    return (int)blocks;
}

static bool ck_aligned(const void* p, int bytes) {
    return (reinterpret_cast<uintptr_t>(p) % (uintptr_t)bytes) == 0;
}

__device__ __forceinline__ long long ga_map(long long j, long long m) {
    (void)m;
    return j;
}

// Grid-stride loop; indices come through the read-only cache and two elements are in flight per step.
__global__ void ga_stride(const float* __restrict__ src, const int* __restrict__ idx, float* __restrict__ out, int n, int m) {
    int stride = gridDim.x * blockDim.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + stride < n; i += 2 * stride) {
        int a0 = __ldg(&idx[i]), b0 = __ldg(&idx[i + stride]);
        out[i] = src[ga_map(a0, m)];
        out[(i + stride)] = src[ga_map(b0, m)];
    }
    if (i < n) {
        out[i] = src[ga_map(__ldg(&idx[i]), m)];
    }
}

extern "C" void solve(const float* src, const int* idx, float* out, int n, int m) {
    ga_stride<<<ck_grid(n, 256, 8), 256>>>(src, idx, out, n, m);
}
