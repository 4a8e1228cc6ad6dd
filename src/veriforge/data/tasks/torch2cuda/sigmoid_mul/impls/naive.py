"""SiLU, naive: one thread per element with expf. For x < -88, expf(-x) is inf and x / inf = -0, the
correctly rounded answer at fp32 scale, so no special case is needed."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void silu_naive(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v / (1.0f + expf(-v));
    }
}

extern "C" void silu(const float* x, float* y, int n) {
    silu_naive<<<(n + 255) / 256, 256>>>(x, y, n);
}
'''

_ext = load_cuda("t2c_sigmoid_mul_naive", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.silu(x, y, x.numel())
        return y
