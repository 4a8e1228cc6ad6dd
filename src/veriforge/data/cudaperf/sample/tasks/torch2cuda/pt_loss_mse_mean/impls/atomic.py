"""mse loss (reduction=mean): atomic implementation.

grid-stride partial sums, one atomicAdd per thread
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''__device__ __forceinline__ float term(float xv, float yv) { return (xv - yv) * (xv - yv); }

__global__ void zero_out(float* out) { out[0] = 0.0f; }

__global__ void loss_atomic(const float* x, const float* y, float* out, int n) {
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) acc += term(x[i], y[i]);
    atomicAdd(out, acc * (1.0f / n));   // one atomic per thread
}

extern "C" void run(const float* x, const float* y, float* out, int n) {
    zero_out<<<1, 1>>>(out);
    int blocks = (n + 255) / 256;
    if (blocks > 32) blocks = 32;
    loss_atomic<<<blocks, 256>>>(x, y, out, n);
}
'''

_ext = load_cuda("pt_loss_mse_mean_atomic", CUDA_SRC)


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
