#include <cuda_runtime.h>

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

extern "C" void solve(const float* a, const float* b, float* c, int n) {
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    add_kernel<<<blocks, threads>>>(a, b, c, n);
}
