// expect: differs when threads run in another order
// Each thread finishes its left neighbour's element from shared memory without __syncthreads():
// right whenever threads happen to run in index order (as the CPU runtime runs them), a data race
// on a GPU. Only re-running with threads in reverse order shows it.
__global__ void k(const float* x, const float* y, float* out, float alpha, int n) {
    __shared__ float sx[128];
    int t = threadIdx.x, i = blockIdx.x * 128 + t;
    sx[t] = i < n ? alpha * x[i] : 0.f;
    if (t > 0 && i - 1 < n) out[i - 1] = sx[t - 1] + y[i - 1];
    if ((t == 127 || i == n - 1) && i < n) out[i] = sx[t] + y[i];
}
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    k<<<(n + 127) / 128, 128>>>(x, y, out, alpha, n);
}
