#include <cuda_runtime.h>

#define THREADS 256
#define ITEMS 4
#define TILE (THREADS * ITEMS)

// Each thread computes ITEMS consecutive outputs. A sliding window of ITEMS signal values lives in
// registers: per kernel tap it loads one new x value and one (broadcast) weight for ITEMS fmas.
__global__ void conv1d_register(const float* __restrict__ x, const float* __restrict__ wk, float* __restrict__ y,
                                int n, int k) {
    extern __shared__ float smem[];
    float* sw = smem;
    float* sx = smem + k;
    int m = n - k + 1;
    int base = blockIdx.x * TILE;
    for (int j = threadIdx.x; j < k; j += THREADS) sw[j] = __ldg(wk + j);
    for (int j = threadIdx.x; j < TILE + k - 1 + ITEMS; j += THREADS) {
        int g = base + j;
        sx[j] = g < n ? __ldg(x + g) : 0.0f;
    }
    __syncthreads();
    const float* p = sx + threadIdx.x * ITEMS;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    float x0 = p[0], x1 = p[1], x2 = p[2], x3 = p[3];
    for (int j = 0; j < k; ++j) {
        float wj = sw[j];
        a0 = fmaf(x0, wj, a0);
        a1 = fmaf(x1, wj, a1);
        a2 = fmaf(x2, wj, a2);
        a3 = fmaf(x3, wj, a3);
        x0 = x1;
        x1 = x2;
        x2 = x3;
        x3 = p[j + 4];
    }
    __syncthreads();
    // Stage results through shared memory for coalesced stores.
    sx[threadIdx.x * ITEMS + 0] = a0;
    sx[threadIdx.x * ITEMS + 1] = a1;
    sx[threadIdx.x * ITEMS + 2] = a2;
    sx[threadIdx.x * ITEMS + 3] = a3;
    __syncthreads();
    for (int j = threadIdx.x; j < TILE; j += THREADS) {
        int g = base + j;
        if (g < m) y[g] = sx[j];
    }
}

extern "C" void solve(const float* x, const float* wk, float* y, int n, int k) {
    int m = n - k + 1;
    int blocks = (m + TILE - 1) / TILE;
    size_t smem = sizeof(float) * (size_t)(k + TILE + k - 1 + ITEMS);
    conv1d_register<<<blocks, THREADS, smem>>>(x, wk, y, n, k);
}
