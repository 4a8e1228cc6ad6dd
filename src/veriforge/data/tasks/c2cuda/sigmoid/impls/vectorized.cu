#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ float stable_sigmoid(float v) {
    float e = expf(-fabsf(v));
    float r = __frcp_rn(1.0f + e);
    return v >= 0.0f ? r : e * r;
}

__global__ void sigmoid_vec4(const float4* __restrict__ x4, float4* __restrict__ y4, int n4) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += blockDim.x * gridDim.x) {
        float4 v = x4[i];
        float4 r;
        r.x = stable_sigmoid(v.x);
        r.y = stable_sigmoid(v.y);
        r.z = stable_sigmoid(v.z);
        r.w = stable_sigmoid(v.w);
        y4[i] = r;
    }
}

__global__ void sigmoid_scalar(const float* __restrict__ x, float* __restrict__ y, int start, int n) {
    for (int i = start + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = stable_sigmoid(x[i]);
    }
}

extern "C" void solve(const float* x, float* y, int n) {
    const int threads = 256;
    int start = 0;
    if (((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0) {
        int n4 = n / 4;
        if (n4 > 0) {
            int blocks = (n4 + threads - 1) / threads;
            if (blocks > 1024) blocks = 1024;
            sigmoid_vec4<<<blocks, threads>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
        }
        start = n4 * 4;
    }
    if (start < n) {
        int rest = n - start;
        int blocks = (rest + threads - 1) / threads;
        if (blocks > 1024) blocks = 1024;
        sigmoid_scalar<<<blocks, threads>>>(x, y, start, n);
    }
}
