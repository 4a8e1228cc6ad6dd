/* Serial reference: C (M x N) = A (M x K) * B^T where B is N x K; all row-major. */
void reference(const float* A, const float* B, float* C, int M, int N, int K) {
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) acc += A[(long)i * K + k] * B[(long)j * K + k];
            C[(long)i * N + j] = acc;
        }
    }
}
