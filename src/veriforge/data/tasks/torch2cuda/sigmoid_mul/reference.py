import torch
import torch.nn as nn

batch_size = 16
dim = 16384


class Model(nn.Module):
    """Swish / SiLU: y = x * sigmoid(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


def get_inputs():
    x = torch.randn(batch_size, dim) * 4.0
    return [x]


def get_init_inputs():
    return []
