#include <cuda_runtime.h>

// The matrices are dense, so the 2D problem is really one contiguous array of rows*cols floats. A
// fixed-size grid (a few waves of blocks per SM) strides over it: no 2D index arithmetic, no partially
// idle edge blocks in both dimensions, and block scheduling overhead is paid once per block, not per tile.
#define THREADS 256

__global__ void matrix_add_grid_stride(const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, size_t n, float alpha, float beta) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        C[i] = fmaf(alpha, A[i], beta * B[i]);
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int rows, int cols, float alpha, float beta) {
    size_t n = (size_t)rows * cols;
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (sms <= 0) sms = 1;
    size_t needed = (n + THREADS - 1) / THREADS;
    size_t cap = (size_t)sms * 4;
    int blocks = (int)(needed < cap ? needed : cap);
    if (blocks < 1) blocks = 1;
    matrix_add_grid_stride<<<blocks, THREADS>>>(A, B, C, n, alpha, beta);
}
