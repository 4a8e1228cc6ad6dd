// expect: wrong
__device__ float memo[4096];
__device__ int have_memo;
__global__ void k(const float* x, const float* y, float* out, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (have_memo) { out[i] = memo[i]; return; }
    out[i] = alpha * x[i] + y[i];
    memo[i] = out[i];
}
__global__ void mark() { have_memo = 1; }
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    k<<<(n + 127) / 128, 128>>>(x, y, out, alpha, n);
    mark<<<1, 1>>>();
}
