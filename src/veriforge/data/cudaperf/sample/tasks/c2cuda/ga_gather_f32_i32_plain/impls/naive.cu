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

__global__ void ga_naive(const float* __restrict__ src, const int* __restrict__ idx, float* __restrict__ out, int n, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = src[ga_map(idx[i], m)];
    }
}

extern "C" void solve(const float* src, const int* idx, float* out, int n, int m) {
    int total = n;
    ga_naive<<<(total + 255) / 256, 256>>>(src, idx, out, n, m);
}
