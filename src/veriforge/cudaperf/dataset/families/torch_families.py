"""PyTorch→CUDA task families (issue 14): registration of every ``torch_*`` generator.

``family.py`` imports only this module; the generators live in sibling ``torch_*.py`` modules that
describe tasks as data and render them through :mod:`.torch_common`. Importing this module must not
import torch (the tasks are text), so the registry stays cheap to build.
"""

from __future__ import annotations

from collections.abc import Iterator

from veriforge.cudaperf.dataset.family import GeneratedTask, family

from . import torch_elementwise as ew
from . import torch_matmul as mm
from . import torch_misc as misc
from . import torch_norm as nm
from . import torch_reduce as rd

__all__ = ["ew_compose", "ew_fusion"]


@family("torch_elementwise_fusion", kind="torch2cuda", category="elementwise")
def ew_fusion(seed: int) -> Iterator[GeneratedTask]:
    """12 activations × 20 fusions (scale/shift, second input, broadcast parameters)."""
    yield from ew.fusion_tasks(seed, "torch_elementwise_fusion")


@family("torch_elementwise_compose", kind="torch2cuda", category="elementwise")
def ew_compose(seed: int) -> Iterator[GeneratedTask]:
    """outer(inner(x)) for ordered pairs of distinct activations."""
    yield from ew.compose_tasks(seed, "torch_elementwise_compose")


@family("torch_reduce", kind="torch2cuda", category="reduction")
def reduce_dims(seed: int) -> Iterator[GeneratedTask]:
    """sum/mean/max/min/argmax/argmin/norms/logsumexp/var/std over each dim of 2-D/3-D/4-D inputs."""
    yield from rd.reduce_tasks(seed, "torch_reduce")


@family("torch_reduce_fused", kind="torch2cuda", category="reduction")
def reduce_fused(seed: int) -> Iterator[GeneratedTask]:
    """sum/mean/max/min of an activation of x (the activation fused into the reduction's loads)."""
    yield from rd.act_reduce_tasks(seed, "torch_reduce_fused")


@family("torch_softmax", kind="torch2cuda", category="softmax")
def softmax(seed: int) -> Iterator[GeneratedTask]:
    """softmax / log_softmax / softmin over every dim of 2-D/3-D inputs, plain or fused."""
    yield from nm.softmax_tasks(seed, "torch_softmax")


@family("torch_norm", kind="torch2cuda", category="layernorm")
def norms(seed: int) -> Iterator[GeneratedTask]:
    """LayerNorm, RMSNorm, GroupNorm/InstanceNorm and Lp-normalisation, with fusions."""
    yield from nm.norm_tasks(seed, "torch_norm")


@family("torch_matmul", kind="torch2cuda", category="matmul")
def matmul(seed: int) -> Iterator[GeneratedTask]:
    """matmul / bmm with transposed operands and scale / residual / ReLU epilogues."""
    yield from mm.matmul_tasks(seed, "torch_matmul")


@family("torch_linear", kind="torch2cuda", category="matmul")
def linear(seed: int) -> Iterator[GeneratedTask]:
    """nn.Linear (± bias) (+ activation) (+ residual) on 2-D and 3-D inputs."""
    yield from mm.linear_tasks(seed, "torch_linear")


@family("torch_scan", kind="torch2cuda", category="scan")
def scans(seed: int) -> Iterator[GeneratedTask]:
    """cumsum/cumprod/cummax/cummin (also reversed / exclusive) over every dim."""
    yield from misc.scan_tasks(seed, "torch_scan")


@family("torch_permute", kind="torch2cuda", category="transpose")
def permutes(seed: int) -> Iterator[GeneratedTask]:
    """Transposes and permutes of 2-D/3-D/4-D tensors fused with element-wise ops."""
    yield from misc.permute_tasks(seed, "torch_permute")


@family("torch_loss", kind="torch2cuda", category="reduction")
def losses(seed: int) -> Iterator[GeneratedTask]:
    """Element-wise losses (MSE, L1, smooth-L1, Huber, BCE-with-logits, soft-margin) × reductions."""
    yield from misc.loss_tasks(seed, "torch_loss")
