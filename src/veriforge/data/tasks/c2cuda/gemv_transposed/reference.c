/* Serial reference: y[j] = sum_i A[i][j] * x[i], A row-major M x N. */
void reference(const float* A, const float* x, float* y, int M, int N) {
    for (int j = 0; j < N; ++j) {
        float acc = 0.0f;
        for (int i = 0; i < M; ++i) acc += A[(long)i * N + j] * x[i];
        y[j] = acc;
    }
}
