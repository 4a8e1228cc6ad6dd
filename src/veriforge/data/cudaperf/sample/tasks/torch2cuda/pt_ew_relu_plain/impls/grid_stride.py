"""Element-wise relu(x): grid_stride implementation.

a capped grid whose threads stride over the tensor
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''__device__ __forceinline__ float act_relu(float v) {
    return v > 0.0f ? v : 0.0f;
}

__device__ __forceinline__ float elem(int i, float xv) {
    return act_relu(xv);
}

__global__ void ew_grid_stride(const float* x, float* out, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = elem(i, x[i]);
}

extern "C" void run(const float* x, float* out, int n) {
    int blocks = (n + 255) / 256;
    if (blocks > 1024) blocks = 1024;   // about one full wave on an H100 (132 SMs x 8 blocks): threads loop
    ew_grid_stride<<<blocks, 256>>>(x, out, n);
}
'''

_ext = load_cuda("pt_ew_relu_plain_grid_stride", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _ext.run(x, out, x.numel())
        return out
