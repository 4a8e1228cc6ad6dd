"""a + alpha * b in a coalesced grid-stride loop; one fused multiply-add per element."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void add_scale_grid_stride(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ y, float alpha, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = fmaf(alpha, b[i], a[i]);
}

extern "C" void add_scale(const float* a, const float* b, float* y, float alpha, int n) {
    int blocks = (n + 255) / 256;
    if (blocks > 256) blocks = 256;
    if (blocks < 1) blocks = 1;
    add_scale_grid_stride<<<blocks, 256>>>(a, b, y, alpha, n);
}
'''

_ext = load_cuda("t2c_elementwise_add_scale_grid_stride", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self, alpha: float = 0.75):
        super().__init__()
        self.alpha = float(alpha)

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        y = torch.empty_like(a)
        _ext.add_scale(a, b, y, self.alpha, a.numel())
        return y
