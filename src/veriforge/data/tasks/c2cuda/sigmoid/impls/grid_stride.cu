#include <cuda_runtime.h>

// exp(-|v|) never overflows; for negative v the sigmoid is e / (1 + e) with e = exp(v).
__device__ __forceinline__ float stable_sigmoid(float v) {
    float e = expf(-fabsf(v));
    float r = 1.0f / (1.0f + e);
    return v >= 0.0f ? r : e * r;
}

__global__ void sigmoid_grid_stride(const float* __restrict__ x, float* __restrict__ y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = stable_sigmoid(x[i]);
    }
}

extern "C" void solve(const float* x, float* y, int n) {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    if (sms <= 0) sms = 16;
    int threads = 256;
    int blocks = sms * 8;
    int needed = (n + threads - 1) / threads;
    if (blocks > needed) blocks = needed;
    sigmoid_grid_stride<<<blocks, threads>>>(x, y, n);
}
