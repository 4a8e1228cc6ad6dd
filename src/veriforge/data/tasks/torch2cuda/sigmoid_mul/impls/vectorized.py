"""SiLU with float4 loads/stores (16-byte transactions) in a grid-stride loop; scalar tail for n % 4 and a
scalar path for pointers that are not 16-byte aligned. Uses the overflow-safe sigmoid split by sign:
sigmoid(v) = 1 / (1 + e^-v) for v >= 0 and e^v / (1 + e^v) for v < 0, so exp never overflows."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__device__ __forceinline__ float silu1(float v) {
    float e = __expf(-fabsf(v));
    float s = v >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
    return v * s;
}

__global__ void silu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int n4) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        float4 r;
        r.x = silu1(v.x);
        r.y = silu1(v.y);
        r.z = silu1(v.z);
        r.w = silu1(v.w);
        y[i] = r;
    }
}

__global__ void silu_scalar(const float* __restrict__ x, float* __restrict__ y, int start, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = start + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = silu1(x[i]);
}

extern "C" void silu(const float* x, float* y, int n) {
    bool aligned = ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) == 0;
    int n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {
        int blocks = (n4 + 255) / 256;
        if (blocks > 256) blocks = 256;
        silu_vec4<<<blocks, 256>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
    }
    int start = n4 * 4;
    if (start < n) {
        int blocks = (n - start + 255) / 256;
        if (blocks > 256) blocks = 256;
        silu_scalar<<<blocks, 256>>>(x, y, start, n);
    }
}
'''

_ext = load_cuda("t2c_sigmoid_mul_vectorized", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _ext.silu(x, y, x.numel())
        return y
