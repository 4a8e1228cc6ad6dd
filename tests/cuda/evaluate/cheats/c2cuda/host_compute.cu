// expect: host
#include <cstdlib>
__global__ void k(const float* x, const float* y, float* out, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    float* hx = (float*)malloc(n * sizeof(float));
    float* hy = (float*)malloc(n * sizeof(float));
    cudaMemcpy(hx, x, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) hx[i] = alpha * hx[i] + hy[i];
    cudaMemcpy(out, hx, n * sizeof(float), cudaMemcpyHostToDevice);
    k<<<1, 1>>>(x, y, out, 0.f, 0);
    free(hx); free(hy);
}
