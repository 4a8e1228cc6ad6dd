# expect: @ operator
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

_ext = load_cuda("noop", r"""extern "C" void noop(float* y, int n) { }""")


class ModelNew(nn.Module):
    def __init__(self, dim_in):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim_in))

    def forward(self, x):
        return (x @ torch.eye(x.size(1))) * 0 + self.scale
