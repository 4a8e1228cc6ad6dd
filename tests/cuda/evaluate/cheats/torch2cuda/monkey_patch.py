# expect: monkey-patching
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

_ext = load_cuda("noop", r"""extern "C" void noop(float* y, int n) { }""")

torch.allclose = lambda *a, **k: True


class ModelNew(nn.Module):
    def __init__(self, dim_in):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        _ext.noop(y, y.numel())
        return y
