"""The task.toml schema (spec v1, docs/tasks.md) as pydantic models.

Why pydantic: task folders are written by hand (by people and by models), so every mistake must
come back as one readable sentence naming the key, not as a KeyError deep inside the harness.
Unknown top-level keys are errors (a typo such as ``tolerence`` must not silently fall back to
defaults); ``[[configs]]`` entries are open because every extra key is a config variable.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from veriforge.errors import ConfigError

from .ctypes_map import CSignatureError, is_pointer, numpy_dtype
from .expr import ExpressionError, parse

__all__ = [
    "CATEGORIES",
    "STRATEGIES",
    "ConfigSpec",
    "ImplSpec",
    "ParamSpec",
    "TaskFormatError",
    "TaskSpec",
    "Tolerance",
    "parse_task",
]

CATEGORIES = ("elementwise", "reduction", "scan", "histogram", "stencil", "convolution", "transpose", "matmul",
              "gemv", "softmax", "layernorm", "gather_scatter", "sort", "other")
STRATEGIES = ("naive", "coalesced", "grid_stride", "shared_tiled", "register_tiled", "vectorized",
              "warp_shuffle", "atomic", "multi_pass", "fused", "other")
_ID = re.compile(r"^[a-z0-9_]+$")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")


class TaskFormatError(ConfigError):
    """A task folder does not follow the task format."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_expr(value: Any, what: str) -> Any:
    if isinstance(value, str):
        try:
            parse(value)
        except ExpressionError as exc:
            raise ValueError(f"{what}: {exc}") from None
    return value


def _check_init(value: str, what: str) -> None:
    from .generate import GeneratorError, check_generator  # generate imports this module

    try:
        check_generator(value)
    except (GeneratorError, ExpressionError) as exc:
        raise ValueError(f"{what}: {exc}") from None


class ParamSpec(_Strict):
    """One ``[[params]]`` entry (C→CUDA tasks), in signature order."""

    name: str
    type: str
    role: Literal["in", "out", "inout", "scalar"]
    size: str | int | None = None
    init: str | None = None
    value: str | int | float | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ParamSpec:
        if not _IDENT.match(self.name):
            raise ValueError(f"param name {self.name!r} is not a C identifier")
        try:
            numpy_dtype(self.type)
        except CSignatureError as exc:
            raise ValueError(f"param {self.name!r}: {exc}") from None
        pointer = is_pointer(self.type)
        if (self.role == "scalar") == pointer:
            raise ValueError(f"param {self.name!r}: role {self.role!r} does not fit type {self.type!r} "
                             f"(pointers are in/out/inout, values are scalar)")
        if pointer and self.size is None:
            raise ValueError(f"param {self.name!r}: pointer parameters need `size` (an element count)")
        if self.role in ("in", "inout") and not self.init:
            raise ValueError(f"param {self.name!r}: role {self.role!r} needs `init` (a generator)")
        if self.role == "out" and self.init:
            raise ValueError(f"param {self.name!r}: `init` makes no sense for an output (it is poisoned)")
        if self.role in ("out", "inout") and "const" in self.type.split("*")[0]:
            raise ValueError(f"param {self.name!r}: an output pointer cannot be const ({self.type!r})")
        if self.init:
            _check_init(self.init, f"param {self.name!r} init")
        _check_expr(self.size, f"param {self.name!r} size")
        _check_expr(self.value, f"param {self.name!r} value")
        return self

    @property
    def dtype(self) -> str:
        return numpy_dtype(self.type)

    @property
    def is_output(self) -> bool:
        return self.role in ("out", "inout")


class Tolerance(BaseModel):
    """``[tolerance]``: ``rtol``/``atol`` plus optional per-output sub-tables ``[tolerance.<name>]``."""

    model_config = ConfigDict(extra="allow", frozen=True)

    rtol: float | None = None
    atol: float | None = None

    @model_validator(mode="after")
    def _check(self) -> Tolerance:
        for key, value in (self.model_extra or {}).items():
            if not isinstance(value, dict) or set(value) - {"rtol", "atol"}:
                raise ValueError(f"[tolerance.{key}] must be a table with rtol/atol only, got {value!r}")
            for v in value.values():
                if not isinstance(v, int | float) or v < 0:
                    raise ValueError(f"[tolerance.{key}] values must be numbers >= 0")
        for v in (self.rtol, self.atol):
            if v is not None and v < 0:
                raise ValueError("tolerances must be >= 0")
        return self

    def per_output(self) -> dict[str, dict[str, float]]:
        return {k: dict(v) for k, v in (self.model_extra or {}).items()}

    def for_output(self, name: str, dtype: str) -> tuple[float, float] | None:
        """(rtol, atol) for output ``name`` of numpy ``dtype``; ``None`` = compare exactly."""
        own = self.per_output().get(name)
        floating = dtype.startswith(("float", "bfloat"))
        default = _DEFAULT_TOL.get(dtype, (1e-4, 1e-5))
        if own is not None:
            return (float(own.get("rtol", self.rtol if self.rtol is not None else default[0])),
                    float(own.get("atol", self.atol if self.atol is not None else default[1])))
        if not floating:
            return None
        return (self.rtol if self.rtol is not None else default[0], self.atol if self.atol is not None else default[1])


_DEFAULT_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-12), "float16": (1e-2, 1e-3),
                "bfloat16": (2e-2, 1e-3)}


