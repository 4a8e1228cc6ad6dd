import torch
import torch.nn as nn

batch_size = 4
dim = 64


class Model(nn.Module):
    """y = relu(x) * scale, with a learned per-column scale."""

    def __init__(self, dim_in):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim_in))

    def forward(self, x):
        return torch.relu(x) * self.scale


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
