"""The cost model's time for a C→CUDA candidate (the CPU back-end's ``estimated`` number).

The static analysis and the cost model price one launch of one kernel, so this module first finds
*every* launch the candidate's entry makes for a configuration's scalar arguments by interpreting
the host code (:func:`veriforge.cuda.analysis.host.host_launches`: loops, helper functions,
``dim3`` members, ternaries, SM-count-sized grids...), analyses each distinct launch once and sums
the estimates. Anything it cannot determine makes the time *unknown with the reason*, never a
guess. Deliberate assumptions (the device is the modelled GPU, runtime calls succeed, a launch of
a kernel with no modelled work costs only the launch overhead) are listed in the measurement's
details.

:func:`estimate_torch_impl` does the same for a torch2cuda implementation's ``extern "C"`` launchers,
binding their scalar arguments from the ``_ext.fn(...)`` call in ``forward`` (``x.size(0)``,
``x.shape[1]``, ``x.numel()``) and the task config's input shapes.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from veriforge.core.types import Measurement
from veriforge.cuda.tasks.schema import TaskSpec

from .backend import CCase

__all__ = ["DEFAULT_GPU", "MAX_DISTINCT_LAUNCHES", "estimate_c", "estimate_launches", "estimate_torch_impl"]

DEFAULT_GPU = "H100-SXM"
MAX_DISTINCT_LAUNCHES = 256


class _Unknown(Exception):
    pass


def _template_map(kdef: Any, values: tuple[Any, ...]) -> dict[str, Any]:
    return {tp.name: v for tp, v in zip(kdef.template, values, strict=False)}


def estimate_launches(source: str, entry: str, scalars: dict[str, Any], gpu: str = DEFAULT_GPU,
                      cache: dict[Any, Any] | None = None, inputs: dict[str, Any] | None = None
                      ) -> tuple[float, list[dict[str, Any]], dict[str, Any], list[str]]:
    """(total seconds, per-launch details, features, assumptions) of ``entry`` for ``scalars``.

    Raises :class:`_Unknown` (with the reason) when the launches or one of their costs cannot be
    determined. ``cache`` (keyed by launch) lets several configurations share analyses.
    """
    from veriforge.cuda import analysis, costmodel
    from veriforge.cuda.analysis.host import HostUnknownError, host_launches
    from veriforge.cuda.analysis.parse import find_kernel, parse_source

    parsed = parse_source(source)
    try:
        run = host_launches(parsed, entry, scalars, gpu=gpu, inputs=inputs)
    except HostUnknownError as exc:
        raise _Unknown(str(exc)) from None
    cache = {} if cache is None else cache
    assumptions = list(run.assumptions)
    if not run.launches:
        assumptions.append(f"{entry}() launches no kernel for these arguments: no GPU time")
    distinct = {(ln.kernel, ln.grid, ln.block, ln.smem, ln.args, ln.template_args, ln.addresses)
                for ln in run.launches}
    if len(distinct) > MAX_DISTINCT_LAUNCHES:
        raise _Unknown(f"{len(run.launches)} launches with {len(distinct)} distinct configurations "
                       f"(more than {MAX_DISTINCT_LAUNCHES} are not analysed)")
    total, details, features = 0.0, [], {}
    kernels = {ln.kernel for ln in run.launches}
    featured: set[str] = set()
    for ln in run.launches:
        key = (ln.kernel, ln.grid, ln.block, ln.smem, ln.args, ln.template_args, ln.addresses)
        if key not in cache:
            try:
                kdef = find_kernel(parsed, ln.kernel)
            except analysis.AnalysisError as exc:
                raise _Unknown(f"line {ln.line}: {exc}") from None
            params = {p.name: v for p, v in zip(kdef.params, ln.args, strict=False)
                      if not p.is_pointer and v is not None}
            # pointer arguments' synthetic addresses: kernel-side alignment tests resolve like the host's
            params.update({p.name: a for p, a in zip(kdef.params, ln.addresses, strict=False)
                           if p.is_pointer and a is not None})
            try:
                rep = analysis.analyze(source, kernel=ln.kernel, grid=ln.grid, block=ln.block, params=params,
                                       dynamic_smem=ln.smem, template_args=_template_map(kdef, ln.template_args))
            except analysis.LaunchConfigError as exc:
                raise _Unknown(f"line {ln.line}: launch of {ln.kernel} <<<{ln.grid}, {ln.block}>>>: {exc}") from None
            try:
                est = costmodel.estimate(rep, gpu)
                cache[key] = (est.time_s, est.bound, rep.features, None)
            except costmodel.CostModelError as exc:
                if rep.unknowns:
                    raise _Unknown(f"launch of {ln.kernel}: {exc}") from None
                # Fully analysed and it does nothing the model prices (e.g. a tail kernel with no tail).
                overhead = costmodel.CostConstants().launch_overhead_s
                cache[key] = (overhead, "latency", rep.features,
                              f"{ln.kernel} <<<{ln.grid}, {ln.block}>>> does no modelled work: "
                              f"launch overhead only")
        time_s, bound, feats, note = cache[key]
        if note and note not in assumptions:
            assumptions.append(note)
        total += time_s
        details.append({"kernel": ln.kernel, "grid": ln.grid, "block": ln.block, "time_s": time_s, "bound": bound})
        if ln.kernel not in featured:  # the first launch of each kernel describes it
            featured.add(ln.kernel)
            prefix = f"{ln.kernel}." if len(kernels) > 1 else ""
            features.update({f"{prefix}{k}": v for k, v in feats.items()})
    return total, details, features, assumptions


def estimate_c(spec: TaskSpec, source: str, cases: list[CCase], gpu: str = DEFAULT_GPU
               ) -> tuple[list[Measurement], dict[str, Any], list[str]]:
    """Estimated time per configuration; returns (measurements, features, notes on unknowns)."""
    from veriforge.cuda import costmodel

    measurements: list[Measurement] = []
    features: dict[str, Any] = {}
    notes: list[str] = []
    seen: set[str] = set()
    cache: dict[Any, Any] = {}
    for case in cases:
        if case.config in seen:
            continue
        seen.add(case.config)
        scalars = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "scalar"}
        inputs = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "in"}
        try:
            total, details, feats, assumptions = estimate_launches(source, spec.entry, scalars, gpu, cache, inputs)
        except _Unknown as exc:
            notes.append(f"config {case.config!r}: estimated time unknown: {exc}")
            continue
        except Exception as exc:  # the analysis must never fail an evaluation that passed
            notes.append(f"config {case.config!r}: estimated time unknown: {type(exc).__name__}: {exc}")
            continue
        if case.config == cases[-1].config:
            features.update(feats)
        measurements.append(Measurement(
            name="time_s", value=total, unit="s", provenance="estimated", backend=f"{costmodel.MODEL_VERSION}:{gpu}",
            details={"config": case.config, "gpu": gpu, "launches": details, "assumptions": assumptions}))
    return measurements, features, notes


# ----- torch2cuda ------------------------------------------------------------------------------------------

def _cuda_src(module_text: str) -> str:
    tree = ast.parse(module_text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            if "__global__" in node.value.value:
                return node.value.value
    raise _Unknown("no CUDA source string with a __global__ kernel in the module")


def _shape_value(expr: ast.AST, shapes: dict[str, tuple[int, ...]], env: dict[str, Any]) -> Any:
    """Value of a simple Python expression over tensor shapes: x.size(0), x.shape[1], x.numel(), ints."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, int | float):
        return expr.value
    if isinstance(expr, ast.Name):
        if expr.id in env:
            return env[expr.id]
        raise _Unknown(f"`{expr.id}` is not known")
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        if f"self.{expr.attr}" in env:
            return env[f"self.{expr.attr}"]
        raise _Unknown(f"`self.{expr.attr}` is not known")
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        base = expr.func.value
        if isinstance(base, ast.Name) and base.id in shapes:
            shape = shapes[base.id]
            if expr.func.attr in ("size", "shape") and len(expr.args) == 1:
                dim = _shape_value(expr.args[0], shapes, env)
                return shape[int(dim)]
            if expr.func.attr == "numel" and not expr.args:
                n = 1
                for s in shape:
                    n *= s
                return n
            if expr.func.attr == "dim" and not expr.args:
                return len(shape)
        if expr.func.attr in ("contiguous", "float", "view", "reshape"):
            pass
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "int" and expr.args:
        return int(_shape_value(expr.args[0], shapes, env))
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape":
        base = expr.value.value
        if isinstance(base, ast.Name) and base.id in shapes:
            return shapes[base.id][int(_shape_value(expr.slice, shapes, env))]
    if isinstance(expr, ast.BinOp):
        a, b = _shape_value(expr.left, shapes, env), _shape_value(expr.right, shapes, env)
        ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
        if isinstance(expr.op, ast.FloorDiv):
            return a // b
        if type(expr.op) in ops:
            return ops[type(expr.op)]
    raise _Unknown(f"`{ast.unparse(expr)}` in forward() is not evaluated")


