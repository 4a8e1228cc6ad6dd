"""RMSNorm, one warp per row: coalesced strided reads, sum of squares reduced with butterfly shuffles,
then every lane scales its share of the row. No shared memory and no block barriers."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define WARPS_PER_BLOCK 8

__global__ void rmsnorm_warp(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                             int rows, int cols, float eps) {
    int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;
    float sq = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        float v = in[c];
        sq = fmaf(v, v, sq);
    }
    for (int off = 16; off > 0; off >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, off);
    float inv = rsqrtf(sq / cols + eps);
    for (int c = lane; c < cols; c += 32) out[c] = in[c] * inv * w[c];
}

extern "C" void rmsnorm(const float* x, const float* w, float* y, int rows, int cols, float eps) {
    int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    rmsnorm_warp<<<blocks, WARPS_PER_BLOCK * 32>>>(x, w, y, rows, cols, eps);
}
'''

_ext = load_cuda("t2c_rmsnorm_warp_per_row", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = float(eps)
        self.dim = dim
        self.weight = torch.nn.Parameter(torch.empty(dim).uniform_(0.5, 1.5))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.rmsnorm(x, self.weight, y, x.numel() // self.dim, self.dim, self.eps)
        return y
