/* Serial reference: C[i][j] = x[i] * y[j], C row-major M x N. */
void reference(const float* x, const float* y, float* C, int M, int N) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            C[(long)i * N + j] = x[i] * y[j];
}
