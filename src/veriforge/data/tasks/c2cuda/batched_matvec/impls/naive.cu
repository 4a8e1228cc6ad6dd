// Flatten (b, i) into one row index; one thread per row, serial dot product. Lanes of a warp read rows
// N floats apart, so nothing coalesces.
__global__ void bmv_naive(const float* A, const float* x, float* y, int batch, int M, int N) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < batch * M) {
        int b = r / M;
        const float* a = A + (long long)r * N;
        const float* v = x + (long long)b * N;
        float acc = 0.0f;
        for (int j = 0; j < N; ++j) acc += a[j] * v[j];
        y[r] = acc;
    }
}

extern "C" void solve(const float* A, const float* x, float* y, int batch, int M, int N) {
    int rows = batch * M;
    bmv_naive<<<(rows + 127) / 128, 128>>>(A, x, y, batch, M, N);
}
