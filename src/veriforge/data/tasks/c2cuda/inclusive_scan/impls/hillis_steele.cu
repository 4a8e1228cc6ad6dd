#include <cuda_runtime.h>

__global__ void hs_step(const float* in, float* out, int n, int offset) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = i >= offset ? in[i] + in[i - offset] : in[i];
    }
}

extern "C" void solve(const float* x, float* y, int n) {
    float* tmp = nullptr;
    cudaMalloc(&tmp, sizeof(float) * n);
    cudaMemcpy(y, x, sizeof(float) * n, cudaMemcpyDeviceToDevice);
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    float* cur = y;
    float* nxt = tmp;
    for (int offset = 1; offset < n; offset <<= 1) {
        hs_step<<<blocks, threads>>>(cur, nxt, n, offset);
        float* t = cur;
        cur = nxt;
        nxt = t;
    }
    if (cur != y) {
        cudaMemcpy(y, cur, sizeof(float) * n, cudaMemcpyDeviceToDevice);
    }
    cudaFree(tmp);
}
