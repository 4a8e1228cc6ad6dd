"""mse loss (reduction=mean): naive implementation.

a single thread sums every term
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''__device__ __forceinline__ float term(float xv, float yv) { return (xv - yv) * (xv - yv); }

__global__ void loss_serial(const float* x, const float* y, float* out, int n) {
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) acc += term(x[i], y[i]);
    out[0] = acc * (1.0f / n);
}

extern "C" void run(const float* x, const float* y, float* out, int n) {
    loss_serial<<<1, 1>>>(x, y, out, n);
}
'''

_ext = load_cuda("pt_loss_mse_mean_serial", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x, y):
        x = x.contiguous()
        y = y.contiguous()
        out = torch.empty((), dtype=x.dtype, device=x.device)
        _ext.run(x, y, out, x.numel())
        return out
