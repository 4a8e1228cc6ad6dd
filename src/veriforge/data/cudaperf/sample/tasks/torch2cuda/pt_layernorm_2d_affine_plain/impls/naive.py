"""layernorm over the last dim of a 2-D tensor (affine, plain): naive implementation.

one thread per row: statistics passes and the write pass serially
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void row_naive(const float* x, float* out, int T, int R, int inner, const float* w, const float* b, float eps) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    const float* col = x + (long long)t * R;
    float* ocol = out + (long long)t * R;
    float a0 = 0.0f;
    for (int k = 0; k < R; ++k) {
        float v = col[k];
        a0 = (a0 + (v));
    }
    float r0 = a0 / R;
    float a1 = 0.0f;
    for (int k = 0; k < R; ++k) {
        float v = col[k];
        a1 = (a1 + ((v - r0) * (v - r0)));
    }
    float r1 = rsqrtf(a1 / R + eps);
    for (int k = 0; k < R; ++k) {
        float v = col[k];
        ocol[k] = ((v - r0) * r1) * w[k] + b[k];
    }
}

extern "C" void run(const float* x, float* out, int T, int R, int inner, const float* w, const float* b, float eps) {
    row_naive<<<(T + 127) / 128, 128>>>(x, out, T, R, inner, w, b, eps);
}
'''

_ext = load_cuda("pt_layernorm_2d_affine_plain_naive", CUDA_SRC)


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
