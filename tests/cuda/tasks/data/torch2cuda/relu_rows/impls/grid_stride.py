import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void relu_scale_kernel(const float* x, const float* s, float* y, int rows, int cols) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < rows * cols; i += gridDim.x * blockDim.x)
    { float v = x[i]; y[i] = (v > 0.f ? v : 0.f) * s[i % cols]; }
}
extern "C" void relu_scale(const float* x, const float* s, float* y, int rows, int cols) {
    relu_scale_kernel<<<2, 64>>>(x, s, y, rows, cols);
}
'''
_ext = load_cuda("relu_scale_gs", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self, dim_in):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim_in))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.relu_scale(x, self.scale, y, x.size(0), x.size(1))
        return y
