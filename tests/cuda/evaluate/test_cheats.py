"""Every known cheat in cheats/ must be rejected, with the reason its header announces."""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.cuda.evaluate.anticheat_torch import scan_torch
from veriforge.cuda.evaluate.harness import evaluate

CHEATS = Path(__file__).parent / "cheats"
TASKS = Path(__file__).parents[1] / "tasks" / "data"


def _expect(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    return first.split("expect:", 1)[1].strip()


@pytest.mark.parametrize("path", sorted((CHEATS / "c2cuda").glob("*.cu")), ids=lambda p: p.stem)
def test_c_cheat_rejected(path: Path) -> None:
    memcheck = "// memcheck" in path.read_text()
    res = evaluate(TASKS / "c2cuda" / "vec_scale_add", path, configs=["small"], memcheck=memcheck,
                   estimate=False)
    assert not res.verdict.correct, path.name
    assert _expect(path).lower() in res.verdict.reason.lower(), res.verdict.reason


@pytest.mark.parametrize("path", sorted((CHEATS / "torch2cuda").glob("*.py")), ids=lambda p: p.stem)
def test_torch_cheat_rejected_statically(path: Path) -> None:
    findings = scan_torch(path.read_text())
    assert findings, path.name
    assert any(_expect(path).lower() in f.lower() for f in findings), findings


def test_honest_torch_impls_pass_static_scan() -> None:
    for impl in sorted((TASKS / "torch2cuda" / "relu_rows" / "impls").glob("*.py")):
        assert scan_torch(impl.read_text()) == [], impl.name


RELU = TASKS / "torch2cuda" / "relu_rows"
END_TO_END = ["torch_op", "monkey_patch", "tensor_subclass", "half_precision", "calls_model", "try_fallback"]


@pytest.mark.parametrize("name", END_TO_END)
def test_torch_cheat_rejected_by_evaluate(name: str) -> None:
    path = CHEATS / "torch2cuda" / f"{name}.py"
    res = evaluate(RELU, path, configs=["small"])
    assert not res.verdict.correct and res.verdict.rejected, res.verdict.reason
    assert res.details["rejection"] == "static"
    assert _expect(path).lower() in res.verdict.reason.lower(), res.verdict.reason


_DYNAMIC_HEAD = '''
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

_ext = load_cuda("copy_relu", r"""
__global__ void k(const float* x, const float* s, float* y, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) { float v = x[i]; y[i] = (v > 0.f ? v : 0.f) * s[i % cols]; }
}
extern "C" void relu_scale(const float* x, const float* s, float* y, int rows, int cols) {
    k<<<(rows * cols + 127) / 128, 128>>>(x, s, y, rows, cols);
}
""")
# EXTRA


class ModelNew(nn.Module):
    def __init__(self, dim_in):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim_in))

    def forward(self, x):
        y = torch.empty_like(x)
        _ext.relu_scale(x.contiguous(), self.scale, y, x.size(0), x.size(1))
'''
# Candidates with correct numbers that only the dynamic checks (in the isolated child) can refuse.
DYNAMIC = {
    "subclass": _DYNAMIC_HEAD.replace("# EXTRA", "class Lazy(torch.Tensor):\n    pass")
    + "        return y.as_subclass(Lazy)\n",
    "precision changes": _DYNAMIC_HEAD + "        return y.half()\n",
    "monkey-patching": _DYNAMIC_HEAD.replace("# EXTRA", "torch.allclose = lambda *a, **k: True")
    + "        return y\n",
    "lives on meta": _DYNAMIC_HEAD + "        return torch.empty_like(y, device='meta')\n",
}
HONEST = _DYNAMIC_HEAD + "        return y\n"


@pytest.mark.parametrize("reason", sorted(DYNAMIC))
def test_torch_cheats_past_the_static_scan_are_rejected_dynamically(reason: str, monkeypatch) -> None:
    from veriforge.cuda.evaluate import anticheat_torch

    assert evaluate(RELU, HONEST, configs=["small"]).verdict.correct  # the kernel itself is right
    monkeypatch.setattr(anticheat_torch, "scan_torch", lambda *a, **k: [])
    res = evaluate(RELU, DYNAMIC[reason], configs=["small"])
    assert not res.verdict.correct and res.verdict.rejected, res.verdict.reason
    assert res.details["rejection"] == "dynamic"
    assert reason in res.verdict.reason, res.verdict.reason
