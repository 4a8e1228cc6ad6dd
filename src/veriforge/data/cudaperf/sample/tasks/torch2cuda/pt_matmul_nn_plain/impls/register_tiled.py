"""A @ B (plain epilogue): register_tiled implementation.

32x32 output tiles, each thread accumulates a 2x2 register block from shared-memory tiles
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''#define LDA(i, k) A[(long long)(i) * K + (k)]
#define LDB(k, j) B[(long long)(k) * N + (j)]
#define BATCH_OFFSETS A += (long long)blockIdx.z * M * K; B += (long long)blockIdx.z * K * N; C += (long long)blockIdx.z * M * N;
#define BT 32
#define BK 16
__global__ void mm_reg2x2(const float* A, const float* B, float* C, int M, int N, int K, int batch) {
    BATCH_OFFSETS
    __shared__ float As[BT][BK + 1];
    __shared__ float Bs[BK][BT + 1];
    int tx = threadIdx.x, ty = threadIdx.y;   // 16 x 16 threads, each owns a 2 x 2 block of outputs
    int i0 = blockIdx.y * BT, j0 = blockIdx.x * BT;
    float acc00 = 0.0f, acc01 = 0.0f, acc10 = 0.0f, acc11 = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int r = ty; r < BT; r += 16) {
            int i = i0 + r, k = k0 + tx;
            As[r][tx] = (i < M && k < K) ? LDA(i, k) : 0.0f;
        }
        for (int c = tx; c < BT; c += 16) {
            int j = j0 + c, k = k0 + ty;
            Bs[ty][c] = (k < K && j < N) ? LDB(k, j) : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; ++kk) {
            float a0 = As[ty][kk], a1 = As[ty + 16][kk];
            float b0 = Bs[kk][tx], b1 = Bs[kk][tx + 16];
            acc00 += a0 * b0; acc01 += a0 * b1;
            acc10 += a1 * b0; acc11 += a1 * b1;
        }
        __syncthreads();
    }
    float accs[4] = {acc00, acc01, acc10, acc11};
    for (int q = 0; q < 4; ++q) {
        int i = i0 + ty + 16 * (q >> 1), j = j0 + tx + 16 * (q & 1);
        float acc = accs[q];
        if (i < M && j < N) {
            C[(long long)i * N + j] = acc;
        }
    }
}

extern "C" void run(const float* A, const float* B, float* C, int M, int N, int K, int batch) {
    dim3 block(16, 16);
    dim3 grid((N + BT - 1) / BT, (M + BT - 1) / BT, batch);
    mm_reg2x2<<<grid, block>>>(A, B, C, M, N, K, batch);
}
'''

_ext = load_cuda("pt_matmul_nn_plain_register_tiled", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, A, B):
        A = A.contiguous()
        B = B.contiguous()
        C = torch.empty(A.size(0), B.size(1), dtype=A.dtype, device=A.device)
        _ext.run(A, B, C, A.size(0), B.size(1), A.size(1), 1)
        return C
