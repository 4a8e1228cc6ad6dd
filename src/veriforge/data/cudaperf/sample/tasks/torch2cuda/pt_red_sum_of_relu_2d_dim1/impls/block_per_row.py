"""sum of relu(x) over dim 1 of a 2-D tensor: shared_tiled implementation.

one 128-thread block per row, strided coalesced loads, shared-memory tree per pass
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''__device__ __forceinline__ float act_relu(float v) {
    return v > 0.0f ? v : 0.0f;
}

#define THREADS 128
__global__ void reduce_block(const float* x, float* out, int T, int R, int inner) {
    __shared__ float red[THREADS];
    int t = blockIdx.x;
    int tid = threadIdx.x;
    const float* col = x + (long long)t * R;
    float a0 = 0.0f;
    for (int k = tid; k < R; k += THREADS) {
        float v = act_relu(col[k]);
        a0 = (a0 + (v));
    }
    red[tid] = a0;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = (red[tid] + red[tid + s]);
        __syncthreads();
    }
    a0 = red[0];
    __syncthreads();   // red is reused by the next pass
    float r0 = a0;
    if (tid == 0) out[t] = r0;
}

extern "C" void run(const float* x, float* out, int T, int R, int inner) {
    reduce_block<<<T, THREADS>>>(x, out, T, R, inner);
}
'''

_ext = load_cuda("pt_red_sum_of_relu_2d_dim1_block_per_row", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.size(0), dtype=x.dtype, device=x.device)
        _ext.run(x, out, out.numel(), x.size(1), 1)
        return out
