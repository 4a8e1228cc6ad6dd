"""Frobenius scaling with a deterministic two-level reduction (no atomics, same result every run):
kernel 1 gives each of up to 256 blocks a grid-stride slice and reduces it with a shared-memory tree into
partial[block]; kernel 2 is a single block that tree-reduces the partials and stores 1 / sqrt(total);
kernel 3 multiplies every element by that factor."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
#define THREADS 256
#define MAX_BLOCKS 256

__global__ void frob_partial(const float* __restrict__ x, float* __restrict__ partial, int n) {
    __shared__ float red[THREADS];
    int tid = threadIdx.x;
    float s = 0.0f;
    for (int i = blockIdx.x * THREADS + tid; i < n; i += gridDim.x * THREADS) s = fmaf(x[i], x[i], s);
    red[tid] = s;
    __syncthreads();
    for (int k = THREADS / 2; k > 0; k >>= 1) {
        if (tid < k) red[tid] += red[tid + k];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = red[0];
}

__global__ void frob_final(const float* __restrict__ partial, int parts, float* __restrict__ inv_norm) {
    __shared__ float red[THREADS];
    int tid = threadIdx.x;
    red[tid] = tid < parts ? partial[tid] : 0.0f;
    __syncthreads();
    for (int k = THREADS / 2; k > 0; k >>= 1) {
        if (tid < k) red[tid] += red[tid + k];
        __syncthreads();
    }
    if (tid == 0) *inv_norm = 1.0f / sqrtf(red[0]);
}

__global__ void frob_scale(const float* __restrict__ x, const float* __restrict__ inv_norm, float* __restrict__ y,
                           int n) {
    float f = *inv_norm;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i] * f;
}

extern "C" void frobenius_scale(const float* x, float* y, int n) {
    int blocks = (n + THREADS - 1) / THREADS;
    if (blocks > MAX_BLOCKS) blocks = MAX_BLOCKS;
    if (blocks < 1) blocks = 1;
    float* scratch = nullptr;   // [0, blocks): partial sums, [MAX_BLOCKS]: 1 / norm
    cudaMalloc(&scratch, (MAX_BLOCKS + 1) * sizeof(float));
    frob_partial<<<blocks, THREADS>>>(x, scratch, n);
    frob_final<<<1, THREADS>>>(scratch, blocks, scratch + MAX_BLOCKS);
    frob_scale<<<blocks, THREADS>>>(x, scratch + MAX_BLOCKS, y, n);
    cudaFree(scratch);
}
'''

_ext = load_cuda("t2c_frobenius_norm_scale_two_pass_tree", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.frobenius_scale(x, y, x.numel())
        return y
