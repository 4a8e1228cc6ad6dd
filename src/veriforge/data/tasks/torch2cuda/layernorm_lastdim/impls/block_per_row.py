"""LayerNorm, one block per row with the row staged in dynamic shared memory.

The row is read from global memory once (coalesced) into shared memory; the mean and the variance
passes and the output pass then read shared memory, and the two sums use shared-memory tree
reductions. Shared memory needs cols * 4 bytes (must stay under 48 KB: cols <= 12288); longer rows
fall back to re-reading global memory.
"""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define THREADS 256
#define MAX_SMEM_COLS 12288

__device__ float block_sum(float v, float* red) {
    int tid = threadIdx.x;
    red[tid] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    float total = red[0];
    __syncthreads();
    return total;
}

__global__ void layernorm_block(const float* __restrict__ x, const float* __restrict__ w,
                                const float* __restrict__ b, float* __restrict__ y, int cols, float eps,
                                int cache) {
    extern __shared__ float row[];
    __shared__ float red[THREADS];
    int tid = threadIdx.x;
    const float* in = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    const float* src = in;
    if (cache) {
        for (int c = tid; c < cols; c += THREADS) row[c] = in[c];
        __syncthreads();
        src = row;
    }
    float s = 0.0f;
    for (int c = tid; c < cols; c += THREADS) s += src[c];
    float mean = block_sum(s, red) / cols;
    float sq = 0.0f;
    for (int c = tid; c < cols; c += THREADS) {
        float d = src[c] - mean;
        sq += d * d;
    }
    float inv = rsqrtf(block_sum(sq, red) / cols + eps);
    for (int c = tid; c < cols; c += THREADS) out[c] = (src[c] - mean) * inv * w[c] + b[c];
}

extern "C" void layernorm(const float* x, const float* w, const float* b, float* y, int rows, int cols, float eps) {
    int cache = cols <= MAX_SMEM_COLS;
    size_t smem = cache ? (size_t)cols * sizeof(float) : 0;
    layernorm_block<<<rows, THREADS, smem>>>(x, w, b, y, cols, eps, cache);
}
'''

_ext = load_cuda("t2c_layernorm_lastdim_block_per_row", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.ln = torch.nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)
        self.hidden = hidden
        self.eps = float(eps)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows = x.numel() // self.hidden
        _ext.layernorm(x, self.ln.weight, self.ln.bias, y, rows, self.hidden, self.eps)
        return y
