"""permute(1, 0) of a 2-D tensor fused with copy: naive implementation.

one thread per input element: coalesced reads, scattered writes
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void permute_scatter(const float* x, float* out, int s0, int s1) {
    int n = s0 * s1;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int rem = i;
        int c1 = rem % s1; rem /= s1;
        int c0 = rem;
        float v = x[i];
        int o = (c1) * s0 + c0;
        out[o] = v;
    }
}

extern "C" void run(const float* x, float* out, int s0, int s1) {
    int n = s0 * s1;
    permute_scatter<<<(n + 255) / 256, 256>>>(x, out, s0, s1);
}
'''

_ext = load_cuda("pt_permute_10_copy_scatter", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.size(1), x.size(0), dtype=x.dtype, device=x.device)
        _ext.run(x, out, x.size(0), x.size(1))
        return out