def _init_attributes(init: ast.FunctionDef | None, init_inputs: list[Any]) -> dict[str, Any]:
    """``self.x = <number or __init__ argument>`` assignments of ``ModelNew.__init__`` for the given inputs."""
    if init is None:
        return {}
    args = init.args.args[1:]
    defaults = dict(zip([a.arg for a in args[len(args) - len(init.args.defaults):]], init.args.defaults,
                        strict=True))
    env: dict[str, Any] = {}
    for i, a in enumerate(args):
        if i < len(init_inputs) and isinstance(init_inputs[i], int | float):
            env[a.arg] = init_inputs[i]
        elif a.arg in defaults and isinstance(defaults[a.arg], ast.Constant):
            env[a.arg] = defaults[a.arg].value
    for stmt in init.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Attribute)
                and isinstance(stmt.targets[0].value, ast.Name) and stmt.targets[0].value.id == "self"):
            try:
                env[f"self.{stmt.targets[0].attr}"] = _shape_value(stmt.value, {}, env)
            except _Unknown:
                pass
    return env


def _forward_calls(module_text: str, inputs: list[tuple[int, ...]], init_inputs: list[Any]
                   ) -> list[tuple[str, dict[int, Any]]]:
    """(launcher name, {argument index: value}) for each ``_ext.fn(...)`` call in ``ModelNew.forward``."""
    tree = ast.parse(module_text)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None)
    methods = {n.name: n for n in (cls.body if cls else []) if isinstance(n, ast.FunctionDef)}
    fwd = methods.get("forward")
    if fwd is None:
        raise _Unknown("no ModelNew.forward")
    names = [a.arg for a in fwd.args.args[1:]]
    shapes = dict(zip(names, inputs, strict=False))
    env: dict[str, Any] = _init_attributes(methods.get("__init__"), init_inputs)
    calls = []
    for stmt in fwd.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple)
                and isinstance(stmt.value, ast.Attribute) and stmt.value.attr == "shape"
                and isinstance(stmt.value.value, ast.Name) and stmt.value.value.id in shapes):
            shape = shapes[stmt.value.value.id]
            for t, dim in zip(stmt.targets[0].elts, shape, strict=False):
                if isinstance(t, ast.Name):
                    env[t.id] = dim
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            tgt, val = stmt.targets[0].id, stmt.value
            if (isinstance(val, ast.Call) and isinstance(val.func, ast.Attribute)
                    and isinstance(val.func.value, ast.Name) and val.func.value.id in shapes
                    and val.func.attr in ("contiguous", "float", "clone")):
                shapes[tgt] = shapes[val.func.value.id]
                continue
            try:
                env[tgt] = _shape_value(val, shapes, env)
            except (_Unknown, IndexError, TypeError):
                env.pop(tgt, None)
        for node in ast.walk(stmt):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id.startswith("_ext")):
                values: dict[int, Any] = {}
                for i, a in enumerate(node.args):
                    try:
                        values[i] = _shape_value(a, shapes, env)
                    except (_Unknown, IndexError, TypeError):
                        pass
                calls.append((node.func.attr, values))
    if not calls:
        raise _Unknown("forward() calls no `_ext.<launcher>(...)`")
    return calls


