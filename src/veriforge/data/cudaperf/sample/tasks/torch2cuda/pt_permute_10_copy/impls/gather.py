"""permute(1, 0) of a 2-D tensor fused with copy: coalesced implementation.

one thread per output element: coalesced writes, gathered reads
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void permute_gather(const float* x, float* out, int s0, int s1) {
    int n = s0 * s1;
    for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < n; o += gridDim.x * blockDim.x) {
        int rem = o;
        int c0 = rem % s0; rem /= s0;
        int c1 = rem;
        float v = x[(c0) * s1 + c1];
        out[o] = v;
    }
}

extern "C" void run(const float* x, float* out, int s0, int s1) {
    int n = s0 * s1;
    permute_gather<<<(n + 255) / 256, 256>>>(x, out, s0, s1);
}
'''

_ext = load_cuda("pt_permute_10_copy_gather", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.size(1), x.size(0), dtype=x.dtype, device=x.device)
        _ext.run(x, out, x.size(0), x.size(1))
        return out
