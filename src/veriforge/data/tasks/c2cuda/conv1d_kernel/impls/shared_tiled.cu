#include <cuda_runtime.h>

#define BLOCK 256

// Dynamic shared layout: [0, k) kernel, then BLOCK + k - 1 signal values.
__global__ void conv1d_shared(const float* __restrict__ x, const float* __restrict__ wk, float* __restrict__ y,
                              int n, int k) {
    extern __shared__ float smem[];
    float* sw = smem;
    float* sx = smem + k;
    int m = n - k + 1;
    int base = blockIdx.x * BLOCK;
    for (int j = threadIdx.x; j < k; j += BLOCK) sw[j] = wk[j];
    for (int j = threadIdx.x; j < BLOCK + k - 1; j += BLOCK) {
        int g = base + j;
        sx[j] = g < n ? x[g] : 0.0f;
    }
    __syncthreads();
    int i = base + threadIdx.x;
    if (i < m) {
        float s = 0.0f;
        for (int j = 0; j < k; ++j) s = fmaf(sx[threadIdx.x + j], sw[j], s);
        y[i] = s;
    }
}

extern "C" void solve(const float* x, const float* wk, float* y, int n, int k) {
    int m = n - k + 1;
    int blocks = (m + BLOCK - 1) / BLOCK;
    size_t smem = sizeof(float) * (size_t)(k + BLOCK + k - 1);
    conv1d_shared<<<blocks, BLOCK, smem>>>(x, wk, y, n, k);
}
