# expect: reference
# ruff: noqa  (a deliberately bad candidate: the anti-cheat scan must reject it as written)
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

_ext = load_cuda("noop", r"""extern "C" void noop(float* y, int n) { }""")

from reference import Model


class ModelNew(Model):
    pass
