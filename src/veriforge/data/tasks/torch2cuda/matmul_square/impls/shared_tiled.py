"""Square matmul with 16x16 shared-memory tiles: each block loads a tile of A and a tile of B once
(coalesced), synchronises, and every thread does 16 multiply-adds from shared memory: global traffic
drops by the tile width. Out-of-range tile elements are loaded as 0 so any N works."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define TILE 16

__global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        As[ty][tx] = (row < n && t + tx < n) ? A[row * n + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < n && col < n) ? B[(t + ty) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < n && col < n) C[row * n + col] = acc;
}

extern "C" void matmul(const float* A, const float* B, float* C, int n) {
    dim3 block(TILE, TILE);
    dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    matmul_tiled<<<grid, block>>>(A, B, C, n);
}
'''

_ext = load_cuda("t2c_matmul_square_shared_tiled", CUDA_SRC)


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
