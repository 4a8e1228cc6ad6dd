"""layernorm over the last dim of a 2-D tensor (affine, plain): shared_tiled implementation.

one 128-thread block per row, coalesced strided loops, shared-memory tree per statistic
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define THREADS 128
__global__ void row_block(const float* x, float* out, int T, int R, int inner, const float* w, const float* b, float eps) {
    __shared__ float red[THREADS];
    int t = blockIdx.x;
    int tid = threadIdx.x;
    const float* col = x + (long long)t * R;
    float* ocol = out + (long long)t * R;
    float a0 = 0.0f;
    for (int k = tid; k < R; k += THREADS) {
        float v = col[k];
        a0 = (a0 + (v));
    }
    red[tid] = a0;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = (red[tid] + red[tid + s]);
        __syncthreads();
    }
    a0 = red[0];
    __syncthreads();
    float r0 = a0 / R;
    float a1 = 0.0f;
    for (int k = tid; k < R; k += THREADS) {
        float v = col[k];
        a1 = (a1 + ((v - r0) * (v - r0)));
    }
    red[tid] = a1;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = (red[tid] + red[tid + s]);
        __syncthreads();
    }
    a1 = red[0];
    __syncthreads();
    float r1 = rsqrtf(a1 / R + eps);
    for (int k = tid; k < R; k += THREADS) {
        float v = col[k];
        ocol[k] = ((v - r0) * r1) * w[k] + b[k];
    }
}

extern "C" void run(const float* x, float* out, int T, int R, int inner, const float* w, const float* b, float eps) {
    row_block<<<T, THREADS>>>(x, out, T, R, inner, w, b, eps);
}
'''

_ext = load_cuda("pt_layernorm_2d_affine_plain_block_per_row", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self, eps: float, hidden: int):
        super().__init__()
        self.eps = eps
        self.hidden = hidden
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)
        self.bias = nn.Parameter(torch.randn(hidden) * 0.5)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _ext.run(x, out, x.numel() // (x.size(1)), x.size(1), 1, self.weight, self.bias, self.eps)
        return out
