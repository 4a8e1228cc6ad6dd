"""cumsum along dim 0 of a 2-D tensor: coalesced implementation.

one thread per column scanning serially: neighbouring threads read neighbouring columns (coalesced), the best fit for short strided scans
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void scan_naive(const float* x, float* out, int T, int R, int inner) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    const float* col = x + t;
    float* ocol = out + t;
    float acc = 0.0f;
    for (int k = 0; k < R; ++k) {
        float v = col[(long long)k * inner];
        acc = (acc + v);
        ocol[(long long)k * inner] = acc;
    }
}

extern "C" void run(const float* x, float* out, int T, int R, int inner) {
    scan_naive<<<(T + 127) / 128, 128>>>(x, out, T, R, inner);
}
'''

_ext = load_cuda("pt_scan_cumsum_2d_dim0_naive", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _ext.run(x, out, x.numel() // x.size(0), x.size(0), x.size(1))
        return out
