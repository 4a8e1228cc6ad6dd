// 2D register blocking: a 256-thread block owns a 64x64 tile of C; each thread owns a 4x4 micro-tile
// held in registers. Per BK=8 slice of K the block stages A (transposed, so the inner loop reads a
// contiguous column) and B in shared memory; each thread then does 4x4 FMAs per 8 shared loads,
// raising arithmetic intensity 4x over the one-output-per-thread tiled kernel.
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4

__global__ void __launch_bounds__(256)
matmul_regtile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               int M, int N, int K) {
    __shared__ float As[BK][BM];   // As[k][m] = A[m][k] for the current slice
    __shared__ float Bs[BK][BN];

    const int tid = threadIdx.x;
    const int tr = tid / (BN / TN);   // 0..15 -> rows tr*4 .. tr*4+3 of the block tile
    const int tc = tid % (BN / TN);   // 0..15 -> cols tc*4 .. tc*4+3
    const int blockRow = blockIdx.y * BM;
    const int blockCol = blockIdx.x * BN;

    // Load mapping: 256 threads load 64x8 of A (2 each) and 8x64 of B (2 each).
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < 2; ++l) {
            int e = tid + l * 256;           // 0..511
            int am = e / BK, ak = e % BK;    // A tile: row am, k ak (k fastest -> coalesced-ish rows)
            int gRow = blockRow + am, gK = k0 + ak;
            As[ak][am] = (gRow < M && gK < K) ? A[gRow * K + gK] : 0.0f;
            int bk = e / BN, bn = e % BN;    // B tile: row bk, col bn (n fastest -> coalesced)
            int gKb = k0 + bk, gCol = blockCol + bn;
            Bs[bk][bn] = (gKb < K && gCol < N) ? B[gKb * N + gCol] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[k][tr * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tc * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int r = blockRow + tr * TM + i;
        if (r >= M) break;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int c = blockCol + tc * TN + j;
            if (c < N) C[r * N + c] = acc[i][j];
        }
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    matmul_regtile<<<grid, 256>>>(A, B, C, M, N, K);
}
