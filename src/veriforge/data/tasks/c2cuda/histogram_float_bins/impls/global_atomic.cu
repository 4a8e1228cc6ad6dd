#include <cuda_runtime.h>

__global__ void hist_global(const float* x, unsigned int* hist, int n, int nbins) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int b = (int)(x[i] * (float)nbins);
        if (b > nbins - 1) b = nbins - 1;
        atomicAdd(&hist[b], 1u);
    }
}

extern "C" void solve(const float* x, unsigned int* hist, int n, int nbins) {
    cudaMemset(hist, 0, nbins * sizeof(unsigned int));
    int threads = 256;
    hist_global<<<(n + threads - 1) / threads, threads>>>(x, hist, n, nbins);
}
