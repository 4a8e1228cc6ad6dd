"""Sum over dim 1 with atomics: the launcher zeroes the output, then a 2D grid gives every thread one column
j and one slab of SLAB rows; each thread adds its partial sum with one atomicAdd. More parallelism than
one thread per column, at the price of dim1 / SLAB atomics per output (and a run-to-run varying order)."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define SLAB 16

__global__ void sum_dim1_atomic(const float* __restrict__ x, float* y, int d1, int d2) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int slab = blockIdx.y;
    int b = blockIdx.z;
    if (j >= d2) return;
    int k0 = slab * SLAB;
    int k1 = k0 + SLAB < d1 ? k0 + SLAB : d1;
    const float* col = x + (long long)b * d1 * d2 + j;
    float s = 0.0f;
    for (int k = k0; k < k1; ++k) s += col[(long long)k * d2];
    atomicAdd(&y[(long long)b * d2 + j], s);
}

extern "C" void sum_dim1(const float* x, float* y, int batch, int d1, int d2) {
    cudaMemset(y, 0, (size_t)batch * d2 * sizeof(float));
    dim3 grid((d2 + 127) / 128, (d1 + SLAB - 1) / SLAB, batch);
    sum_dim1_atomic<<<grid, 128>>>(x, y, d1, d2);
}
'''

_ext = load_cuda("t2c_sum_reduce_dim1_atomic", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        b, d1, d2 = x.shape
        y = torch.empty(b, 1, d2, dtype=x.dtype, device=x.device)
        _ext.sum_dim1(x, y, b, d1, d2)
        return y
