import torch
import torch.nn as nn

batch_size = 16
seq_len = 64
dim = 256
eps = 1e-6


class Model(nn.Module):
    """RMSNorm over the last dimension with a learned per-feature weight (as in LLaMA)."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(dim).uniform_(0.5, 1.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


def get_inputs():
    x = torch.randn(batch_size, seq_len, dim) * 3.0
    return [x]


def get_init_inputs():
    return [dim, eps]
