#include <cuda_runtime.h>

#define BLOCK 256

__global__ void dot_partial(const float* a, const float* b, float* partial, int n) {
    __shared__ float s[BLOCK];
    int tid = threadIdx.x;
    float v = 0.0f;
    for (int i = blockIdx.x * BLOCK + tid; i < n; i += BLOCK * gridDim.x) {
        v += a[i] * b[i];
    }
    s[tid] = v;
    __syncthreads();
    for (int step = BLOCK / 2; step > 0; step >>= 1) {
        if (tid < step) s[tid] += s[tid + step];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}

__global__ void sum_partials(const float* partial, float* out, int m) {
    __shared__ float s[BLOCK];
    int tid = threadIdx.x;
    float v = 0.0f;
    for (int i = tid; i < m; i += BLOCK) v += partial[i];
    s[tid] = v;
    __syncthreads();
    for (int step = BLOCK / 2; step > 0; step >>= 1) {
        if (tid < step) s[tid] += s[tid + step];
        __syncthreads();
    }
    if (tid == 0) out[0] = s[0];
}

extern "C" void solve(const float* a, const float* b, float* out, int n) {
    int blocks = (n + BLOCK - 1) / BLOCK;
    if (blocks > 256) blocks = 256;
    float* partial = nullptr;
    cudaMalloc(&partial, sizeof(float) * blocks);
    dot_partial<<<blocks, BLOCK>>>(a, b, partial, n);
    sum_partials<<<1, BLOCK>>>(partial, out, blocks);
    cudaFree(partial);
}
