#include <cuda_runtime.h>

__global__ void hist_global(const unsigned char* data, unsigned int* hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&hist[data[i]], 1u);
    }
}

extern "C" void solve(const unsigned char* data, unsigned int* hist, int n) {
    cudaMemset(hist, 0, 256 * sizeof(unsigned int));
    int threads = 256;
    hist_global<<<(n + threads - 1) / threads, threads>>>(data, hist, n);
}
