"""Shared templates for the PyTorch→CUDA families (``torch_*.py``).

Every generated torch2cuda task has the same skeleton: a KernelBench ``reference.py`` (module-level
size constants, ``Model``, ``get_inputs``, ``get_init_inputs``) and several ``impls/*.py`` whose
``ModelNew`` builds its parameters exactly as ``Model`` does and hands raw pointers to ONE launcher,
``extern "C" void run(...)``, through :func:`veriforge.cuda.torchbind.load_cuda`. Only the CUDA source
and a few lines of Python differ between tasks, so the families describe a task as data
(:class:`TorchSpec`) and this module renders the files. That keeps hundreds of tasks consistent with
the anti-cheat rules (no torch compute on the host, static CUDA strings) in one place.

Nothing here imports torch: the task text is plain strings, so enumerating the dataset stays cheap.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from veriforge.cudaperf.dataset.family import FamilyError, GeneratedTask, Impl

__all__ = ["CUDA_HELPERS", "TIMING_SHAPES", "ImplSpec", "TorchSpec", "build_task", "config_rng", "indent",
           "timing_for"]

# Small device helpers many kernels share (warp/block reductions). Kept as text so each impl is a
# self-contained file, as a model would have to write it.
CUDA_HELPERS = r'''
__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}
'''


@dataclass(frozen=True)
class ImplSpec:
    """One implementation: a CUDA source whose ``run`` launcher the shared ModelNew calls."""

    name: str
    strategy: str
    quality: int
    description: str
    cuda: str


@dataclass
class TorchSpec:
    """A task as data; :func:`build_task` renders reference.py, the impls and task.toml.

    ``forward_args``: the forward() parameter names (inputs, in get_inputs order).
    ``init_args``: constructor parameters ``[(name, annotation)]`` (values from get_init_inputs).
    ``init_body``: lines run by BOTH Model.__init__ and ModelNew.__init__ (parameter creation, so the
    harness's identical seeding gives identical weights) after ``super().__init__()``.
    ``ref_forward``: the body of Model.forward (torch ops).
    ``prep``: ModelNew.forward lines before the launch (``.contiguous()``, output allocation); the
    launch is ``_ext.run(*call_args)`` and ``ret`` is returned.
    """

    task_id: str
    family: str
    category: str
    title: str
    description: str
    consts: dict[str, Any]
    forward_args: list[str]
    ref_forward: list[str]
    inputs: list[str]
    prep: list[str]
    call_args: list[str]
    ret: str
    impls: list[ImplSpec]
    configs: list[dict[str, Any]]
    metrics: dict[str, str]
    init_args: list[tuple[str, str]] = field(default_factory=list)
    init_values: list[str] = field(default_factory=list)
    init_body: list[str] = field(default_factory=list)
    tolerance: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    variant: dict[str, Any] = field(default_factory=dict)
    model_doc: str = ""
    ref_imports: list[str] = field(default_factory=list)
    timing: list[dict[str, Any]] = field(default_factory=list)  # [[timing]] overrides; default: timing_for()


def indent(lines: Sequence[str], n: int = 8) -> str:
    pad = " " * n
    return "\n".join(pad + ln if ln else "" for ln in lines)


def _init_sig(spec: TorchSpec) -> str:
    return "".join(f", {n}: {t}" for n, t in spec.init_args)


def _store_init(spec: TorchSpec) -> list[str]:
    return [f"self.{n} = {n}" for n, _ in spec.init_args]


def render_reference(spec: TorchSpec) -> str:
    consts = "\n".join(f"{k} = {v!r}" for k, v in spec.consts.items())
    imports = "\n".join(["import torch", "import torch.nn as nn", "import torch.nn.functional as F",
                         *spec.ref_imports])
    init = [*_store_init(spec), *spec.init_body]
    return f'''{imports}

{consts}


class Model(nn.Module):
    """{spec.model_doc or spec.title}"""

    def __init__(self{_init_sig(spec)}):
        super().__init__()
{indent(init) if init else "        pass"}

    def forward(self, {", ".join(spec.forward_args)}):
{indent(spec.ref_forward)}


def get_inputs():
    return [{", ".join(spec.inputs)}]


def get_init_inputs():
    return [{", ".join(spec.init_values)}]
'''


def render_impl(spec: TorchSpec, impl: ImplSpec) -> str:
    init = [*_store_init(spec), *spec.init_body]
    body = [*spec.prep, f"_ext.run({', '.join(spec.call_args)})", f"return {spec.ret}"]
    doc = impl.description.replace('"""', "'''")
    return f'''"""{spec.title}: {impl.strategy} implementation.

{doc}
"""
import torch
import torch.nn as nn

from veriforge.cuda.torchbind import load_cuda

CUDA_SRC = r\'\'\'{impl.cuda.rstrip()}
\'\'\'

_ext = load_cuda("{spec.task_id}_{impl.name}", CUDA_SRC)


class ModelNew(nn.Module):
    def __init__(self{_init_sig(spec)}):
        super().__init__()
{indent(init) if init else "        pass"}

    def forward(self, {", ".join(spec.forward_args)}):
{indent(body)}
'''


#: The ``[[timing]]`` sizes (H100 scale, estimated only, never run on the CPU) by the set of constants a
#: task's configurations override: ~16M-element tensors (rows x cols 4096 x 4096, 3-D 256^3, 4-D
#: 256 x 64 x 32^2: groups of 2 x 1024 for group norms, 32-wide rows for last-dim work), many rows for
#: the row-wise kernels of norms (16384 x 1024), GEMMs of 1024^3, 16 batched 512^3 products, and linear
#: layers of 4096 x 2048 -> 2048 (16 x 256 tokens for 3-D inputs). :func:`timing_for` adapts a few
#: layouts to what their kernels are designed for.
TIMING_SHAPES: dict[frozenset[str], dict[str, int]] = {
    frozenset({"batch_size", "dim"}): {"batch_size": 4096, "dim": 4096},
    frozenset({"batch_size", "dim1", "dim2"}): {"batch_size": 256, "dim1": 256, "dim2": 256},
    frozenset({"batch_size", "channels", "length"}): {"batch_size": 64, "channels": 256, "length": 1024},
    frozenset({"batch_size", "channels", "height", "width"}): {"batch_size": 256, "channels": 64, "height": 32,
                                                               "width": 32},
    frozenset({"batch_size", "hidden"}): {"batch_size": 16384, "hidden": 1024},
    frozenset({"batch_size", "seq_len", "hidden"}): {"batch_size": 32, "seq_len": 512, "hidden": 1024},
    frozenset({"M", "K", "N"}): {"M": 1024, "K": 1024, "N": 1024},
    frozenset({"batch_size", "M", "K", "N"}): {"batch_size": 16, "M": 512, "K": 512, "N": 512},
    frozenset({"batch_size", "in_features", "out_features"}): {"batch_size": 4096, "in_features": 2048,
                                                               "out_features": 2048},
    frozenset({"batch_size", "seq_len", "in_features", "out_features"}): {"batch_size": 16, "seq_len": 256,
                                                                          "in_features": 2048, "out_features": 2048},
    frozenset({"d0", "d1"}): {"d0": 4096, "d1": 4096},
    frozenset({"d0", "d1", "d2"}): {"d0": 256, "d1": 256, "d2": 256},
    frozenset({"d0", "d1", "d2", "d3"}): {"d0": 64, "d1": 64, "d2": 64, "d3": 64},
}


def timing_for(spec: TorchSpec) -> list[dict[str, Any]]:
    """``spec.timing`` if given, else one ``[[timing]]`` configuration from :data:`TIMING_SHAPES` for the
    constants the task's configurations override (its shape variables)."""
    if spec.timing:
        return [dict(t) for t in spec.timing]
    keys = frozenset(k for c in spec.configs for k in c if k != "name")
    if keys not in TIMING_SHAPES:
        raise FamilyError(f"task {spec.task_id}: no [[timing]] shape for the constants {sorted(keys)}")
    shape = dict(TIMING_SHAPES[keys])
    v = spec.variant
    if v.get("rank") == 2 and v.get("layout") == "first":
        # a 2-D tensor reduced/scanned over dim 0: a thread or a 32-wide tile per column needs tens of
        # thousands of columns (4096 columns of 4096 would leave a thread-per-column kernel latency-bound)
        shape = {"batch_size": 256, "dim": 65536}
    return [{"name": "timing", **shape}]


def config_rng(seed: int, task_id: str) -> random.Random:
    """A generator private to (seed, task): config sizes and seeds do not shift when tasks are added."""
    return random.Random(zlib.crc32(f"{seed}:{task_id}".encode()))


def build_task(spec: TorchSpec, seed: int) -> GeneratedTask:
    """Render ``spec`` into a GeneratedTask (config seeds derived from ``seed`` and the task id)."""
    if not spec.task_id.startswith("pt_"):
        raise FamilyError(f"torch2cuda task id {spec.task_id!r} must start with 'pt_'")
    if "'''" in "".join(i.cuda for i in spec.impls):
        raise FamilyError(f"task {spec.task_id}: CUDA source may not contain triple quotes")
    rng = config_rng(seed, spec.task_id)
    configs = []
    for cfg in spec.configs:
        unknown = set(cfg) - set(spec.consts) - {"name"}
        if unknown:
            raise FamilyError(f"task {spec.task_id}: config overrides unknown constants {sorted(unknown)}")
        configs.append({"name": cfg["name"], "seed": rng.randrange(1, 2**31 - 1),
                        **{key: v for key, v in cfg.items() if key != "name"}})
    # [[timing]] seeds are drawn after the configurations' (adding them moves no verified seed)
    timing = []
    for k, cfg in enumerate(timing_for(spec)):
        unknown = set(cfg) - set(spec.consts) - {"name"}
        if unknown:
            raise FamilyError(f"task {spec.task_id}: timing overrides unknown constants {sorted(unknown)}")
        for key, v in cfg.items():
            if isinstance(v, int) and not isinstance(v, bool) and not -2**31 <= v < 2**31:
                raise FamilyError(f"task {spec.task_id}: timing value {key} = {v} does not fit an int32")
        timing.append({"name": cfg.get("name", f"timing{k}" if k else "timing"), "seed": rng.randrange(1, 2**31 - 1),
                       **{key: v for key, v in cfg.items() if key != "name"}})
    impls = [Impl(i.name, i.strategy, render_impl(spec, i), i.quality, i.description) for i in spec.impls]
    return GeneratedTask(
        id=spec.task_id, kind="torch2cuda", family=spec.family, category=spec.category, title=spec.title,
        description=spec.description.strip() + "\n", reference=render_reference(spec), impls=impls,
        configs=configs, metrics=dict(spec.metrics), tolerance=dict(spec.tolerance), tags=list(spec.tags),
        variant=dict(spec.variant), seed=seed, timing=timing)
