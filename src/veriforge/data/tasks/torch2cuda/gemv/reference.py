import torch
import torch.nn as nn

M = 256 * 8
K = 16384


class Model(nn.Module):
    """Matrix-vector product: C = A @ B with A of shape (M, K) and B of shape (K, 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, 1)
    return [A, B]


def get_init_inputs():
    return []
