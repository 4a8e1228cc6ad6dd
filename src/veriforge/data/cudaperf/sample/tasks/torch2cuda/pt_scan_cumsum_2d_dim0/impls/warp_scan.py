"""cumsum along dim 0 of a 2-D tensor: warp_shuffle implementation.

one warp per column, shuffle scan; lanes touch elements `inner` apart (uncoalesced)
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define WARPS 4
__global__ void scan_warp(const float* x, float* out, int T, int R, int inner) {
    int t = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (t >= T) return;
    const float* col = x + t;
    float* ocol = out + t;
    float carry = 0.0f;
    for (int base = 0; base < R; base += 32) {
        int k = base + lane;
        float v = k < R ? col[(long long)k * inner] : 0.0f;
        float acc = v;
        for (int off = 1; off < 32; off <<= 1) {   // inclusive Hillis-Steele scan across the warp
            float o = __shfl_up_sync(0xffffffffu, acc, off);
            if (lane >= off) acc = (o + acc);
        }
        acc = (carry + acc);
        if (k < R) ocol[(long long)k * inner] = acc;
        carry = __shfl_sync(0xffffffffu, acc, 31);
    }
}

extern "C" void run(const float* x, float* out, int T, int R, int inner) {
    scan_warp<<<(T + WARPS - 1) / WARPS, WARPS * 32>>>(x, out, T, R, inner);
}
'''

_ext = load_cuda("pt_scan_cumsum_2d_dim0_warp_scan", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _ext.run(x, out, x.numel() // x.size(0), x.size(0), x.size(1))
        return out
