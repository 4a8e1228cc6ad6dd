#include <cuda_runtime.h>
#include <stdint.h>

// Two float4 per thread per iteration: more bytes in flight per thread for the same instruction count.
__global__ void saxpy_vec4(float alpha, const float4* __restrict__ x4, float4* __restrict__ y4, int n4) {
    int stride = blockDim.x * gridDim.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + stride < n4; i += 2 * stride) {
        float4 xa = x4[i], ya = y4[i];
        float4 xb = x4[i + stride], yb = y4[i + stride];
        ya.x = fmaf(alpha, xa.x, ya.x); ya.y = fmaf(alpha, xa.y, ya.y);
        ya.z = fmaf(alpha, xa.z, ya.z); ya.w = fmaf(alpha, xa.w, ya.w);
        yb.x = fmaf(alpha, xb.x, yb.x); yb.y = fmaf(alpha, xb.y, yb.y);
        yb.z = fmaf(alpha, xb.z, yb.z); yb.w = fmaf(alpha, xb.w, yb.w);
        y4[i] = ya;
        y4[i + stride] = yb;
    }
    if (i < n4) {
        float4 xa = x4[i], ya = y4[i];
        ya.x = fmaf(alpha, xa.x, ya.x); ya.y = fmaf(alpha, xa.y, ya.y);
        ya.z = fmaf(alpha, xa.z, ya.z); ya.w = fmaf(alpha, xa.w, ya.w);
        y4[i] = ya;
    }
}

__global__ void saxpy_tail(float alpha, const float* x, float* y, int start, int n) {
    int i = start + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(alpha, x[i], y[i]);
}

extern "C" void solve(float alpha, const float* x, float* y, int n) {
    const int threads = 256;
    if (((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) != 0) {
        saxpy_tail<<<(n + threads - 1) / threads, threads>>>(alpha, x, y, 0, n);
        return;
    }
    int n4 = n / 4;
    if (n4 > 0) {
        int blocks = (n4 + 2 * threads - 1) / (2 * threads);
        if (blocks > 1024) blocks = 1024;
        saxpy_vec4<<<blocks, threads>>>(alpha, reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
    }
    int rest = n - n4 * 4;
    if (rest > 0) {
        saxpy_tail<<<1, 32>>>(alpha, x, y, n4 * 4, n);
    }
}
