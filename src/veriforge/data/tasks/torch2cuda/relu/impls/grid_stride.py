"""ReLU with a grid-stride loop: consecutive lanes read consecutive floats (fully coalesced) and a
capped grid reuses its threads instead of launching one thread per element."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void relu_grid_stride(const float* __restrict__ x, float* __restrict__ y, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = fmaxf(x[i], 0.0f);
    }
}

extern "C" void relu(const float* x, float* y, int n) {
    int blocks = (n + 255) / 256;
    if (blocks > 256) blocks = 256;
    if (blocks < 1) blocks = 1;
    relu_grid_stride<<<blocks, 256>>>(x, y, n);
}
'''

_ext = load_cuda("t2c_relu_grid_stride", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.relu(x, y, x.numel())
        return y
