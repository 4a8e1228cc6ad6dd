#include <cuda_runtime.h>

#define MAX_COEF 65

__global__ void poly_shared(const float* __restrict__ x, const float* __restrict__ coef,
                            float* __restrict__ y, int n, int degree) {
    __shared__ float c[MAX_COEF];
    for (int k = threadIdx.x; k <= degree; k += blockDim.x) {
        c[k] = coef[k];
    }
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float xi = x[i];
        float acc = c[degree];
        for (int k = degree - 1; k >= 0; --k) {
            acc = fmaf(acc, xi, c[k]);
        }
        y[i] = acc;
    }
}

extern "C" void solve(const float* x, const float* coef, float* y, int n, int degree) {
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    if (blocks > 512) blocks = 512;
    poly_shared<<<blocks, threads>>>(x, coef, y, n, degree);
}
