import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 32
in_features = 256
out_features = 128


class Model(nn.Module):
    """Linear + bias on a 2-D input"""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.linear = nn.Linear(in_features, out_features, bias=True)

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
