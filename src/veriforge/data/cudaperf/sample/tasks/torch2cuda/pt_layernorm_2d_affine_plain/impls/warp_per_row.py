"""layernorm over the last dim of a 2-D tensor (affine, plain): warp_shuffle implementation.

one warp per row, statistics combined with butterfly shuffles, no barriers
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define WARPS 4
__global__ void row_warp(const float* x, float* out, int T, int R, int inner, const float* w, const float* b, float eps) {
    int t = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (t >= T) return;   // whole warps leave together
    const float* col = x + (long long)t * R;
    float* ocol = out + (long long)t * R;
    float a0 = 0.0f;
    for (int k = lane; k < R; k += 32) {
        float v = col[k];
        a0 = (a0 + (v));
    }
    for (int off = 16; off > 0; off >>= 1) a0 = (a0 + __shfl_xor_sync(0xffffffffu, a0, off));
    float r0 = a0 / R;
    float a1 = 0.0f;
    for (int k = lane; k < R; k += 32) {
        float v = col[k];
        a1 = (a1 + ((v - r0) * (v - r0)));
    }
    for (int off = 16; off > 0; off >>= 1) a1 = (a1 + __shfl_xor_sync(0xffffffffu, a1, off));
    float r1 = rsqrtf(a1 / R + eps);
    for (int k = lane; k < R; k += 32) {
        float v = col[k];
        ocol[k] = ((v - r0) * r1) * w[k] + b[k];
    }
}

extern "C" void run(const float* x, float* out, int T, int R, int inner, const float* w, const float* b, float eps) {
    row_warp<<<(T + WARPS - 1) / WARPS, WARPS * 32>>>(x, out, T, R, inner, w, b, eps);
}
'''

_ext = load_cuda("pt_layernorm_2d_affine_plain_warp_per_row", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self, eps: float, hidden: int):
        super().__init__()
        self.eps = eps
        self.hidden = hidden
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)
        self.bias = nn.Parameter(torch.randn(hidden) * 0.5)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _ext.run(x, out, x.numel() // (x.size(1)), x.size(1), 1, self.weight, self.bias, self.eps)
        return out
