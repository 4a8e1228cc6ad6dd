#include <cuda_runtime.h>

__global__ void count_atomic(const float* x, float threshold, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > threshold) {
        atomicAdd(out, 1);
    }
}

extern "C" void solve(const float* x, float threshold, int* out, int n) {
    cudaMemset(out, 0, sizeof(int));
    int threads = 256;
    count_atomic<<<(n + threads - 1) / threads, threads>>>(x, threshold, out, n);
}
