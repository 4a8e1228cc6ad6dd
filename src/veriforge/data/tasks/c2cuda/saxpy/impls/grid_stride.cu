#include <cuda_runtime.h>

__global__ void saxpy_grid_stride(float alpha, const float* __restrict__ x, float* __restrict__ y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = fmaf(alpha, x[i], y[i]);
    }
}

extern "C" void solve(float alpha, const float* x, float* y, int n) {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    if (sms <= 0) sms = 16;
    int threads = 256;
    int blocks = sms * 4;
    int needed = (n + threads - 1) / threads;
    if (blocks > needed) blocks = needed;
    saxpy_grid_stride<<<blocks, threads>>>(alpha, x, y, n);
}
