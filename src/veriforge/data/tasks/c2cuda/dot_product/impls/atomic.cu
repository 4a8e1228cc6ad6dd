#include <cuda_runtime.h>

__global__ void dot_atomic(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(out, a[i] * b[i]);
    }
}

extern "C" void solve(const float* a, const float* b, float* out, int n) {
    cudaMemset(out, 0, sizeof(float));
    int threads = 256;
    dot_atomic<<<(n + threads - 1) / threads, threads>>>(a, b, out, n);
}
