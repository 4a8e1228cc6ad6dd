"""LeakyReLU, naive: each thread walks its own contiguous chunk, so a warp's simultaneous accesses are
CHUNK floats apart (poor coalescing)."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define CHUNK 16

__global__ void leaky_relu_chunked(const float* x, float* y, float slope, int n) {
    int start = (blockIdx.x * blockDim.x + threadIdx.x) * CHUNK;
    int end = start + CHUNK < n ? start + CHUNK : n;
    for (int i = start; i < end; ++i) {
        float v = x[i];
        if (v >= 0.0f) y[i] = v;
        else y[i] = v * slope;
    }
}

extern "C" void leaky_relu(const float* x, float* y, float slope, int n) {
    int threads = (n + CHUNK - 1) / CHUNK;
    leaky_relu_chunked<<<(threads + 127) / 128, 128>>>(x, y, slope, n);
}
'''

_ext = load_cuda("t2c_leaky_relu_naive", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.leaky_relu(x, y, self.negative_slope, x.numel())
        return y
