"""a + alpha * b with float4 accesses: two 16-byte loads and one 16-byte store per four elements;
scalar tail for n % 4, scalar path when any pointer is not 16-byte aligned."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void add_scale_vec4(const float4* __restrict__ a, const float4* __restrict__ b,
                               float4* __restrict__ y, float alpha, int n4) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 va = a[i];
        float4 vb = b[i];
        float4 r;
        r.x = fmaf(alpha, vb.x, va.x);
        r.y = fmaf(alpha, vb.y, va.y);
        r.z = fmaf(alpha, vb.z, va.z);
        r.w = fmaf(alpha, vb.w, va.w);
        y[i] = r;
    }
}

__global__ void add_scale_scalar(const float* __restrict__ a, const float* __restrict__ b,
                                 float* __restrict__ y, float alpha, int start, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = start + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = fmaf(alpha, b[i], a[i]);
}

extern "C" void add_scale(const float* a, const float* b, float* y, float alpha, int n) {
    unsigned long long bits = reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(b) |
                              reinterpret_cast<unsigned long long>(y);
    int n4 = (bits & 15) == 0 ? n / 4 : 0;
    if (n4 > 0) {
        int blocks = (n4 + 255) / 256;
        if (blocks > 256) blocks = 256;
        add_scale_vec4<<<blocks, 256>>>(reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b),
                                        reinterpret_cast<float4*>(y), alpha, n4);
    }
    int start = n4 * 4;
    if (start < n) {
        int blocks = (n - start + 255) / 256;
        if (blocks > 256) blocks = 256;
        add_scale_scalar<<<blocks, 256>>>(a, b, y, alpha, start, n);
    }
}
'''

_ext = load_cuda("t2c_elementwise_add_scale_vectorized", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self, alpha: float = 0.75):
        super().__init__()
        self.alpha = float(alpha)

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        y = torch.empty_like(a)
        _ext.add_scale(a, b, y, self.alpha, a.numel())
        return y
