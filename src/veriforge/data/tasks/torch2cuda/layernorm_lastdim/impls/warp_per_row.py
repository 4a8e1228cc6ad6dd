"""LayerNorm, one warp per row: lanes stride through the row (coalesced) and the mean and the variance
are reduced with butterfly shuffles, so no shared memory and no block barriers are needed; 8 rows per
256-thread block keep enough warps resident."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define WARPS_PER_BLOCK 8

__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__global__ void layernorm_warp(const float* __restrict__ x, const float* __restrict__ w,
                               const float* __restrict__ b, float* __restrict__ y, int rows, int cols, float eps) {
    int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += in[c];
    float mean = warp_sum(s) / cols;
    float sq = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        float d = in[c] - mean;
        sq += d * d;
    }
    float inv = rsqrtf(warp_sum(sq) / cols + eps);
    for (int c = lane; c < cols; c += 32) out[c] = (in[c] - mean) * inv * w[c] + b[c];
}

extern "C" void layernorm(const float* x, const float* w, const float* b, float* y, int rows, int cols, float eps) {
    int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    layernorm_warp<<<blocks, WARPS_PER_BLOCK * 32>>>(x, w, b, y, rows, cols, eps);
}
'''

_ext = load_cuda("t2c_layernorm_lastdim_warp_per_row", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.ln = torch.nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)
        self.hidden = hidden
        self.eps = float(eps)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows = x.numel() // self.hidden
        _ext.layernorm(x, self.ln.weight, self.ln.bias, y, rows, self.hidden, self.eps)
        return y
