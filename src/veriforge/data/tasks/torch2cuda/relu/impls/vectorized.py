"""ReLU with 16-byte float4 accesses: a quarter of the memory instructions of the scalar version.

float4 needs 16-byte aligned pointers; torch allocations are, but a view with an odd offset is not,
so the launcher checks alignment and falls back to the scalar kernel. n need not be a multiple of 4:
the last n % 4 elements are handled by a small scalar tail launch.
"""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__device__ __forceinline__ float relu1(float v) { return v > 0.0f ? v : 0.0f; }

__global__ void relu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int n4) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        v.x = relu1(v.x);
        v.y = relu1(v.y);
        v.z = relu1(v.z);
        v.w = relu1(v.w);
        y[i] = v;
    }
}

__global__ void relu_scalar(const float* __restrict__ x, float* __restrict__ y, int start, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = start + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = relu1(x[i]);
}

extern "C" void relu(const float* x, float* y, int n) {
    bool aligned = ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) == 0;
    int n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {
        int blocks = (n4 + 255) / 256;
        if (blocks > 256) blocks = 256;
        relu_vec4<<<blocks, 256>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
    }
    int start = n4 * 4;
    if (start < n) {
        int blocks = (n - start + 255) / 256;
        if (blocks > 256) blocks = 256;
        relu_scalar<<<blocks, 256>>>(x, y, start, n);
    }
}
'''

_ext = load_cuda("t2c_relu_vectorized", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.relu(x, y, x.numel())
        return y
