#include <cuda_runtime.h>

__global__ void sigmoid_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = 1.0f / (1.0f + expf(-x[i]));
    }
}

extern "C" void solve(const float* x, float* y, int n) {
    int threads = 256;
    sigmoid_kernel<<<(n + threads - 1) / threads, threads>>>(x, y, n);
}
