"""RMSNorm, naive: one thread per row, serial sum of squares, then a serial scaling pass."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void rmsnorm_naive(const float* x, const float* w, float* y, int rows, int cols, float eps) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* in = x + (long long)r * cols;
    float* out = y + (long long)r * cols;
    float sq = 0.0f;
    for (int c = 0; c < cols; ++c) sq += in[c] * in[c];
    float inv = 1.0f / sqrtf(sq / cols + eps);
    for (int c = 0; c < cols; ++c) out[c] = in[c] * inv * w[c];
}

extern "C" void rmsnorm(const float* x, const float* w, float* y, int rows, int cols, float eps) {
    rmsnorm_naive<<<(rows + 127) / 128, 128>>>(x, w, y, rows, cols, eps);
}
'''

_ext = load_cuda("t2c_rmsnorm_naive", CUDA_SRC)


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
