"""Square matmul with register tiling: a 16x16 thread block computes a 64x64 tile of C, each thread a 4x4
micro-tile held in 16 registers. Per k step a thread reads 4 values of A and 4 of B from shared memory
and does 16 FMAs (4x the FMA-per-load ratio of the simple tiled kernel). Shared tiles: A 64x16, B 16x64,
each filled cooperatively by the 256 threads (4 elements each); edges are zero-padded for any N."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4

__global__ void matmul_regtile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
    __shared__ float As[BK][BM + 1];   // stored transposed: As[k][m]
    __shared__ float Bs[BK][BN];
    int tx = threadIdx.x, ty = threadIdx.y;
    int tid = ty * 16 + tx;
    int row0 = blockIdx.y * BM;
    int col0 = blockIdx.x * BN;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int t = 0; t < n; t += BK) {
        // A tile: 64 rows x 16 k = 1024 values, 4 per thread; consecutive threads take consecutive k.
        for (int e = tid; e < BM * BK; e += 256) {
            int m = e / BK, k = e % BK;
            int r = row0 + m, c = t + k;
            As[k][m] = (r < n && c < n) ? A[r * n + c] : 0.0f;
        }
        // B tile: 16 k x 64 cols, consecutive threads take consecutive columns (coalesced).
        for (int e = tid; e < BK * BN; e += 256) {
            int k = e / BN, cc = e % BN;
            int r = t + k, c = col0 + cc;
            Bs[k][cc] = (r < n && c < n) ? B[r * n + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[k][ty * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int r = row0 + ty * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int c = col0 + tx + 16 * j;   // columns interleaved by 16 so a warp's stores stay coalesced
            if (r < n && c < n) C[r * n + c] = acc[i][j];
        }
    }
}

extern "C" void matmul(const float* A, const float* B, float* C, int n) {
    dim3 block(16, 16);
    dim3 grid((n + BN - 1) / BN, (n + BM - 1) / BM);
    matmul_regtile<<<grid, block>>>(A, B, C, n);
}
'''

_ext = load_cuda("t2c_matmul_square_register_tiled", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A = A.contiguous()
        B = B.contiguous()
        n = A.size(0)
        C = torch.empty(n, n, dtype=A.dtype, device=A.device)
        _ext.matmul(A, B, C, n)
        return C
