import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
hidden = 1024
eps = 1e-05


class Model(nn.Module):
    """layernorm over the last dim of a 2-D tensor (affine, plain)"""

    def __init__(self, eps: float, hidden: int):
        super().__init__()
        self.eps = eps
        self.hidden = hidden
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)
        self.bias = nn.Parameter(torch.randn(hidden) * 0.5)

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, eps=self.eps)


def get_inputs():
    return [torch.randn(batch_size, hidden) * 2.0 + 3.0]


def get_init_inputs():
    return [eps, hidden]
