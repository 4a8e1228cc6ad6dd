#include <cuda_runtime.h>

__global__ void conv1d_naive(const float* x, const float* wk, float* y, int m, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {
        float s = 0.0f;
        for (int j = 0; j < k; ++j) {
            s += x[i + j] * wk[j];
        }
        y[i] = s;
    }
}

extern "C" void solve(const float* x, const float* wk, float* y, int n, int k) {
    int m = n - k + 1;
    int threads = 256;
    conv1d_naive<<<(m + threads - 1) / threads, threads>>>(x, wk, y, m, k);
}
