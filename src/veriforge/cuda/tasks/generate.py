"""Input generators: ``uniform(lo, hi)``, ``normal(mean, std)``, ``randint(lo, hi)``,
``permutation(k)``, ``sorted(<generator>)`` and ``custom`` (``inputs.py``).

Inputs are a pure function of (task, configuration, trial): the random generator is
``numpy.random.default_rng([seed, trial])`` and parameters draw from it in signature order, so
the harness, the reference cache and a GPU worker on another machine all see the same numbers,
while every trial still gets fresh data (a candidate cannot memorise one input set).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from veriforge.core import pyparse as _pyparse

from .expr import ExpressionError, evaluate, evaluate_int
from .schema import ParamSpec, TaskFormatError, TaskSpec

__all__ = ["Case", "GeneratorError", "case_scalars", "check_generator", "make_case", "poison"]

_GENERATORS = {"uniform": 2, "normal": 2, "randint": 2, "permutation": 1}


class GeneratorError(TaskFormatError):
    """An ``init`` generator is malformed, or produced unusable inputs."""


def _parse(text: str) -> tuple[str, list[str], bool]:
    """``"sorted(uniform(0, n))"`` → ("uniform", ["0", "n"], True)."""
    try:
        node = _pyparse.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise GeneratorError(f"cannot parse generator {text!r}") from None
    is_sorted = False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "sorted":
        if len(node.args) != 1:
            raise GeneratorError(f"generator {text!r}: sorted() takes one generator")
        node, is_sorted = node.args[0], True
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _GENERATORS):
        raise GeneratorError(f"generator {text!r}: expected one of {', '.join(_GENERATORS)}, sorted(...) or custom")
    name = node.func.id
    if len(node.args) != _GENERATORS[name] or node.keywords:
        raise GeneratorError(f"generator {text!r}: {name} takes {_GENERATORS[name]} argument(s)")
    return name, [ast.unparse(a) for a in node.args], is_sorted


def check_generator(text: str) -> None:
    """Raise :class:`GeneratorError` if ``text`` is not a valid generator."""
    if text.strip() != "custom":
        _name, args, _ = _parse(text)
        for a in args:
            try:
                evaluate(a, _Anything())
            except ExpressionError as exc:
                if "unknown variable" not in str(exc) and "not a number" not in str(exc):
                    raise GeneratorError(f"generator {text!r}: {exc}") from None


class _Anything(dict):
    """An environment where every name is 1 (syntax checks without a configuration)."""

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> int:
        return 1


def draw(text: str, size: int, dtype: str, env: Mapping[str, Any], rng: np.random.Generator) -> np.ndarray:
    """Draw ``size`` values of ``dtype`` from generator ``text``."""
    name, args, is_sorted = _parse(text)
    vals = [evaluate(a, env) for a in args]
    dt = np.dtype(dtype)
    if name == "uniform":
        lo, hi = vals
        if dt.kind in "iub":
            out = rng.integers(int(np.floor(lo)), int(np.ceil(hi)), size=size, endpoint=False)
        else:
            out = rng.uniform(lo, hi, size=size)
    elif name == "normal":
        out = rng.normal(vals[0], vals[1], size=size)
        if dt.kind in "iu":
            out = np.rint(out)
    elif name == "randint":
        lo, hi = int(vals[0]), int(vals[1])
        if hi <= lo:
            raise GeneratorError(f"generator {text!r}: empty range [{lo}, {hi})")
        out = rng.integers(lo, hi, size=size)
    else:  # permutation
        k = int(vals[0])
        if k < size:
            raise GeneratorError(f"generator {text!r}: permutation({k}) has fewer than {size} elements")
        out = rng.permutation(k)[:size]
    if is_sorted:
        out = np.sort(out)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if out.size and (out.min() < info.min or out.max() > info.max):
            raise GeneratorError(f"generator {text!r} produced values outside the range of {dtype}")
    return np.ascontiguousarray(out.astype(dt))


@dataclass
class Case:
    """The arguments of one call: ``args`` in signature order (numpy arrays for pointers, Python
    numbers for scalars), ``env`` the variables used (config values plus custom scalars)."""

    config: str
    trial: int
    args: list[Any]
    env: dict[str, Any]

    def array(self, spec: TaskSpec, name: str) -> np.ndarray:
        return self.args[[p.name for p in spec.params].index(name)]


def _load_inputs_module(folder: Path) -> Any:
    path = folder / "inputs.py"
    if not path.is_file():
        raise GeneratorError(f"{folder.name}: init = 'custom' needs inputs.py with make_inputs(config, rng)")
    mod_name = f"_vf_task_inputs_{abs(hash(str(path.resolve())))}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "make_inputs", None)):
        raise GeneratorError(f"{path}: no function make_inputs(config, rng)")
    sys.modules[mod_name] = module
    return module


def poison(dtype: str, size: int, pattern: int = 0) -> np.ndarray:
    """An output buffer full of a value no correct kernel leaves behind: NaN (with a
    recognisable payload) for floats, 0xAB… (pattern 0) or 0xCD… (pattern 1) bytes otherwise."""
    dt = np.dtype(dtype)
    byte = 0xAB if pattern == 0 else 0xCD
    if dt.kind == "f":
        payload = {2: (0x7E00 | byte, np.uint16), 4: (0x7FC000 << 8 | byte, np.uint32),
                   8: (0x7FF8000000000000 | byte, np.uint64)}[dt.itemsize]
        return np.full(size, payload[0], dtype=payload[1]).view(dt)
    return np.frombuffer(bytes([byte]) * (size * dt.itemsize), dtype=dt).copy()


def _scalar(value: Any, param: ParamSpec) -> int | float:
    kind = np.dtype(param.dtype).kind
    if kind == "f":
        return float(value)
    if isinstance(value, float) and not value.is_integer():
        raise GeneratorError(f"scalar {param.name!r} is an integer type but its value is {value}")
    return int(value)


def case_scalars(spec: TaskSpec, config: str) -> list[Any] | None:
    """The arguments of ``config`` with scalars evaluated and pointers left ``None``, without drawing
    any array (a timing configuration's inputs can be hundreds of MB); ``None`` when a ``custom``
    generator may define scalars (then only :func:`make_case` knows them)."""
    cfg = spec.config(config)
    if any((cfg.init.get(p.name, p.init) or "").strip() == "custom" for p in spec.params):
        return None
    env: dict[str, Any] = dict(cfg.variables)
    out: list[Any] = []
    for p in spec.params:
        if p.role != "scalar":
            out.append(None)
        elif p.value is not None:
            out.append(_scalar(evaluate(p.value, env), p))
        elif p.name in env:
            out.append(_scalar(env[p.name], p))
        else:
            return None  # make_case reports the missing value
    return out


def make_case(spec: TaskSpec, config: str, trial: int, *, poison_pattern: int | None = None) -> Case:
    """Arguments for one call of ``config`` / ``trial`` (outputs poisoned with pattern
    ``trial % 2`` unless ``poison_pattern`` is given)."""
    cfg = spec.config(config)
    env: dict[str, Any] = dict(cfg.variables)
    rng = np.random.default_rng([int(cfg.seed), int(trial)])
    inits = {p.name: cfg.init.get(p.name, p.init) for p in spec.params}
    custom: dict[str, Any] = {}
    if any((v or "").strip() == "custom" for v in inits.values()):
        if spec.folder is None:
            raise GeneratorError(f"task {spec.id}: init = 'custom' needs the task folder")
        made = _load_inputs_module(spec.folder).make_inputs(dict(env), rng)
        if not isinstance(made, dict):
            raise GeneratorError(f"task {spec.id}: make_inputs must return a dict, got {type(made).__name__}")
        custom = made
        for key, value in made.items():
            if np.ndim(value) == 0:
                env[key] = value.item() if isinstance(value, np.generic) else value
    pattern = trial % 2 if poison_pattern is None else poison_pattern
    args: list[Any] = []
    where = f"task {spec.id}, config {config!r}"
    for p in spec.params:
        try:
            if p.role == "scalar":
                if p.name in custom:
                    value = custom[p.name]
                elif p.value is not None:
                    value = evaluate(p.value, env)
                elif p.name in env:
                    value = env[p.name]
                else:
                    raise GeneratorError(f"{where}: scalar {p.name!r} has no value (no config variable of that "
                                         f"name and no `value` expression)")
                args.append(_scalar(value, p))
                continue
            size = evaluate_int(p.size, env, f"size of {p.name!r}")  # type: ignore[arg-type]
            if size < 0:
                raise GeneratorError(f"{where}: size of {p.name!r} is negative ({size})")
            if p.role == "out":
                args.append(poison(p.dtype, size, pattern))
                continue
            init = inits[p.name] or ""
            if init.strip() == "custom":
                if p.name not in custom:
                    raise GeneratorError(f"{where}: make_inputs did not return {p.name!r}")
                arr = np.ascontiguousarray(np.asarray(custom[p.name]).reshape(-1).astype(p.dtype))
                if arr.size != size:
                    raise GeneratorError(f"{where}: make_inputs returned {arr.size} elements for {p.name!r}, "
                                         f"its size expression says {size}")
            else:
                arr = draw(init, size, p.dtype, env, rng)
            if arr.size > 1 and not np.any(arr):
                raise GeneratorError(f"{where}: input {p.name!r} is all zeros (generator {init!r}); "
                                     f"inputs must never be all zeros")
            args.append(arr)
        except ExpressionError as exc:
            raise GeneratorError(f"{where}, param {p.name!r}: {exc}") from None
    return Case(config=config, trial=trial, args=args, env=env)
