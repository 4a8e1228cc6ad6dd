"""Shared building blocks of the C→CUDA families of part A (element-wise, reduce, scan, stencil, gather).

Every generated task needs the same plumbing: C types with their vector types and math-function
spellings, ``[[params]]`` tables and the matching C parameter list, configuration seeds derived from
the task seed, a launch-size helper in every CUDA source, tolerances per output kind. Keeping it here
means each family module only describes *what* its variants compute and how each strategy is
organised, and a fix (e.g. to the launch helper) reaches every family at once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from veriforge.cudaperf.dataset.family import FamilyError, GeneratedTask, Impl

__all__ = ["CUDA_PRELUDE", "DTYPES", "CType", "P", "config_seed", "make_task", "param", "signature",
           "task_seed", "tolerance"]


@dataclass(frozen=True)
class CType:
    """A C scalar type as the families use it (C spelling, short tag for ids, vector type, limits)."""

    c: str  # C spelling: float, double, int, ...
    tag: str  # short tag for task ids: f32, f64, i32, ...
    size: int  # bytes
    vec: str  # 16-byte CUDA vector type (float4, double2, int4, ...) or "" when none
    width: int  # elements per vector
    floating: bool
    lowest: str  # C expression of the smallest value (identity of max)
    highest: str  # C expression of the largest value (identity of min)
    np: str  # numpy dtype name

    def fn(self, name: str) -> str:
        """The math function for this precision (``expf`` for float, ``exp`` for double)."""
        return name + "f" if self.c == "float" else name

    def lit(self, value: float | int) -> str:
        """A literal of this type (``0.5f`` for float), so float code never silently promotes to double."""
        if not self.floating:
            return str(int(value))
        text = repr(float(value))
        if "e" not in text and "." not in text:
            text += ".0"
        return text + ("f" if self.c == "float" else "")


DTYPES: dict[str, CType] = {
    "float": CType("float", "f32", 4, "float4", 4, True, "-INFINITY", "INFINITY", "float32"),
    "double": CType("double", "f64", 8, "double2", 2, True, "-INFINITY", "INFINITY", "float64"),
    "int": CType("int", "i32", 4, "int4", 4, False, "INT_MIN", "INT_MAX", "int32"),
    "unsigned int": CType("unsigned int", "u32", 4, "uint4", 4, False, "0u", "UINT_MAX", "uint32"),
    "unsigned char": CType("unsigned char", "u8", 1, "uchar4", 4, False, "0", "255", "uint8"),
    "long long": CType("long long", "i64", 8, "longlong2", 2, False, "LLONG_MIN", "LLONG_MAX", "int64"),
}


@dataclass(frozen=True)
class P:
    """One parameter of a task: the ``[[params]]`` table and its C declaration come from the same object."""

    name: str
    ctype: str  # pointee or scalar type, e.g. "float"
    role: str  # in | out | inout | scalar
    size: str | None = None
    init: str | None = None
    value: str | int | float | None = None

    @property
    def decl_type(self) -> str:
        if self.role == "scalar":
            return self.ctype
        return f"const {self.ctype}*" if self.role == "in" else f"{self.ctype}*"

    def table(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.decl_type, "role": self.role}
        for key in ("size", "init", "value"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def param(name: str, ctype: str, role: str, size: str | None = None, init: str | None = None,
          value: str | int | float | None = None) -> P:
    return P(name, ctype, role, size, init, value)


def signature(params: Sequence[P], *, restrict: bool = False) -> str:
    """The C parameter list, e.g. ``const float* a, float* out, int n`` (optionally ``__restrict__``)."""
    parts = []
    for p in params:
        q = " __restrict__" if restrict and p.role != "scalar" and p.role != "inout" else ""
        parts.append(f"{p.decl_type}{q} {p.name}")
    return ", ".join(parts)


def args(params: Sequence[P]) -> str:
    return ", ".join(p.name for p in params)


def task_seed(family_seed: int, task_id: str) -> int:
    """A task's seed: stable in the family seed and the id, independent of enumeration order."""
    digest = hashlib.sha256(f"{family_seed}:{task_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def config_seed(seed: int, k: int) -> int:
    digest = hashlib.sha256(f"{seed}/config{k}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


#: Included at the top of every CUDA implementation: a grid-size helper that respects the device's SM
#: count (the CPU runtime reports 16 SMs, so grids stay CPU-sized) and an alignment test for vector paths.
CUDA_PRELUDE = """#include <cuda_runtime.h>
#include <stdint.h>
#include <limits.h>
#include <math.h>

static int ck_grid(long long work, int threads, int blocks_per_sm) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (sms <= 0) sms = 16;
    long long blocks = (work + threads - 1) / threads;
    long long cap = (long long)sms * blocks_per_sm;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    return (int)blocks;
}

static bool ck_aligned(const void* p, int bytes) {
    return (reinterpret_cast<uintptr_t>(p) % (uintptr_t)bytes) == 0;
}
"""

C_PRELUDE = "#include <math.h>\n#include <limits.h>\n"


def tolerance(ctype: CType, kind: str) -> dict[str, float]:
    """Tolerances by output kind: ``exact`` (no table), ``arith`` (a few roundings), ``transc``
    (library transcendentals differ by ulps between GPU and host), ``accum`` (order-dependent
    accumulation: reductions, scans, atomics)."""
    if not ctype.floating or kind == "exact":
        return {}
    table = {
        ("float", "arith"): (1e-5, 1e-6), ("float", "transc"): (1e-4, 1e-5), ("float", "accum"): (1e-4, 1e-5),
        ("double", "arith"): (1e-10, 1e-12), ("double", "transc"): (1e-9, 1e-11),
        ("double", "accum"): (1e-9, 1e-11),
    }
    rtol, atol = table[(ctype.c, kind)]
    return {"rtol": rtol, "atol": atol}


def impl(name: str, strategy: str, quality: int, source: str, description: str) -> Impl:
    return Impl(name=name, strategy=strategy, source=CUDA_PRELUDE + "\n" + source.strip() + "\n",
                quality=quality, description=description)


def make_task(*, family: str, family_seed: int, task_id: str, category: str, title: str, description: str,
              reference: str, impls: Iterable[Impl], params: Sequence[P], configs: Sequence[dict[str, Any]],
              metrics: dict[str, str], tolerance: dict[str, Any], variant: dict[str, Any],
              tags: Sequence[str] = (), timing: Sequence[dict[str, Any]] = ()) -> GeneratedTask:
    """Assemble a :class:`GeneratedTask`; configurations get names (given) and seeds derived from the task seed.

    ``timing``: the ``[[timing]]`` configurations (H100-scale sizes the speed is judged at; estimated, never
    run, on the CPU back-end). A timing table without a name is called ``"timing"``; its seed is derived
    like a configuration's, from a separate index range, so adding it never moves the verified seeds.
    """
    seed = task_seed(family_seed, task_id)
    cfgs = []
    for k, cfg in enumerate(configs):
        if "name" not in cfg:
            raise FamilyError(f"task {task_id}: every configuration needs a name")
        cfgs.append({"name": cfg["name"], "seed": config_seed(seed, k),
                     **{key: v for key, v in cfg.items() if key != "name"}})
    timed = []
    for k, cfg in enumerate(timing):
        name = cfg.get("name", "timing" if len(timing) == 1 else f"timing{k}")
        for key, v in cfg.items():
            if isinstance(v, int) and not isinstance(v, bool) and not -2**31 <= v < 2**31:
                raise FamilyError(f"task {task_id}: timing value {key} = {v} does not fit an int32")
        timed.append({"name": name, "seed": config_seed(seed, 1000 + k),
                      **{key: v for key, v in cfg.items() if key != "name"}})
    return GeneratedTask(
        id=task_id, kind="c2cuda", family=family, category=category, title=title,
        description=description.strip() + "\n", reference=C_PRELUDE + "\n" + reference.strip() + "\n",
        impls=list(impls), configs=cfgs, metrics=metrics, params=[p.table() for p in params],
        tolerance=tolerance, tags=list(tags), variant=variant, seed=seed, timing=timed)
