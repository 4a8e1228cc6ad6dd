"""Linear + bias on a 2-D input: naive implementation.

one thread per output, dot product straight from global memory
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r'''#define LDA(i, k) A[(long long)(i) * K + (k)]
#define LDB(k, j) B[(long long)(j) * K + (k)]
#define BATCH_OFFSETS A += (long long)blockIdx.z * M * K; B += (long long)blockIdx.z * K * N; C += (long long)blockIdx.z * M * N;
__global__ void mm_naive(const float* A, const float* B, float* C, int M, int N, int K, int batch, const float* bias) {
    BATCH_OFFSETS
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += LDA(i, k) * LDB(k, j);
    C[(long long)i * N + j] = acc + bias[j];
}

extern "C" void run(const float* A, const float* B, float* C, int M, int N, int K, int batch, const float* bias) {
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16, batch);
    mm_naive<<<grid, block>>>(A, B, C, M, N, K, batch, bias);
}
'''

_ext = load_cuda("pt_linear_2d_bias_none_naive", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.linear = nn.Linear(in_features, out_features, bias=True)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.size(0), self.out_features, dtype=x.dtype, device=x.device)
        _ext.run(x, self.linear.weight, y, x.numel() // x.size(-1), self.out_features, self.in_features, 1, self.linear.bias)
        return y
