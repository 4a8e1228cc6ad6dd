"""sum of x over dim 0 of a 2-D tensor: naive implementation.

one thread per output, serial loop; neighbouring threads read neighbouring columns
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void reduce_naive(const float* x, float* out, int T, int R, int inner) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    const float* col = x + t;
    float a0 = 0.0f;
    for (int k = 0; k < R; ++k) {
        float v = col[(long long)k * inner];
        a0 = (a0 + (v));
    }
    float r0 = a0;
    out[t] = r0;
}

extern "C" void run(const float* x, float* out, int T, int R, int inner) {
    reduce_naive<<<(T + 127) / 128, 128>>>(x, out, T, R, inner);
}
'''

_ext = load_cuda("pt_red_sum_2d_dim0_naive", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.size(1), dtype=x.dtype, device=x.device)
        _ext.run(x, out, out.numel(), x.size(0), x.size(1))
        return out
