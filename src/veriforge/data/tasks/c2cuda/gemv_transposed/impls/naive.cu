// One thread per column. Loads happen to coalesce (neighbouring threads, neighbouring columns), but
// there are only N threads and each runs a serial loop of length M.
__global__ void gemv_t_naive(const float* A, const float* x, float* y, int M, int N) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < N) {
        float acc = 0.0f;
        for (int i = 0; i < M; ++i) acc += A[i * N + j] * x[i];
        y[j] = acc;
    }
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    int threads = 128;
    gemv_t_naive<<<(N + threads - 1) / threads, threads>>>(A, x, y, M, N);
}
