#define RELU(v) ((v) > 0.0f ? (v) : 0.0f)

// 16x16 shared-memory tiles of op(A) and op(B) per K step: each global element is read once per block.
// Tile loads walk the operand's contiguous index with threadIdx.x (coalesced for this layout) and the
// padded tiles keep the transposed shared-memory stores conflict-free; the thread -> C mapping puts
// threadIdx.x on C's contiguous index so the epilogue stores coalesce too.
#define TS 16

__global__ void gemm_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TS][TS + 1];   // As[i][k]
    __shared__ float Bs[TS][TS + 1];   // Bs[k][j]
    int tx = threadIdx.x, ty = threadIdx.y;
    int bi = blockIdx.y * TS, bj = blockIdx.x * TS;
    int li = ty, lj = tx;
    int i = bi + li, j = bj + lj;
    float acc = 0;
    for (int k0 = 0; k0 < K; k0 += TS) {
        { int gi = bi + ty, gk = k0 + tx; As[ty][tx] = (gi < M && gk < K) ? A[(long long)(gi) * K + (gk)] : (float)0; }
        { int gk = k0 + ty, gj = bj + tx; Bs[ty][tx] = (gk < K && gj < N) ? B[(long long)(gk) * N + (gj)] : (float)0; }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TS; ++k) acc += As[li][k] * Bs[k][lj];
        __syncthreads();
    }
    if (i < M && j < N) {
        C[(long long)(i) * N + (j)] = (float)(acc);
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    if (M <= 0 || N <= 0) return;
    dim3 block(TS, TS);
    dim3 grid((N + TS - 1) / TS, (M + TS - 1) / TS);
    gemm_tiled<<<grid, block>>>(A, B, C, M, N, K);
}
