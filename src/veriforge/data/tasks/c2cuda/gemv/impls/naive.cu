// One thread per output row. Simple, but at any instant the 32 lanes of a warp read 32 different rows,
// so each load touches a separate cache line.
__global__ void gemv_naive(const float* A, const float* x, float* y, int M, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M) {
        float acc = 0.0f;
        for (int j = 0; j < N; ++j) acc += A[i * N + j] * x[j];
        y[i] = acc;
    }
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    int threads = 128;
    gemv_naive<<<(M + threads - 1) / threads, threads>>>(A, x, y, M, N);
}
