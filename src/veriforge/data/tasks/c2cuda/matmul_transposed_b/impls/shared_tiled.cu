// Both operands are K-contiguous, so the block loads a 16(row) x 16(k) tile of A and of B with threadIdx.x
// walking K (coalesced), then reads Bs transposed from shared memory. Padding avoids bank conflicts on
// the column-wise Bs reads.
#define TS 16

__global__ void matmul_nt_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                int M, int N, int K) {
    __shared__ float As[TS][TS + 1];   // As[i][k]
    __shared__ float Bs[TS][TS + 1];   // Bs[j][k]
    int tx = threadIdx.x, ty = threadIdx.y;
    int i = blockIdx.y * TS + ty;
    int j = blockIdx.x * TS + tx;
    int jLoad = blockIdx.x * TS + ty;   // B row loaded by this thread (row ty of the B tile)
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {
        int k = k0 + tx;
        As[ty][tx] = (i < M && k < K) ? A[i * K + k] : 0.0f;
        Bs[ty][tx] = (jLoad < N && k < K) ? B[jLoad * K + k] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TS; ++kk) acc += As[ty][kk] * Bs[tx][kk];
        __syncthreads();
    }
    if (i < M && j < N) C[i * N + j] = acc;
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(TS, TS);
    dim3 grid((N + TS - 1) / TS, (M + TS - 1) / TS);
    matmul_nt_tiled<<<grid, block>>>(A, B, C, M, N, K);
}
