#include <cuda_runtime.h>
#include <stdint.h>

__global__ void relu_vec4(float4* __restrict__ x4, int n4) {
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x4[i];
        v.x = fmaxf(v.x, 0.0f);
        v.y = fmaxf(v.y, 0.0f);
        v.z = fmaxf(v.z, 0.0f);
        v.w = fmaxf(v.w, 0.0f);
        x4[i] = v;
    }
}

__global__ void relu_tail(float* x, int start, int n) {
    int i = start + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fmaxf(x[i], 0.0f);
}

extern "C" void solve(float* x, int n) {
    const int threads = 256;
    int start = 0;
    if ((reinterpret_cast<uintptr_t>(x) & 15) == 0 && n >= 4) {
        int n4 = n / 4;
        int blocks = (n4 + threads - 1) / threads;
        if (blocks > 2048) blocks = 2048;
        relu_vec4<<<blocks, threads>>>(reinterpret_cast<float4*>(x), n4);
        start = n4 * 4;
    }
    if (start < n) {
        int rest = n - start;
        relu_tail<<<(rest + threads - 1) / threads, threads>>>(x, start, n);
    }
}
