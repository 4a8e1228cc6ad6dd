#include <cuda_runtime.h>

__global__ void hist_shared(const float* x, unsigned int* hist, int n, int nbins) {
    extern __shared__ unsigned int local[];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    float fb = (float)nbins;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        int b = min((int)(x[i] * fb), nbins - 1);
        atomicAdd(&local[b], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
        unsigned int c = local[b];
        if (c) atomicAdd(&hist[b], c);
    }
}

extern "C" void solve(const float* x, unsigned int* hist, int n, int nbins) {
    cudaMemset(hist, 0, nbins * sizeof(unsigned int));
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    if (blocks > 240) blocks = 240;
    hist_shared<<<blocks, threads, nbins * sizeof(unsigned int)>>>(x, hist, n, nbins);
}
