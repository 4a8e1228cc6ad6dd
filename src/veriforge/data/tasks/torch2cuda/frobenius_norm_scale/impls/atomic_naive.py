"""Frobenius scaling, naive: one thread per element atomically adds x^2 into a single global
accumulator (every atomic serialises on the same address), then a second kernel divides by the root.
The accumulator lives in a cudaMalloc'd scratch float zeroed with cudaMemset before the launch."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void frob_accumulate(const float* x, float* acc, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(acc, x[i] * x[i]);
}

__global__ void frob_scale(const float* x, const float* acc, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] / sqrtf(*acc);
}

extern "C" void frobenius_scale(const float* x, float* y, int n) {
    float* acc = nullptr;
    cudaMalloc(&acc, sizeof(float));
    cudaMemset(acc, 0, sizeof(float));
    int blocks = (n + 255) / 256;
    frob_accumulate<<<blocks, 256>>>(x, acc, n);
    frob_scale<<<blocks, 256>>>(x, acc, y, n);
    cudaFree(acc);
}
'''

_ext = load_cuda("t2c_frobenius_norm_scale_atomic_naive", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.frobenius_scale(x, y, x.numel())
        return y
