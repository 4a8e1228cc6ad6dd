/* Serial reference: y[i] = sum_j A[i][j] * x[j], A row-major M x N. */
void reference(const float* A, const float* x, float* y, int M, int N) {
    for (int i = 0; i < M; ++i) {
        float acc = 0.0f;
        for (int j = 0; j < N; ++j) acc += A[(long)i * N + j] * x[j];
        y[i] = acc;
    }
}
