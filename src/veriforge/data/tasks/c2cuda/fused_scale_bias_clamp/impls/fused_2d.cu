#include <cuda_runtime.h>

__global__ void fused_2d_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                float* __restrict__ y, float scale, float lo, float hi, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        float v = fmaf(scale, x[r * cols + c], bias[c]);
        y[r * cols + c] = fminf(fmaxf(v, lo), hi);
    }
}

extern "C" void solve(const float* x, const float* bias, float* y, float scale, float lo, float hi,
                      int rows, int cols) {
    dim3 block(64, 4);
    dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    fused_2d_kernel<<<grid, block>>>(x, bias, y, scale, lo, hi, rows, cols);
}
