#include <cuda_runtime.h>

#define BINS 256

__global__ void hist_shared(const unsigned char* data, unsigned int* hist, int n) {
    __shared__ unsigned int local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        atomicAdd(&local[data[i]], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        unsigned int c = local[b];
        if (c) atomicAdd(&hist[b], c);
    }
}

extern "C" void solve(const unsigned char* data, unsigned int* hist, int n) {
    cudaMemset(hist, 0, BINS * sizeof(unsigned int));
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    if (blocks > 240) blocks = 240;
    hist_shared<<<blocks, threads>>>(data, hist, n);
}
