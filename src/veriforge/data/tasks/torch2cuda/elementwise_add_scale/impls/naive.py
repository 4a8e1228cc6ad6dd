"""a + alpha * b, naive: per-thread contiguous chunks, so the warp's accesses are CHUNK floats apart."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define CHUNK 8

__global__ void add_scale_chunked(const float* a, const float* b, float* y, float alpha, int n) {
    int start = (blockIdx.x * blockDim.x + threadIdx.x) * CHUNK;
    for (int k = 0; k < CHUNK; ++k) {
        int i = start + k;
        if (i < n) y[i] = a[i] + alpha * b[i];
    }
}

extern "C" void add_scale(const float* a, const float* b, float* y, float alpha, int n) {
    int threads = (n + CHUNK - 1) / CHUNK;
    add_scale_chunked<<<(threads + 255) / 256, 256>>>(a, b, y, alpha, n);
}
'''

_ext = load_cuda("t2c_elementwise_add_scale_naive", CUDA_SRC)


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
