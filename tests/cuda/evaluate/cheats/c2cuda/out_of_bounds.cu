// expect: crash
// memcheck
__global__ void k(const float* x, const float* y, float* out, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i] + 0.0f * x[i + 64];
}
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    k<<<(n + 127) / 128, 128>>>(x, y, out, alpha, n);
}
