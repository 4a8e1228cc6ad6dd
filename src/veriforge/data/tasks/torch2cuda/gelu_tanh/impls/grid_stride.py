"""GELU (tanh form) in a grid-stride loop with a cheaper tanh.

tanh(u) = 1 - 2 / (exp(2u) + 1) costs one fast exponential and one division. It loses relative
precision for tiny |u|, but GELU only needs 1 + tanh(u), where that absolute error (~1e-7) is harmless.
u is clamped to +-15 (tanh is +-1 to fp32 precision there) so exp never overflows to inf/inf.
"""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__device__ __forceinline__ float gelu_fast(float v) {
    float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    u = fminf(fmaxf(u, -15.0f), 15.0f);
    float t = 1.0f - 2.0f / (__expf(2.0f * u) + 1.0f);
    return 0.5f * v * (1.0f + t);
}

__global__ void gelu_tanh_grid_stride(const float* __restrict__ x, float* __restrict__ y, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = gelu_fast(x[i]);
}

extern "C" void gelu_tanh(const float* x, float* y, int n) {
    int blocks = (n + 255) / 256;
    if (blocks > 512) blocks = 512;
    if (blocks < 1) blocks = 1;
    gelu_tanh_grid_stride<<<blocks, 256>>>(x, y, n);
}
'''

_ext = load_cuda("t2c_gelu_tanh_grid_stride", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.gelu_tanh(x, y, x.numel())
        return y
