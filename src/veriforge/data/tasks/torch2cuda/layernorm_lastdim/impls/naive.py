"""LayerNorm, naive: one thread per row runs the textbook two-pass algorithm serially.

Two passes (mean first, then sum of squared deviations) keep the variance accurate when the mean is far
from zero, unlike E[x^2] - E[x]^2.
"""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void layernorm_naive(const float* x, const float* w, const float* b, float* y,
                                int rows, int cols, float eps) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* in = x + (long long)r * cols;
    float* out = y + (long long)r * cols;
    float sum = 0.0f;
    for (int c = 0; c < cols; ++c) sum += in[c];
    float mean = sum / cols;
    float sq = 0.0f;
    for (int c = 0; c < cols; ++c) {
        float d = in[c] - mean;
        sq += d * d;
    }
    float inv = 1.0f / sqrtf(sq / cols + eps);
    for (int c = 0; c < cols; ++c) out[c] = (in[c] - mean) * inv * w[c] + b[c];
}

extern "C" void layernorm(const float* x, const float* w, const float* b, float* y, int rows, int cols, float eps) {
    layernorm_naive<<<(rows + 127) / 128, 128>>>(x, w, b, y, rows, cols, eps);
}
'''

_ext = load_cuda("t2c_layernorm_lastdim_naive", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.ln = torch.nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)
        self.hidden = hidden
        self.eps = float(eps)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows = x.numel() // self.hidden
        _ext.layernorm(x, self.ln.weight, self.ln.bias, y, rows, self.hidden, self.eps)
        return y
