import torch
import torch.nn as nn

batch_size = 16
dim = 16384


class Model(nn.Module):
    """Softmax over dim 1 of a (batch_size, dim) tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    x = torch.randn(batch_size, dim) * 3.0 + 10.0
    return [x]


def get_init_inputs():
    return []
