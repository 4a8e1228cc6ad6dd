#include <cuda_runtime.h>

#define R 3
#define THREADS 256
#define ITEMS 4
#define TILE (THREADS * ITEMS)

__constant__ float c_w[2 * R + 1];

// Each thread produces ITEMS consecutive outputs from ITEMS + 2R values held in registers, so every
// loaded x value feeds up to 7 fmas; weights come from the constant cache (uniform across the warp).
__global__ void stencil_register(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float tile[TILE + 2 * R];
    int base = blockIdx.x * TILE;
    for (int k = threadIdx.x; k < TILE + 2 * R; k += THREADS) {
        int g = base - R + k;
        tile[k] = (g >= 0 && g < n) ? x[g] : 0.0f;
    }
    __syncthreads();
    float win[ITEMS + 2 * R];
#pragma unroll
    for (int k = 0; k < ITEMS + 2 * R; ++k) win[k] = tile[threadIdx.x * ITEMS + k];
    float out[ITEMS];
#pragma unroll
    for (int o = 0; o < ITEMS; ++o) {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k <= 2 * R; ++k) s = fmaf(c_w[k], win[o + k], s);
        out[o] = s;
    }
    __syncthreads();
#pragma unroll
    for (int o = 0; o < ITEMS; ++o) tile[threadIdx.x * ITEMS + o] = out[o];
    __syncthreads();
    for (int k = threadIdx.x; k < TILE; k += THREADS) {   // coalesced store through shared memory
        int g = base + k;
        if (g < n) y[g] = tile[k];
    }
}

extern "C" void solve(const float* x, const float* w, float* y, int n) {
    cudaMemcpyToSymbol(c_w, w, sizeof(float) * (2 * R + 1), 0, cudaMemcpyDeviceToDevice);
    int blocks = (n + TILE - 1) / TILE;
    stencil_register<<<blocks, THREADS>>>(x, y, n);
}
