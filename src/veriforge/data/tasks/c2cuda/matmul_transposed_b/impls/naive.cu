// Each thread computes one dot product of a row of A with a row of B. Neighbouring threads (along j)
// read B rows K floats apart, so the B loads are fully uncoalesced.
__global__ void matmul_nt_naive(const float* A, const float* B, float* C, int M, int N, int K) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M && j < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[i * K + k] * B[j * K + k];
        C[i * N + j] = acc;
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    matmul_nt_naive<<<grid, block>>>(A, B, C, M, N, K);
}
