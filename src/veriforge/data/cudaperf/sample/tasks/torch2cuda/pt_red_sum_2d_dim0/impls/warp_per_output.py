"""sum of x over dim 0 of a 2-D tensor: warp_shuffle implementation.

one warp per output; lanes read elements `inner` apart (uncoalesced), shuffle combine
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define WARPS 4
__global__ void reduce_warp(const float* x, float* out, int T, int R, int inner) {
    int t = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (t >= T) return;   // whole warps leave together
    const float* col = x + t;
    float a0 = 0.0f;
    for (int k = lane; k < R; k += 32) {
        float v = col[(long long)k * inner];
        a0 = (a0 + (v));
    }
    for (int off = 16; off > 0; off >>= 1) a0 = (a0 + __shfl_xor_sync(0xffffffffu, a0, off));
    float r0 = a0;
    if (lane == 0) out[t] = r0;
}

extern "C" void run(const float* x, float* out, int T, int R, int inner) {
    reduce_warp<<<(T + WARPS - 1) / WARPS, WARPS * 32>>>(x, out, T, R, inner);
}
'''

_ext = load_cuda("pt_red_sum_2d_dim0_warp_per_output", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.size(1), dtype=x.dtype, device=x.device)
        _ext.run(x, out, out.numel(), x.size(0), x.size(1))
        return out
