"""SiLU in a grid-stride loop with fast intrinsics: __expf and __fdividef (approximate division that is
accurate to 2 ulp for denominators below 2^126; 1 + exp(-x) only exceeds that when the true answer is
below 1e-36, where __fdividef returns 0 -- still within tolerance)."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void silu_grid_stride(const float* __restrict__ x, float* __restrict__ y, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        y[i] = __fdividef(v, 1.0f + __expf(-v));
    }
}

extern "C" void silu(const float* x, float* y, int n) {
    int blocks = (n + 255) / 256;
    if (blocks > 512) blocks = 512;
    if (blocks < 1) blocks = 1;
    silu_grid_stride<<<blocks, 256>>>(x, y, n);
}
'''

_ext = load_cuda("t2c_sigmoid_mul_grid_stride", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.silu(x, y, x.numel())
        return y
