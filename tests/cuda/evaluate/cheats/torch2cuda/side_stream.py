# expect: stream
# ruff: noqa  (a deliberately bad candidate: the anti-cheat scan must reject it as written)
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

_ext = load_cuda("noop", r"""extern "C" void noop(float* y, int n) { }""")


class ModelNew(nn.Module):
    def __init__(self, dim_in):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim_in))

    def forward(self, x):
        s = torch.cuda.Stream()
        y = torch.empty_like(x)
        return y
