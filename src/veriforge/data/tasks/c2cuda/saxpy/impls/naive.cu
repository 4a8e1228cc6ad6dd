#include <cuda_runtime.h>

__global__ void saxpy_kernel(float alpha, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = alpha * x[i] + y[i];
    }
}

extern "C" void solve(float alpha, const float* x, float* y, int n) {
    int threads = 128;
    int blocks = (n + threads - 1) / threads;
    saxpy_kernel<<<blocks, threads>>>(alpha, x, y, n);
}
