"""Row mean with one block per row: 256 threads read the row together (coalesced) and their partial
sums are combined by a classic shared-memory tree (8 halving steps, a barrier after each)."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define THREADS 256

__global__ void row_mean_tree(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float red[THREADS];
    int tid = threadIdx.x;
    const float* in = x + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = tid; c < cols; c += THREADS) s += in[c];
    red[tid] = s;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
        if (tid < stride) red[tid] += red[tid + stride];
        __syncthreads();
    }
    if (tid == 0) y[blockIdx.x] = red[0] / cols;
}

extern "C" void row_mean(const float* x, float* y, int rows, int cols) {
    row_mean_tree<<<rows, THREADS>>>(x, y, cols);
}
'''

_ext = load_cuda("t2c_mean_reduce_dim1_shared_tree", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.size(0), dtype=x.dtype, device=x.device)
        _ext.row_mean(x, y, x.size(0), x.size(1))
        return y
