#include <cuda_runtime.h>
#include <stdint.h>

#define MAX_COEF 65

// Four independent Horner chains per thread: the fma latency of one chain hides behind the others.
__global__ void poly_vec4(const float* __restrict__ x, const float* __restrict__ coef,
                          float* __restrict__ y, int n, int degree, bool aligned) {
    __shared__ float c[MAX_COEF];
    for (int k = threadIdx.x; k <= degree; k += blockDim.x) {
        c[k] = coef[k];
    }
    __syncthreads();
    int stride = blockDim.x * gridDim.x;
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = aligned ? n / 4 : 0;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        float top = c[degree];
        float4 a = make_float4(top, top, top, top);
        for (int k = degree - 1; k >= 0; --k) {
            float ck = c[k];
            a.x = fmaf(a.x, v.x, ck);
            a.y = fmaf(a.y, v.y, ck);
            a.z = fmaf(a.z, v.z, ck);
            a.w = fmaf(a.w, v.w, ck);
        }
        y4[i] = a;
    }
    for (int i = n4 * 4 + tid; i < n; i += stride) {
        float xi = x[i];
        float acc = c[degree];
        for (int k = degree - 1; k >= 0; --k) {
            acc = fmaf(acc, xi, c[k]);
        }
        y[i] = acc;
    }
}

extern "C" void solve(const float* x, const float* coef, float* y, int n, int degree) {
    const int threads = 128;
    bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
    int work = aligned ? (n + 3) / 4 : n;
    int blocks = (work + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;
    if (blocks < 1) blocks = 1;
    poly_vec4<<<blocks, threads>>>(x, coef, y, n, degree, aligned);
}
