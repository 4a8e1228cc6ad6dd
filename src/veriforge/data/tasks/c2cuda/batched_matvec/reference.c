/* Serial reference: y[b] = A[b] * x[b] for each batch entry; A[b] is M x N row-major. */
void reference(const float* A, const float* x, float* y, int batch, int M, int N) {
    for (int b = 0; b < batch; ++b) {
        for (int i = 0; i < M; ++i) {
            const float* a = A + ((long)b * M + i) * N;
            const float* v = x + (long)b * N;
            float acc = 0.0f;
            for (int j = 0; j < N; ++j) acc += a[j] * v[j];
            y[(long)b * M + i] = acc;
        }
    }
}
