import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void relu_scale_rows(const float* x, const float* s, float* y, int cols) {
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) { float v = xr[j]; yr[j] = fmaxf(v, 0.f) * s[j]; }
}
extern "C" void relu_scale(const float* x, const float* s, float* y, int rows, int cols) {
    relu_scale_rows<<<rows, 64>>>(x, s, y, cols);
}
'''
_ext = load_cuda("relu_scale_rows", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self, dim_in):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim_in))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.relu_scale(x, self.scale, y, x.size(0), x.size(1))
        return y
