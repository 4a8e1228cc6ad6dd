#include <cuda_runtime.h>

#define BLOCK 256

__global__ void sumsq_partial(const float* x, float* partial, int n) {
    __shared__ float s[BLOCK];
    int tid = threadIdx.x;
    float v = 0.0f;
    for (int i = blockIdx.x * BLOCK + tid; i < n; i += BLOCK * gridDim.x) {
        float e = x[i];
        v += e * e;
    }
    s[tid] = v;
    __syncthreads();
    for (int step = BLOCK / 2; step > 0; step >>= 1) {
        if (tid < step) s[tid] += s[tid + step];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}

__global__ void finish_norm(const float* partial, float* out, int m) {
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
    if (tid == 0) out[0] = sqrtf(s[0]);
}

extern "C" void solve(const float* x, float* out, int n) {
    int blocks = (n + BLOCK - 1) / BLOCK;
    if (blocks > 512) blocks = 512;
    float* partial = nullptr;
    cudaMalloc(&partial, sizeof(float) * blocks);
    sumsq_partial<<<blocks, BLOCK>>>(x, partial, n);
    finish_norm<<<1, BLOCK>>>(partial, out, blocks);
    cudaFree(partial);
}