class ConfigSpec(BaseModel):
    """One ``[[configs]]`` entry: ``name``, ``seed``, optional ``init`` overrides; every other key
    is a configuration variable (C→CUDA) or a module constant override of reference.py (torch)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    seed: int = 0
    init: dict[str, str] = Field(default_factory=dict)

    @property
    def variables(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @model_validator(mode="after")
    def _check(self) -> ConfigSpec:
        if not re.match(r"^[A-Za-z0-9_.-]+$", self.name):
            raise ValueError(f"config name {self.name!r}: use letters, digits, _ . -")
        for key, value in self.variables.items():
            if not _IDENT.match(key):
                raise ValueError(f"config {self.name!r}: variable {key!r} is not an identifier")
            if isinstance(value, dict | list):
                raise ValueError(f"config {self.name!r}: variable {key!r} must be a number, string or bool")
        return self


class ImplSpec(_Strict):
    """One ``[[implementations]]`` entry."""

    name: str
    file: str
    strategy: Literal[STRATEGIES]  # type: ignore[valid-type]
    quality: int | None = None
    description: str = ""

    @field_validator("file")
    @classmethod
    def _relative(cls, value: str) -> str:
        p = Path(value)
        if p.is_absolute() or ".." in p.parts:
            raise ValueError(f"implementation file {value!r} must be a path inside the task folder")
        return value


class TaskSpec(_Strict):
    """A parsed task.toml (the folder it came from is kept in :attr:`folder`)."""

    id: str
    family: Literal["c2cuda", "torch2cuda"]
    category: Literal[CATEGORIES]  # type: ignore[valid-type]
    title: str
    description: str
    entry: str = "solve"
    tags: list[str] = Field(default_factory=list)
    params: list[ParamSpec] = Field(default_factory=list)
    tolerance: Tolerance = Field(default_factory=Tolerance)
    metrics: dict[str, str | int | float] = Field(default_factory=dict)
    configs: list[ConfigSpec]
    timing: list[ConfigSpec] = Field(default_factory=list)
    """``[[timing]]``: sizes a candidate is *timed* at, not verified at on the CPU back-end (docs/tasks.md)."""
    implementations: list[ImplSpec] = Field(default_factory=list)
    allowed_dtypes: list[str] = Field(default_factory=lambda: ["float32"])  # optional (torch2cuda)
    folder: Path | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        if not _ID.match(self.id):
            raise ValueError(f"task id {self.id!r}: use lowercase letters, digits and underscores")
        if not _IDENT.match(self.entry):
            raise ValueError(f"entry {self.entry!r} is not a C identifier")
        if self.family == "c2cuda" and not self.params:
            raise ValueError("a c2cuda task needs [[params]]")
        if self.family == "torch2cuda" and self.params:
            raise ValueError("a torch2cuda task has no [[params]] (the signature is reference.py's)")
        names = [p.name for p in self.params]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate param names: {', '.join(sorted(dup))}")
        if self.family == "c2cuda" and not any(p.is_output for p in self.params):
            raise ValueError("no param has role out or inout: the task has no output")
        cnames = [c.name for c in (*self.configs, *self.timing)]
        if len(set(cnames)) != len(cnames):
            raise ValueError(f"duplicate config names in {cnames} (configs and timing share one namespace)")
        inames = [i.name for i in self.implementations]
        if len(set(inames)) != len(inames):
            raise ValueError(f"duplicate implementation names in {inames}")
        for key, value in self.metrics.items():
            _check_expr(value, f"metrics.{key}")
        outputs = {p.name for p in self.params if p.is_output}
        for key in self.tolerance.per_output():
            if self.family == "c2cuda" and key not in outputs:
                raise ValueError(f"[tolerance.{key}] names no output param (outputs: {', '.join(sorted(outputs))})")
        for cfg in (*self.configs, *self.timing):
            for key, gen in cfg.init.items():
                if key not in names:
                    raise ValueError(f"config {cfg.name!r}: init.{key} names no param")
                _check_init(gen, f"config {cfg.name!r}: init.{key}")
        return self

    def param(self, name: str) -> ParamSpec:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def config(self, name: str) -> ConfigSpec:
        """The verification or timing configuration ``name``."""
        for c in (*self.configs, *self.timing):
            if c.name == name:
                return c
        have = ", ".join(c.name for c in (*self.configs, *self.timing))
        raise TaskFormatError(f"task {self.id}: no config {name!r} (have: {have})")

    @property
    def timing_names(self) -> list[str]:
        return [c.name for c in self.timing]

    def implementation(self, name: str) -> ImplSpec:
        for i in self.implementations:
            if i.name == name:
                return i
        raise TaskFormatError(f"task {self.id}: no implementation {name!r} "
                              f"(have: {', '.join(i.name for i in self.implementations)})")


def _format_errors(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "task.toml"
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{loc}: {msg}")
    return "; ".join(lines)


def parse_task(data: dict[str, Any], folder: Path | None = None, where: str = "task.toml") -> TaskSpec:
    """Validate the parsed TOML ``data``; raises :class:`TaskFormatError` with every problem."""
    try:
        spec = TaskSpec.model_validate({**data, "folder": folder})
    except ValidationError as exc:
        raise TaskFormatError(f"{where}: {_format_errors(exc)}") from None
    if folder is not None and folder.name != spec.id:
        raise TaskFormatError(f"{where}: id {spec.id!r} differs from the folder name {folder.name!r}")
    return spec
