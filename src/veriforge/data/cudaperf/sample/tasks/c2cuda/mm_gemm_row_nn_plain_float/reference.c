/* Serial reference: C = op(A) * op(B); row-major storage, op(A) = N,
   op(B) = N. */
void reference(const float* A, const float* B, float* C, int M, int N, int K) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double acc = 0;
            for (int k = 0; k < K; ++k) acc += (double)A[i * K + k] * B[k * N + j];
            C[i * N + j] = (float)(acc);
        }
}
