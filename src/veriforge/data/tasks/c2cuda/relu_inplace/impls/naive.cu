#include <cuda_runtime.h>

__global__ void relu_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (x[i] < 0.0f) {
            x[i] = 0.0f;
        }
    }
}

extern "C" void solve(float* x, int n) {
    int threads = 256;
    relu_kernel<<<(n + threads - 1) / threads, threads>>>(x, n);
}
