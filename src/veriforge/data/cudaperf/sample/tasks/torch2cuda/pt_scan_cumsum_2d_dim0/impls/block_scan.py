"""cumsum along dim 0 of a 2-D tensor: shared_tiled implementation.

one block per column, shared-memory chunk scans
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define THREADS 64
__global__ void scan_block(const float* x, float* out, int T, int R, int inner) {
    __shared__ float buf[THREADS];
    int t = blockIdx.x, tid = threadIdx.x;
    const float* col = x + t;
    float* ocol = out + t;
    float carry = 0.0f;
    for (int base = 0; base < R; base += THREADS) {
        int k = base + tid;
        float v = k < R ? col[(long long)k * inner] : 0.0f;
        buf[tid] = v;
        __syncthreads();
        for (int off = 1; off < THREADS; off <<= 1) {   // Hillis-Steele in shared memory
            float o = tid >= off ? buf[tid - off] : 0.0f;
            __syncthreads();
            buf[tid] = (o + buf[tid]);
            __syncthreads();
        }
        float acc = (carry + buf[tid]);
        if (k < R) ocol[(long long)k * inner] = acc;
        carry = (carry + buf[THREADS - 1]);
        __syncthreads();
    }
}

extern "C" void run(const float* x, float* out, int T, int R, int inner) {
    scan_block<<<T, THREADS>>>(x, out, T, R, inner);
}
'''

_ext = load_cuda("pt_scan_cumsum_2d_dim0_block_scan", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _ext.run(x, out, x.numel() // x.size(0), x.size(0), x.size(1))
        return out
