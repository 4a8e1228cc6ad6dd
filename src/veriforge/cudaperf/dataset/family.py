"""What a task *family* is: a deterministic generator of task folders in the veriforge task format.

CudaPerf's dataset is generated, not copied: each family (element-wise compositions, reductions,
stencils, GEMMs, ...) is a Python generator that, for a seed, yields :class:`GeneratedTask` objects
covering a grid of structural variants (which ops, which axis, which dtype, which radius, which
layout). A generated task is exactly a task folder of ``docs/tasks.md`` — task.toml, a serial C
reference (or a KernelBench ``Model``), and implementations labelled with their strategy — so the
harness, the anti-cheat, the cost model and the reward treat it like any hand-written task.

Why a registry of plain generator functions: families are written independently, imported lazily
(building the registry must not import torch or the CPU runtime), and enumerated in a fixed order so
that the same seed always yields the same tasks with the same ids (reproducible builds, resumable
runs, stable splits).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.errors import VeriforgeError

__all__ = ["FAMILY_MODULES", "Family", "FamilyError", "GeneratedTask", "Impl", "families", "family",
           "get_family"]


class FamilyError(VeriforgeError, ValueError):
    """An unknown family, or a family that yielded a malformed task."""


_ID = re.compile(r"^[a-z0-9_]+$")


@dataclass(frozen=True)
class Impl:
    """One implementation: its file name under ``impls/`` is ``<name>.cu`` (C→CUDA) or ``<name>.py``."""

    name: str
    strategy: str  # one of veriforge.cuda.tasks.schema.STRATEGIES
    source: str
    quality: int  # relative expected speed among this task's impls (higher = faster)
    description: str = ""


@dataclass
class GeneratedTask:
    """A task as a family yields it; :meth:`write` turns it into a task folder."""

    id: str  # unique across the whole dataset: lowercase letters, digits, underscores
    kind: str  # "c2cuda" | "torch2cuda"
    family: str  # the generating family's name (the split unit)
    category: str  # task.toml category (schema.CATEGORIES)
    title: str
    description: str  # the contract in words, what a model is told
    reference: str  # reference.c (C→CUDA) or reference.py (KernelBench format)
    impls: list[Impl]
    configs: list[dict[str, Any]]  # [[configs]] tables: name, seed, variables (and optional init overrides)
    metrics: dict[str, str]  # at least "flops" and "bytes" (expressions over config variables)
    params: list[dict[str, Any]] = field(default_factory=list)  # [[params]] tables (C→CUDA only)
    tolerance: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    extra_files: dict[str, str] = field(default_factory=dict)  # e.g. {"inputs.py": ...}
    variant: dict[str, Any] = field(default_factory=dict)  # the structural point that produced the task
    seed: int = 0
    timing: list[dict[str, Any]] = field(default_factory=list)  # [[timing]] tables: sizes speed is judged at

    def __post_init__(self) -> None:
        if not _ID.match(self.id):
            raise FamilyError(f"generated task id {self.id!r} must be lowercase letters, digits, underscores")
        if self.kind not in ("c2cuda", "torch2cuda"):
            raise FamilyError(f"task {self.id}: kind must be c2cuda or torch2cuda, not {self.kind!r}")

    # -- the task folder -------------------------------------------------------------------------
    def toml_data(self) -> dict[str, Any]:
        ext = "cu" if self.kind == "c2cuda" else "py"
        data: dict[str, Any] = {"id": self.id, "family": self.kind, "category": self.category,
                                "title": self.title, "description": self.description}
        if self.tags:
            data["tags"] = list(self.tags)
        if self.params:
            data["params"] = [dict(p) for p in self.params]
        if self.tolerance:
            data["tolerance"] = dict(self.tolerance)
        data["metrics"] = dict(self.metrics)
        data["configs"] = [dict(c) for c in self.configs]
        if self.timing:
            data["timing"] = [dict(c) for c in self.timing]
        data["implementations"] = [
            {"name": i.name, "file": f"impls/{i.name}.{ext}", "strategy": i.strategy, "quality": i.quality,
             **({"description": i.description} if i.description else {})} for i in self.impls]
        return data

    def files(self) -> dict[str, str]:
        """Relative path → text of every file of the task folder."""
        import tomli_w

        ext = "cu" if self.kind == "c2cuda" else "py"
        out = {"task.toml": tomli_w.dumps(self.toml_data(), multiline_strings=True),
               "reference.c" if self.kind == "c2cuda" else "reference.py": self.reference}
        out.update({f"impls/{i.name}.{ext}": i.source for i in self.impls})
        out.update(self.extra_files)
        return out

    def check(self) -> None:
        """Schema-check the task.toml without writing anything (raises TaskFormatError)."""
        from veriforge.cuda.tasks.schema import parse_task

        parse_task(self.toml_data(), None, where=f"generated task {self.id}")

    def write(self, root: str | Path) -> Path:
        """Write the folder ``root/<kind>/<id>/`` (replacing an older one) and return it."""
        import shutil

        folder = Path(root) / self.kind / self.id
        if folder.exists():
            shutil.rmtree(folder)
        for rel, text in self.files().items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return folder

    def content_hash(self) -> str:
        """Hash of every file's text: the run store's key for this task's verification."""
        blob = json.dumps(self.files(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Family:
    """A registered family: ``generate(seed)`` yields its tasks in a fixed order."""

    name: str
    kind: str  # "c2cuda" | "torch2cuda"
    category: str  # the dominant category (tasks may carry their own)
    generate: Callable[[int], Iterator[GeneratedTask]]
    doc: str = ""


_REGISTRY: dict[str, Family] = {}

# Modules that register families when imported (order = enumeration order of ``families()``).
FAMILY_MODULES: tuple[str, ...] = (
    "veriforge.cudaperf.dataset.families.c_elementwise",
    "veriforge.cudaperf.dataset.families.c_reduce",
    "veriforge.cudaperf.dataset.families.c_scan",
    "veriforge.cudaperf.dataset.families.c_stencil",
    "veriforge.cudaperf.dataset.families.c_gather",
    "veriforge.cudaperf.dataset.families.c_transpose",
    "veriforge.cudaperf.dataset.families.c_matmul",
    "veriforge.cudaperf.dataset.families.c_softmax",
    "veriforge.cudaperf.dataset.families.c_sort",
    "veriforge.cudaperf.dataset.families.c_sparse",
    "veriforge.cudaperf.dataset.families.torch_families",
)


def family(name: str, *, kind: str, category: str) -> Callable[[Callable[[int], Iterator[GeneratedTask]]],
                                                              Callable[[int], Iterator[GeneratedTask]]]:
    """Decorator registering ``fn(seed) -> Iterator[GeneratedTask]`` as family ``name``."""

    def register(fn: Callable[[int], Iterator[GeneratedTask]]) -> Callable[[int], Iterator[GeneratedTask]]:
        if name in _REGISTRY and _REGISTRY[name].generate is not fn:
            raise FamilyError(f"family {name!r} registered twice")
        _REGISTRY[name] = Family(name, kind, category, fn, (fn.__doc__ or "").strip())
        return fn

    return register


def _load_all() -> None:
    for mod in FAMILY_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:  # a missing module of ours is tolerated; a broken import is not
                raise


def families(kind: str | None = None) -> list[Family]:
    """Every registered family (optionally of one kind), in registration order."""
    _load_all()
    return [f for f in _REGISTRY.values() if kind is None or f.kind == kind]


def get_family(name: str) -> Family:
    _load_all()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise FamilyError(f"unknown family {name!r}; known: {known}") from None
