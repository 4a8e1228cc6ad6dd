import torch
import torch.nn as nn

batch_size = 16
dim = 16384
alpha = 0.75


class Model(nn.Module):
    """Scaled addition: y = a + alpha * b, alpha fixed at construction."""

    def __init__(self, alpha: float = 0.75):
        super().__init__()
        self.alpha = alpha

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + self.alpha * b


def get_inputs():
    a = torch.randn(batch_size, dim)
    b = torch.randn(batch_size, dim)
    return [a, b]


def get_init_inputs():
    return [alpha]
