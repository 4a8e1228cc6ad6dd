"""Row mean with warp shuffles: each warp reduces its 32 partial sums with __shfl_down_sync (no shared
memory traffic, no barriers), lane 0 of every warp leaves one value in shared memory, and the first warp
reduces those 8 values the same way. One barrier per block instead of nine."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define THREADS 256

__device__ __forceinline__ float warp_reduce(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

__global__ void row_mean_shuffle(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float warp_sums[THREADS / 32];
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const float* in = x + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = tid; c < cols; c += THREADS) s += in[c];
    s = warp_reduce(s);
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < THREADS / 32 ? warp_sums[lane] : 0.0f;
        s = warp_reduce(s);
        if (lane == 0) y[blockIdx.x] = s / cols;
    }
}

extern "C" void row_mean(const float* x, float* y, int rows, int cols) {
    row_mean_shuffle<<<rows, THREADS>>>(x, y, cols);
}
'''

_ext = load_cuda("t2c_mean_reduce_dim1_warp_shuffle", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.size(0), dtype=x.dtype, device=x.device)
        _ext.row_mean(x, y, x.size(0), x.size(1))
        return y
