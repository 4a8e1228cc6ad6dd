"""RMSNorm, one warp per row with float4 accesses.

When dim % 4 == 0 (and the pointers are 16-byte aligned) every row starts on a 16-byte boundary, so x,
weight and y can be read/written as float4: a quarter of the memory instructions. Other shapes use the
scalar warp kernel, so the implementation is correct for every dim.
"""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define WARPS_PER_BLOCK 8

__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__global__ void rmsnorm_vec4(const float4* __restrict__ x, const float4* __restrict__ w, float4* __restrict__ y,
                             int rows, int cols4, float inv_cols, float eps) {
    int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float4* in = x + (long long)row * cols4;
    float4* out = y + (long long)row * cols4;
    float sq = 0.0f;
    for (int c = lane; c < cols4; c += 32) {
        float4 v = in[c];
        sq += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    float inv = rsqrtf(warp_sum(sq) * inv_cols + eps);
    for (int c = lane; c < cols4; c += 32) {
        float4 v = in[c];
        float4 g = w[c];
        float4 r;
        r.x = v.x * inv * g.x;
        r.y = v.y * inv * g.y;
        r.z = v.z * inv * g.z;
        r.w = v.w * inv * g.w;
        out[c] = r;
    }
}

__global__ void rmsnorm_scalar(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                               int rows, int cols, float eps) {
    int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;
    float sq = 0.0f;
    for (int c = lane; c < cols; c += 32) sq += in[c] * in[c];
    float inv = rsqrtf(warp_sum(sq) / cols + eps);
    for (int c = lane; c < cols; c += 32) out[c] = in[c] * inv * w[c];
}

extern "C" void rmsnorm(const float* x, const float* w, float* y, int rows, int cols, float eps) {
    int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    unsigned long long bits = reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(w) |
                              reinterpret_cast<unsigned long long>(y);
    if (cols % 4 == 0 && (bits & 15) == 0) {
        rmsnorm_vec4<<<blocks, WARPS_PER_BLOCK * 32>>>(reinterpret_cast<const float4*>(x),
                                                       reinterpret_cast<const float4*>(w),
                                                       reinterpret_cast<float4*>(y), rows, cols / 4,
                                                       1.0f / cols, eps);
    } else {
        rmsnorm_scalar<<<blocks, WARPS_PER_BLOCK * 32>>>(x, w, y, rows, cols, eps);
    }
}
'''

_ext = load_cuda("t2c_rmsnorm_vectorized", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = float(eps)
        self.dim = dim
        self.weight = torch.nn.Parameter(torch.empty(dim).uniform_(0.5, 1.5))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.rmsnorm(x, self.weight, y, x.numel() // self.dim, self.dim, self.eps)
        return y
