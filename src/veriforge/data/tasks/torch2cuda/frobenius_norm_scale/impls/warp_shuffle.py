"""Frobenius scaling with warp shuffles and one atomic per block.

Kernel 1: a capped grid walks the tensor with float4 loads (scalar tail for n % 4), each thread keeps a
partial sum of squares, warps reduce with __shfl_down_sync, warp totals meet in shared memory, and the
block adds ONE value into a double accumulator (double keeps the global sum exact to fp32 precision
regardless of the order the atomics land in). Kernel 2 scales with float4 stores. Unaligned pointers
use the scalar loops only.
"""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define THREADS 256
#define MAX_BLOCKS 128

__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

__global__ void frob_sumsq(const float* __restrict__ x, double* __restrict__ acc, int n, int vec) {
    __shared__ float warp_part[THREADS / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int stride = gridDim.x * THREADS;
    int n4 = vec ? n / 4 : 0;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float s = 0.0f;
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < n4; i += stride) {
        float4 v = x4[i];
        s += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    for (int i = n4 * 4 + blockIdx.x * THREADS + threadIdx.x; i < n; i += stride) s += x[i] * x[i];
    s = warp_sum(s);
    if (lane == 0) warp_part[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < THREADS / 32 ? warp_part[lane] : 0.0f;
        s = warp_sum(s);
        if (lane == 0) atomicAdd(acc, (double)s);
    }
}

__global__ void frob_scale4(const float* __restrict__ x, const double* __restrict__ acc, float* __restrict__ y, int n,
                            int vec) {
    float f = (float)(1.0 / sqrt(*acc));
    int stride = gridDim.x * blockDim.x;
    int n4 = vec ? n / 4 : 0;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x4[i];
        v.x *= f;
        v.y *= f;
        v.z *= f;
        v.w *= f;
        y4[i] = v;
    }
    for (int i = n4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i] * f;
}

extern "C" void frobenius_scale(const float* x, float* y, int n) {
    // float4 paths need 16-byte aligned x and y (fresh torch allocations are; offset views may not be)
    int vec = ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) == 0;
    int blocks = (n / 4 + THREADS - 1) / THREADS;
    if (blocks > MAX_BLOCKS) blocks = MAX_BLOCKS;
    if (blocks < 1) blocks = 1;
    double* acc = nullptr;
    cudaMalloc(&acc, sizeof(double));
    cudaMemset(acc, 0, sizeof(double));
    frob_sumsq<<<blocks, THREADS>>>(x, acc, n, vec);
    frob_scale4<<<blocks, THREADS>>>(x, acc, y, n, vec);
    cudaFree(acc);
}
'''

_ext = load_cuda("t2c_frobenius_norm_scale_warp_shuffle", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.frobenius_scale(x, y, x.numel())
        return y
