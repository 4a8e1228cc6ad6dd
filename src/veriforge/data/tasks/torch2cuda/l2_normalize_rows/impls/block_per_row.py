"""Row L2 normalisation with one block per row: coalesced strided reads, a shared-memory tree reduction
of the sum of squares, then every thread scales its share of the row (second, cache-friendly read)."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define THREADS 256

__global__ void l2norm_block(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float red[THREADS];
    int tid = threadIdx.x;
    const float* in = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float sq = 0.0f;
    for (int c = tid; c < cols; c += THREADS) {
        float v = in[c];
        sq = fmaf(v, v, sq);
    }
    red[tid] = sq;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    float inv = rsqrtf(red[0]);
    for (int c = tid; c < cols; c += THREADS) out[c] = in[c] * inv;
}

extern "C" void l2_normalize(const float* x, float* y, int rows, int cols) {
    l2norm_block<<<rows, THREADS>>>(x, y, cols);
}
'''

_ext = load_cuda("t2c_l2_normalize_rows_block_per_row", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.l2_normalize(x, y, x.size(0), x.size(1))
        return y
