#include <cuda_runtime.h>

__global__ void add_grid_stride(const float* __restrict__ a, const float* __restrict__ b,
                                float* __restrict__ c, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        c[i] = a[i] + b[i];
    }
}

extern "C" void solve(const float* a, const float* b, float* c, int n) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (sms <= 0) sms = 16;
    const int threads = 256;
    int blocks = sms * 8;                       // enough resident warps to hide latency
    int needed = (n + threads - 1) / threads;
    if (blocks > needed) blocks = needed;
    if (blocks < 1) blocks = 1;
    add_grid_stride<<<blocks, threads>>>(a, b, c, n);
}
