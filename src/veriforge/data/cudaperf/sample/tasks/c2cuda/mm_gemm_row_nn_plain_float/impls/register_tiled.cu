#define RELU(v) ((v) > 0.0f ? (v) : 0.0f)

// Register blocking: a 256-thread block owns a 64x64 tile of C and each thread a 4x4 micro-tile kept in
// registers. Per BK = 8 slice the block stages op(A) (as As[k][i]) and op(B) (as Bs[k][j]) in shared
// memory with loads ordered along each operand's contiguous index; each thread then performs 16 FMAs
// per 8 shared loads (4x the arithmetic intensity of the one-output-per-thread tiled kernel).
#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4

__global__ void __launch_bounds__(256) gemm_regtile(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    int tr = tid / 16, tc = tid % 16;
    const int bi = blockIdx.y * BM, bj = blockIdx.x * BN;
    float acc_r[TM][TN];
#pragma unroll
    for (int x = 0; x < TM; ++x)
#pragma unroll
        for (int y = 0; y < TN; ++y) acc_r[x][y] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < 2; ++l) {
            int e = tid + l * 256;
            int am = e / BK, ak = e % BK;
            int gi = bi + am, gk = k0 + ak;
            As[ak][am] = (gi < M && gk < K) ? A[(long long)(gi) * K + (gk)] : (float)0;
            int bk = e / BN, bn = e % BN;
            int gkb = k0 + bk, gj = bj + bn;
            Bs[bk][bn] = (gkb < K && gj < N) ? B[(long long)(gkb) * N + (gj)] : (float)0;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int x = 0; x < TM; ++x) a[x] = As[k][tr * TM + x];
#pragma unroll
            for (int y = 0; y < TN; ++y) b[y] = Bs[k][tc * TN + y];
#pragma unroll
            for (int x = 0; x < TM; ++x)
#pragma unroll
                for (int y = 0; y < TN; ++y) acc_r[x][y] += a[x] * b[y];
        }
        __syncthreads();
    }
#pragma unroll
    for (int x = 0; x < TM; ++x) {
        int i = bi + tr * TM + x;
        if (i >= M) break;
#pragma unroll
        for (int y = 0; y < TN; ++y) {
            int j = bj + tc * TN + y;
            if (j < N) {
                float acc = acc_r[x][y];
                C[(long long)(i) * N + (j)] = (float)(acc);
            }
        }
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    if (M <= 0 || N <= 0) return;
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    gemm_regtile<<<grid, 256>>>(A, B, C, M, N, K);
}
