// Register-blocked A*B^T: a 256-thread block computes a 64x64 C tile, each thread a 4x4 micro-tile.
// Tiles of A (64 x BK) and B (64 x BK) are read K-contiguous from global (coalesced along K) and stored
// K-major in shared memory, so the inner product loop reads 4 A values and 4 B values per k and issues
// 16 FMAs. The extra column of padding keeps the transposing shared stores conflict-free.
#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4

__global__ void __launch_bounds__(256)
matmul_nt_regtile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K) {
    __shared__ float As[BK][BM + 1];   // As[k][m]
    __shared__ float Bs[BK][BN + 1];   // Bs[k][n]
    const int tid = threadIdx.x;
    const int tr = tid / 16, tc = tid % 16;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        // 64 x 16 = 1024 elements per operand, 4 per thread; k is the fastest index (coalesced).
#pragma unroll
        for (int l = 0; l < 4; ++l) {
            int e = tid + l * 256;
            int r = e / BK, k = e % BK;
            int gk = k0 + k;
            int ga = row0 + r, gb = col0 + r;
            As[k][r] = (ga < M && gk < K) ? A[ga * K + gk] : 0.0f;
            Bs[k][r] = (gb < N && gk < K) ? B[gb * K + gk] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int m = 0; m < TM; ++m) a[m] = As[k][tr + 16 * m];
#pragma unroll
            for (int n = 0; n < TN; ++n) b[n] = Bs[k][tc + 16 * n];
#pragma unroll
            for (int m = 0; m < TM; ++m)
#pragma unroll
                for (int n = 0; n < TN; ++n) acc[m][n] += a[m] * b[n];
        }
        __syncthreads();
    }
    // Strided micro-tile (rows tr + 16m, cols tc + 16n): consecutive threads write consecutive columns.
#pragma unroll
    for (int m = 0; m < TM; ++m) {
        int r = row0 + tr + 16 * m;
#pragma unroll
        for (int n = 0; n < TN; ++n) {
            int c = col0 + tc + 16 * n;
            if (r < M && c < N) C[r * N + c] = acc[m][n];
        }
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    matmul_nt_regtile<<<grid, 256>>>(A, B, C, M, N, K);
}
