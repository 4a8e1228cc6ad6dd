#include <cuda_runtime.h>

// Textbook power form: sum of coef[k] * x^k with x^k built by repeated multiplication from the
// previous power. Reads every coefficient from global memory in every thread.
__global__ void poly_naive(const float* x, const float* coef, float* y, int n, int degree) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float xi = x[i];
        float sum = 0.0f;
        float p = 1.0f;
        for (int k = 0; k <= degree; ++k) {
            sum += coef[k] * p;
            p *= xi;
        }
        y[i] = sum;
    }
}

extern "C" void solve(const float* x, const float* coef, float* y, int n, int degree) {
    int threads = 256;
    poly_naive<<<(n + threads - 1) / threads, threads>>>(x, coef, y, n, degree);
}
