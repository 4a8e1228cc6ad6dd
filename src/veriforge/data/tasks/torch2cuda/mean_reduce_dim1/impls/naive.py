"""Row mean, naive: one thread per row adds its row serially. Few threads, and the lanes of a warp read
addresses dim floats apart, so every load is its own memory transaction."""
import torch

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''
__global__ void row_mean_naive(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* in = x + (long long)r * cols;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += in[c];
    y[r] = s / cols;
}

extern "C" void row_mean(const float* x, float* y, int rows, int cols) {
    row_mean_naive<<<(rows + 63) / 64, 64>>>(x, y, rows, cols);
}
'''

_ext = load_cuda("t2c_mean_reduce_dim1_naive", CUDA_SRC)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.size(0), dtype=x.dtype, device=x.device)
        _ext.row_mean(x, y, x.size(0), x.size(1))
        return y