def estimate_torch_impl(spec: TaskSpec, path: Path, gpu: str = DEFAULT_GPU) -> tuple[dict[str, float], list[str], int]:
    """({config: estimated seconds}, notes on unknowns, launches on the last config) of a torch2cuda impl."""
    from veriforge.cuda.analysis.parse import parse_source

    text = Path(path).read_text()
    times: dict[str, float] = {}
    notes: list[str] = []
    launches = 0
    cache: dict[Any, Any] = {}
    try:
        source = _cuda_src(text)
    except _Unknown as exc:
        return {}, [f"estimated time unknown: {exc}"], 0
    parsed = parse_source(source)
    for cfg in spec.configs:
        try:
            inputs, init_inputs = _config_inputs(spec, cfg)
            total = 0.0
            for launcher, values in _forward_calls(text, inputs, init_inputs):
                fdefs = [f for f in parsed.functions.get(launcher, []) if not f.is_kernel]
                if not fdefs:
                    raise _Unknown(f"launcher {launcher}() not found in the CUDA source")
                scalars = {p.name: values[i] for i, p in enumerate(fdefs[0].params) if i in values}
                t, details, _f, _a = estimate_launches(source, launcher, scalars, gpu, cache)
                total += t
                launches = len(details) if cfg is spec.configs[-1] else launches
            times[cfg.name] = total
        except _Unknown as exc:
            notes.append(f"config {cfg.name!r}: estimated time unknown: {exc}")
        except Exception as exc:
            notes.append(f"config {cfg.name!r}: estimated time unknown: {type(exc).__name__}: {exc}")
    return times, notes, launches


def _config_inputs(spec: TaskSpec, cfg: Any) -> tuple[list[tuple[int, ...]], list[Any]]:
    """Input tensor shapes and init inputs of a torch2cuda config: the reference's ``get_inputs()`` and
    ``get_init_inputs()`` with the config's values."""
    from veriforge.cuda.tasks.reference import load_torch_reference

    assert spec.folder is not None
    ref = load_torch_reference((spec.folder / "reference.py").read_text(), cfg.variables, name=f"vf_est_{cfg.name}")
    shapes = [tuple(int(d) for d in getattr(v, "shape", ())) for v in ref.get_inputs()]
    return shapes, list(ref.get_init_inputs())
