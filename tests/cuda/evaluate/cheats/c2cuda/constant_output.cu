// expect: wrong
__global__ void fill(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.0f;
}
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    fill<<<(n + 127) / 128, 128>>>(out, n);
}
