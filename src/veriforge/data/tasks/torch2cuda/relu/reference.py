import torch
import torch.nn as nn

batch_size = 16
dim = 16384


class Model(nn.Module):
    """Applies ReLU element-wise: y = max(x, 0)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
