#include <cuda_runtime.h>

__global__ void scale_kernel(const float* x, float* y, float scale, int total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) y[i] = scale * x[i];
}

__global__ void bias_kernel(float* y, const float* bias, int total, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) y[i] = y[i] + bias[i % cols];
}

__global__ void clamp_kernel(float* y, float lo, float hi, int total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        float v = y[i];
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        y[i] = v;
    }
}

extern "C" void solve(const float* x, const float* bias, float* y, float scale, float lo, float hi,
                      int rows, int cols) {
    int total = rows * cols;
    int threads = 256;
    int blocks = (total + threads - 1) / threads;
    scale_kernel<<<blocks, threads>>>(x, y, scale, total);
    bias_kernel<<<blocks, threads>>>(y, bias, total, cols);
    clamp_kernel<<<blocks, threads>>>(y, lo, hi, total);
}
