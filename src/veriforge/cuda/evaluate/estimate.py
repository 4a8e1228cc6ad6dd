"""The cost model's time for a C→CUDA candidate (the CPU back-end's ``estimated`` number).

The static analysis and the cost model price one launch of one kernel, so this module first finds
*every* launch the candidate's entry makes for a configuration's scalar arguments by interpreting
the host code (:func:`veriforge.cuda.analysis.host.host_launches`: loops, helper functions,
``dim3`` members, ternaries, SM-count-sized grids...), analyses each distinct launch once and sums
the estimates. Anything it cannot determine makes the time *unknown with the reason*, never a
guess: a launch whose cost-model estimate is unknown (work the analysis could not count) makes its
configuration's time unknown, with the estimate's reasons prefixed by the launch and the lower
bound of the counted work (:class:`ConfigEstimate`). Deliberate assumptions (the device is the
modelled GPU, runtime calls succeed, a launch of a kernel with no modelled work costs only the
launch overhead) and the model's own assumptions per launch are listed too.
:func:`estimate_candidate` gives every configuration's record (:class:`CandidateEstimate`, what
the harness keeps in ``details["estimate"]``); a ``time_s`` measurement exists only for a complete
configuration, so the candidate has an estimated score only when every configuration has one.

:func:`estimate_torch_impl` does the same for a torch2cuda implementation's ``extern "C"`` launchers,
binding their scalar arguments from the ``_ext.fn(...)`` call in ``forward`` (``x.size(0)``,
``x.shape[1]``, ``x.numel()``) and the task config's input shapes.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veriforge.core import defaults
from veriforge.core import pyparse as _pyparse
from veriforge.core.types import Measurement
from veriforge.cuda.tasks.schema import TaskSpec

from .backend import CCase

__all__ = ["DEFAULT_GPU", "ESTIMATE_VERSION", "MAX_DISTINCT_LAUNCHES", "MIN_TIMING_COVERAGE", "CandidateEstimate",
           "ConfigEstimate", "check_timing", "estimate_c", "estimate_candidate", "estimate_launches",
           "estimate_torch_configs", "estimate_torch_impl"]

DEFAULT_GPU = defaults.CUDA_GPU
MAX_DISTINCT_LAUNCHES = 256
#: Part of the evaluation cache key: results cached before unknown work made a time unknown are stale.
#: 2: a launch with uncounted work makes its configuration's time unknown (with the reasons).
#: 3: torch2cuda; 4: [[timing]]; 5: written arrays cost twice; 6: features skip unreached sites;
#: 7: torch forward() tensors allocated with torch.empty(...)/view have known shapes;
#: (8 was used by an experiment that was reverted: run stores may hold entries under it)
#: 9: ping-pong indices (`cur ^= 1`), integer input values (CSR, gathers), while loops run step by step,
#: loops whose lanes run different trip counts counted per warp.
#: 10: probe blocks check sampled block activity (a missed pattern: whole-grid walk or unknown totals);
#: an executed device printf makes FLOPs unknown.
ESTIMATE_VERSION = "estimate/10"
MIN_TIMING_COVERAGE = 0.5
"""A timing configuration whose counted global traffic is below this fraction of the task's minimum
(``metrics.bytes``) is not trusted: the candidate does not do the whole task at that size."""
STATUSES = ("exact", "upper_bound", "unknown")


class _Unknown(Exception):
    pass


def _template_map(kdef: Any, values: tuple[Any, ...]) -> dict[str, Any]:
    return {tp.name: v for tp, v in zip(kdef.template, values, strict=False)}


def _dims(d: tuple[int, ...]) -> str:
    dims = list(d)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return "x".join(str(x) for x in dims)


def _unique(items: Any) -> list[str]:
    return list(dict.fromkeys(str(i) for i in items))


@dataclass
class ConfigEstimate:
    """The cost model's time for every launch of one configuration (or one launcher call).

    ``time_s`` is None when some work could not be counted (``unknown`` says what, each reason
    prefixed by the launch it belongs to): never a partial sum. ``lower_bound_s`` is the time of
    the counted work (None when not even the launches are known); ``worst_case`` lists parts priced
    at their worst case (the time is then an upper bound, status ``upper_bound``).
    """

    time_s: float | None
    lower_bound_s: float | None
    launches: list[dict[str, Any]] = field(default_factory=list)
    features: dict[str, Any] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    worst_case: list[str] = field(default_factory=list)
    analysis_unknowns: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.time_s is not None

    @property
    def status(self) -> str:
        if not self.complete:
            return "unknown"
        return "upper_bound" if self.worst_case else "exact"

    @classmethod
    def unknown_because(cls, reason: str) -> ConfigEstimate:
        return cls(time_s=None, lower_bound_s=None, unknown=[reason])

    def to_dict(self) -> dict[str, Any]:
        """JSON-able record (features left out: they travel in the result's features)."""
        return {"time_s": self.time_s, "lower_bound_s": self.lower_bound_s, "status": self.status,
                "complete": self.complete, "unknown": list(self.unknown), "worst_case": list(self.worst_case),
                "assumptions": list(self.assumptions), "analysis_unknowns": list(self.analysis_unknowns),
                "launches": [{k: (list(v) if isinstance(v, tuple) else v) for k, v in ln.items()}
                             for ln in self.launches]}

    def note(self, config: str) -> str:
        """One line for a configuration whose time is unknown."""
        bound = "" if self.lower_bound_s is None else f" (lower bound {self.lower_bound_s * 1e6:.2f} µs)"
        return f"config {config!r}: estimated time unknown: {'; '.join(self.unknown)}{bound}"


def _combine(parts: list[ConfigEstimate]) -> ConfigEstimate:
    """Several launchers' estimates run one after another (a torch2cuda forward)."""
    times = [p.time_s for p in parts]
    bounds = [p.lower_bound_s for p in parts]
    out = ConfigEstimate(time_s=None if any(t is None for t in times) else sum(t for t in times if t is not None),
                         lower_bound_s=None if any(b is None for b in bounds)
                         else sum(b for b in bounds if b is not None))
    for p in parts:
        out.launches += p.launches
        out.features.update(p.features)
        for name in ("assumptions", "unknown", "worst_case", "analysis_unknowns"):
            setattr(out, name, _unique([*getattr(out, name), *getattr(p, name)]))
    return out


def estimate_launches(source: str, entry: str, scalars: dict[str, Any], gpu: str = DEFAULT_GPU,
                      cache: dict[Any, Any] | None = None, inputs: dict[str, Any] | None = None) -> ConfigEstimate:
    """The estimate of every launch ``entry`` makes for ``scalars``, summed (a :class:`ConfigEstimate`).

    When the launches or one of their costs cannot be determined the time is unknown with the
    reasons (host-code reasons as they are; launch reasons prefixed by ``kernel<<<grid, block>>>
    (line N)``), never a guess. ``cache`` (keyed by launch) lets several configurations share analyses.
    """
    from veriforge.cuda import analysis, costmodel
    from veriforge.cuda.analysis.host import HostUnknownError, host_launches
    from veriforge.cuda.analysis.parse import find_kernel, parse_source

    parsed = parse_source(source)
    try:
        run = host_launches(parsed, entry, scalars, gpu=gpu, inputs=inputs)
    except HostUnknownError as exc:
        return ConfigEstimate.unknown_because(str(exc))
    cache = {} if cache is None else cache
    assumptions = list(run.assumptions)
    if not run.launches:
        assumptions.append(f"{entry}() launches no kernel for these arguments: no GPU time")
    distinct = {(ln.kernel, ln.grid, ln.block, ln.smem, ln.args, ln.template_args, ln.addresses, ln.bindings)
                for ln in run.launches}
    if len(distinct) > MAX_DISTINCT_LAUNCHES:
        return ConfigEstimate.unknown_because(
            f"{len(run.launches)} launches with {len(distinct)} distinct configurations "
            f"(more than {MAX_DISTINCT_LAUNCHES} are not analysed)")
    overhead = costmodel.CostConstants().launch_overhead_s
    total: float | None = 0.0
    lower = 0.0
    details: list[dict[str, Any]] = []
    features: dict[str, Any] = {}
    unknown: list[str] = []
    worst: list[str] = []
    seen_unknowns: list[str] = []
    kernels = {ln.kernel for ln in run.launches}
    featured: set[str] = set()
    names = set(getattr(inputs, "names", None) or (inputs or {}))
    for ln in run.launches:
        reads = any(b is not None and b[0] in names for b in ln.bindings)
        # an analysis that reads input values belongs to these inputs, not to every config of this shape
        key = (ln.kernel, ln.grid, ln.block, ln.smem, ln.args, ln.template_args, ln.addresses, ln.bindings,
               id(inputs) if reads else None)
        where = f"{ln.kernel}<<<{_dims(ln.grid)}, {_dims(ln.block)}>>> (line {ln.line})"
        if key not in cache:
            cache[key] = _launch_cost(source, parsed, ln, gpu, overhead, analysis, costmodel, find_kernel,
                                      inputs if reads else None)
        c = cache[key]
        for note in c["assumptions"]:
            assumptions.append(note if note.startswith(ln.kernel) else f"{ln.kernel}: {note}")
        unknown += [f"{where}: {u}" for u in c["unknown"]]
        worst += [f"{where}: {w}" for w in c["worst_case"]]
        seen_unknowns += [f"{ln.kernel}: {u}" for u in c["analysis_unknowns"]]
        lower += c["lower_bound_s"]
        total = None if total is None or c["time_s"] is None else total + c["time_s"]
        details.append({"kernel": ln.kernel, "grid": ln.grid, "block": ln.block, "line": ln.line,
                        "time_s": c["time_s"], "lower_bound_s": c["lower_bound_s"], "bound": c["bound"],
                        "status": c["status"], "useful_bytes": c.get("useful_bytes")})
        if ln.kernel not in featured and c["features"]:  # the first launch of each kernel describes it
            featured.add(ln.kernel)
            prefix = f"{ln.kernel}." if len(kernels) > 1 else ""
            features.update({f"{prefix}{k}": v for k, v in c["features"].items()})
    return ConfigEstimate(time_s=total, lower_bound_s=lower, launches=details, features=features,
                          assumptions=_unique(assumptions), unknown=_unique(unknown), worst_case=_unique(worst),
                          analysis_unknowns=_unique(seen_unknowns))


def _index_inputs(kdef: Any, ln: Any, inputs: Mapping[str, Any]) -> dict[str, tuple[Any, int]]:
    """The kernel's ``const`` integer pointer parameters bound to task inputs, with the input's values
    and the element offset the argument points at (what the analysis reads to follow indices).
    Float pointees are skipped without drawing the inputs: their values decide no address."""
    out: dict[str, tuple[Any, int]] = {}
    for p, bound in zip(kdef.params, ln.bindings, strict=False):
        if bound is None or not p.is_pointer or not p.const or _FLOAT_TYPE.search(p.type_text):
            continue
        name, offset = bound
        try:
            arr = inputs[name]
        except KeyError:
            continue
        itemsize = getattr(arr, "itemsize", 0)
        if itemsize and offset % itemsize == 0 and getattr(arr, "dtype", None) is not None and arr.dtype.kind in "iub":
            out[p.name] = (arr, offset // itemsize)
    return out


_FLOAT_TYPE = re.compile(r"\b(?:float|double|half\d?|__half\d?|__nv_bfloat16\d?|bfloat16|float[1-4])\b")


def _launch_cost(source: str, parsed: Any, ln: Any, gpu: str, overhead: float, analysis: Any, costmodel: Any,
                 find_kernel: Any, inputs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The cost of one distinct launch: time (None if unknown), lower bound, status and reasons.

    A launch the analysis cannot take at all (kernel not found, launch configuration refused) is
    unknown with a lower bound of the launch overhead: it ran (the candidate passed), so it cost
    at least that."""
    def unknown(why: str, rep: Any = None) -> dict[str, Any]:
        return {"time_s": None, "lower_bound_s": overhead, "bound": "unknown", "status": "unknown",
                "features": dict(rep.features) if rep is not None else {}, "assumptions": [],
                "unknown": [why], "worst_case": [],
                "analysis_unknowns": list(rep.unknowns) if rep is not None else []}

    try:
        kdef = find_kernel(parsed, ln.kernel)
    except analysis.AnalysisError as exc:
        return unknown(str(exc))
    params = {p.name: v for p, v in zip(kdef.params, ln.args, strict=False) if not p.is_pointer and v is not None}
    # pointer arguments' synthetic addresses: kernel-side alignment tests resolve like the host's
    params.update({p.name: a for p, a in zip(kdef.params, ln.addresses, strict=False)
                   if p.is_pointer and a is not None})
    # a null pointer argument (an optional output passed as nullptr) has address 0: the kernel's
    # `if (p != nullptr)` is then false, not assumed true
    params.update({p.name: 0 for p, v, a in zip(kdef.params, ln.args, ln.addresses, strict=False)
                   if p.is_pointer and a is None and v == 0})
    # one the host interpreter could not follow: unknown, not assumed to be an allocation
    params.update({p.name: None for p, v, a in zip(kdef.params, ln.args, ln.addresses, strict=False)
                   if p.is_pointer and a is None and v is None})
    data = _index_inputs(kdef, ln, inputs) if inputs is not None else {}
    try:
        rep = analysis.analyze(source, kernel=ln.kernel, grid=ln.grid, block=ln.block, params=params,
                               dynamic_smem=ln.smem, template_args=_template_map(kdef, ln.template_args),
                               data=data or None)
    except analysis.LaunchConfigError as exc:
        return unknown(f"launch configuration: {exc}")
    try:
        est = costmodel.estimate(rep, gpu)
    except costmodel.CostModelError as exc:
        if rep.unknowns:
            return unknown(str(exc), rep)
        # Fully analysed and it does nothing the model prices (e.g. a tail kernel with no tail).
        return {"time_s": overhead, "lower_bound_s": overhead, "bound": "latency", "status": "exact",
                "features": dict(rep.features), "unknown": [], "worst_case": [], "analysis_unknowns": [],
                "useful_bytes": 0.0,
                "assumptions": [f"{ln.kernel} <<<{ln.grid}, {ln.block}>>> does no modelled work: "
                                "launch overhead only"]}
    unknown_parts = list(getattr(est, "unknown", None) or [])
    notes = list(est.assumptions)
    if rep.sampling.get("input_values"):
        notes.append(rep.sampling["input_values"])
    time_s = est.time_s
    if time_s is None and not unknown_parts:
        unknown_parts = ["the cost model gave no time"]
    lower = getattr(est, "lower_bound_s", None)
    lower = float(lower) if lower else (float(time_s) if time_s is not None else overhead)
    worst = list(getattr(est, "worst_case", None) or [])
    status = "unknown" if time_s is None else ("upper_bound" if worst else "exact")
    return {"time_s": None if time_s is None else float(time_s), "lower_bound_s": lower, "bound": est.bound,
            "status": status, "features": dict(rep.features), "assumptions": notes,
            "unknown": unknown_parts, "worst_case": worst, "analysis_unknowns": list(rep.unknowns),
            "useful_bytes": float((getattr(est, "breakdown", None) or {}).get("useful_bytes") or 0.0)}


@dataclass
class CandidateEstimate:
    """Every configuration's estimate of one candidate (``configs`` in the task's order).

    The candidate has an estimated time only when :attr:`complete` (every configuration has one):
    an objective that averaged over the configurations that happen to have a time would make a
    candidate whose large configuration is unknown look faster than it is.
    """

    gpu: str
    configs: dict[str, ConfigEstimate]
    features: dict[str, Any] = field(default_factory=dict)
    model: str = ""
    timing: list[str] = field(default_factory=list)
    """The task's ``[[timing]]`` configurations among :attr:`configs` (estimated, never run here)."""

    @property
    def complete(self) -> bool:
        return bool(self.configs) and all(c.complete for c in self.configs.values())

    @property
    def status(self) -> str:
        statuses = {c.status for c in self.configs.values()} or {"unknown"}
        return next(s for s in reversed(STATUSES) if s in statuses)

    def notes(self) -> list[str]:
        """One line per configuration whose time is unknown."""
        return [c.note(name) for name, c in self.configs.items() if not c.complete]

    def measurements(self) -> list[Measurement]:
        """``time_s`` (estimated) for each complete configuration, ``time_s_lower_bound`` for each
        unknown one with a bound; every one names all the configurations (``configs``), so a
        consumer can tell when some have no time."""
        names = list(self.configs)
        out: list[Measurement] = []
        for name, c in self.configs.items():
            if not c.complete and c.lower_bound_s is None:
                continue
            details: dict[str, Any] = {"config": name, "configs": names, "gpu": self.gpu, "status": c.status,
                                       "launches": c.launches, "assumptions": c.assumptions,
                                       "worst_case": c.worst_case, "timing": name in self.timing}
            if not c.complete:
                details["unknown"] = c.unknown
            out.append(Measurement(
                name="time_s" if c.complete else "time_s_lower_bound",
                value=float(c.time_s if c.time_s is not None else c.lower_bound_s or 0.0), unit="s",
                provenance="estimated", backend=f"{self.model}:{self.gpu}", details=details))
        return out

    def to_dict(self) -> dict[str, Any]:
        """What the harness keeps in ``details["estimate"]`` (JSON-able)."""
        return {"gpu": self.gpu, "model": self.model, "version": ESTIMATE_VERSION, "complete": self.complete,
                "status": self.status, "config_names": list(self.configs),  # the order (stores sort keys)
                "timing": list(self.timing), "configs": {n: c.to_dict() for n, c in self.configs.items()}}


def check_timing(spec: TaskSpec, configs: dict[str, ConfigEstimate]) -> None:
    """Make a ``[[timing]]`` configuration's time unknown when nothing vouches for it.

    A timing configuration is estimated, never run, so a candidate could behave differently there
    than where it was verified (``if (n > 1 << 20) return;``, or a kernel only large sizes use).
    Its time is kept only when every kernel it launches also ran in a verified configuration, and
    its counted global traffic covers at least :data:`MIN_TIMING_COVERAGE` of the task's minimum
    (``metrics.bytes`` at that size). Otherwise the time is unknown — the worst speed for a reward,
    never a fast one — with the reason.
    """
    from veriforge.cuda.tasks.expr import ExpressionError, evaluate

    timing = set(spec.timing_names)
    ran = {ln["kernel"] for name, c in configs.items() if name not in timing for ln in c.launches}
    for cfg in spec.timing:
        c = configs.get(cfg.name)
        if c is None or not c.complete:
            continue
        reasons = []
        new = sorted({ln["kernel"] for ln in c.launches} - ran)
        if new:
            reasons.append(f"timing config {cfg.name!r} launches {', '.join(new)}, which no verified "
                           "configuration ran: its results at this size were never checked")
        try:
            need = float(evaluate(str(spec.metrics["bytes"]), dict(cfg.variables))) if "bytes" in spec.metrics else 0.0
        except ExpressionError:
            need = 0.0
        got = sum(float(ln.get("useful_bytes") or 0.0) for ln in c.launches)
        if need > 0 and got < MIN_TIMING_COVERAGE * need:
            reasons.append(f"timing config {cfg.name!r}: the kernels move {got:.4g} bytes, under "
                           f"{MIN_TIMING_COVERAGE:.0%} of the {need:.4g} bytes the task reads and writes at this "
                           "size (metrics.bytes): the whole task is not done there")
        if reasons:
            c.lower_bound_s = c.time_s if c.lower_bound_s is None else c.lower_bound_s
            c.time_s = None
            c.unknown = _unique([*c.unknown, *reasons])


class LazyInputs(Mapping):
    """A timing configuration's input arrays, drawn on first use: only host code that copies input
    values back (CSR row pointers read on the host) needs them, and they can be hundreds of MB."""

    def __init__(self, make: Callable[[], dict[str, Any]], names: Iterable[str] = ()) -> None:
        self._make, self._data = make, None
        self.names = frozenset(names)  # known without drawing (an estimate asks before it reads)

    def _arrays(self) -> dict[str, Any]:
        if self._data is None:
            self._data = self._make()
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self._arrays()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays())

    def __len__(self) -> int:
        return len(self._arrays())


def estimate_candidate(spec: TaskSpec, source: str, cases: list[CCase], gpu: str = DEFAULT_GPU,
                       timing_cases: list[CCase] | None = None,
                       timing_inputs: Mapping[str, Mapping[str, Any]] | None = None) -> CandidateEstimate:
    """The estimate of every configuration of a C→CUDA candidate (one per distinct ``case.config``),
    plus the task's timing configurations from ``timing_cases`` (checked by :func:`check_timing`);
    ``timing_inputs`` maps a timing configuration to its (lazy) input arrays."""
    from veriforge.cuda import costmodel

    configs: dict[str, ConfigEstimate] = {}
    cache: dict[Any, Any] = {}
    for case in [*cases, *(timing_cases or [])]:
        if case.config in configs:
            continue
        scalars = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "scalar"}
        inputs = (timing_inputs or {}).get(case.config)
        if inputs is None:
            inputs = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "in"}
        try:
            configs[case.config] = estimate_launches(source, spec.entry, scalars, gpu, cache, inputs)
        except Exception as exc:  # the analysis must never fail an evaluation that passed
            configs[case.config] = ConfigEstimate.unknown_because(f"{type(exc).__name__}: {exc}")
    timing = [c.config for c in timing_cases or [] if c.config in configs]
    if timing:
        check_timing(spec, configs)
    # features describe the kernels where speed is judged: the last timing size, else the last verified one
    last = configs.get(timing[-1]) if timing else (configs.get(cases[-1].config) if cases else None)
    return CandidateEstimate(gpu=gpu, configs=configs, features=dict(last.features) if last else {},
                             model=costmodel.MODEL_VERSION, timing=list(dict.fromkeys(timing)))


def estimate_c(spec: TaskSpec, source: str, cases: list[CCase], gpu: str = DEFAULT_GPU
               ) -> tuple[list[Measurement], dict[str, Any], list[str]]:
    """(``time_s`` measurements, features, notes on unknown configurations) of :func:`estimate_candidate`.

    A ``time_s`` measurement exists only for a configuration whose every launch was counted (the
    harness also records lower bounds: ``CandidateEstimate.measurements()``)."""
    est = estimate_candidate(spec, source, cases, gpu)
    return [m for m in est.measurements() if m.name == "time_s"], est.features, est.notes()


# ----- torch2cuda ------------------------------------------------------------------------------------------

def _cuda_src(module_text: str) -> str:
    tree = _pyparse.parse(module_text)
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
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):  # x.size(-1)
        return -_shape_value(expr.operand, shapes, env)
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


_FACTORIES = ("empty", "zeros", "ones", "full", "rand", "randn")
_LIKE = ("empty_like", "zeros_like", "ones_like", "full_like")


def _new_tensor_shape(val: ast.AST, shapes: dict[str, tuple[int, ...]], env: dict[str, Any]
                      ) -> tuple[int, ...] | None:
    """The shape of a tensor ``forward`` allocates (``torch.empty(a, b, ...)``, ``torch.empty((a, b))``,
    ``torch.empty_like(x)``, ``x.new_empty(...)``, ``x.view(a, b)``/``reshape``), or None."""
    if not (isinstance(val, ast.Call) and isinstance(val.func, ast.Attribute)):
        return None
    attr, owner = val.func.attr, val.func.value
    try:
        if isinstance(owner, ast.Name) and owner.id == "torch" and attr in _LIKE and val.args:
            src = val.args[0]
            return shapes.get(src.id) if isinstance(src, ast.Name) else None
        factory = isinstance(owner, ast.Name) and owner.id == "torch" and attr in _FACTORIES
        method = (isinstance(owner, ast.Name) and owner.id in shapes
                  and attr in ("new_empty", "new_zeros", "new_ones", "view", "reshape"))
        if not (factory or method) or not val.args:
            return None
        dims = val.args[:-1] if attr in ("full",) else val.args
        if len(dims) == 1 and isinstance(dims[0], ast.Tuple | ast.List):
            dims = dims[0].elts
        out = [int(_shape_value(d, shapes, env)) for d in dims]
        if attr in ("view", "reshape") and out.count(-1) == 1:  # one inferred dimension
            total = 1
            for d in shapes[owner.id]:  # type: ignore[union-attr]
                total *= d
            known = 1
            for d in out:
                known *= d if d != -1 else 1
            out[out.index(-1)] = total // known if known else 0
        return tuple(out)
    except (_Unknown, IndexError, TypeError, ValueError, KeyError):
        return None


def _forward_calls(module_text: str, inputs: list[tuple[int, ...]], init_inputs: list[Any]
                   ) -> list[tuple[str, dict[int, Any]]]:
    """(launcher name, {argument index: value}) for each ``_ext.fn(...)`` call in ``ModelNew.forward``."""
    tree = _pyparse.parse(module_text)
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
            made = _new_tensor_shape(val, shapes, env)
            if made is not None:  # out = torch.empty(x.size(0), n, ...): its numel()/size() are known
                shapes[tgt] = made
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


def estimate_torch_configs(spec: TaskSpec, path: Path | None = None, gpu: str = DEFAULT_GPU, *,
                           text: str | None = None) -> CandidateEstimate:
    """Every configuration's estimate of a torch2cuda implementation (the module at ``path``, or its
    ``text``): the launches of each ``_ext.fn(...)`` call of ``forward``, one after another."""
    from veriforge.cuda import costmodel
    from veriforge.cuda.analysis.parse import parse_source

    if text is None:
        if path is None:
            raise ValueError("estimate_torch_configs needs the module's path or its text")
        text = Path(path).read_text()
    configs: dict[str, ConfigEstimate] = {}
    cache: dict[Any, Any] = {}
    try:
        source = _cuda_src(text)
    except _Unknown as exc:
        return CandidateEstimate(gpu=gpu, model=costmodel.MODEL_VERSION, timing=spec.timing_names,
                                 configs={c.name: ConfigEstimate.unknown_because(str(exc))
                                          for c in (*spec.configs, *spec.timing)})
    parsed = parse_source(source)
    for cfg in (*spec.configs, *spec.timing):
        try:
            inputs, init_inputs = _config_inputs(spec, cfg)
            parts = []
            for launcher, values in _forward_calls(text, inputs, init_inputs):
                fdefs = [f for f in parsed.functions.get(launcher, []) if not f.is_kernel]
                if not fdefs:
                    raise _Unknown(f"launcher {launcher}() not found in the CUDA source")
                scalars = {p.name: values[i] for i, p in enumerate(fdefs[0].params) if i in values}
                parts.append(estimate_launches(source, launcher, scalars, gpu, cache))
            configs[cfg.name] = _combine(parts)
        except _Unknown as exc:
            configs[cfg.name] = ConfigEstimate.unknown_because(str(exc))
        except Exception as exc:
            configs[cfg.name] = ConfigEstimate.unknown_because(f"{type(exc).__name__}: {exc}")
    if spec.timing:
        check_timing(spec, configs)
    last_name = spec.timing[-1].name if spec.timing else (spec.configs[-1].name if spec.configs else None)
    last = configs.get(last_name) if last_name else None
    return CandidateEstimate(gpu=gpu, configs=configs, features=dict(last.features) if last else {},
                             model=costmodel.MODEL_VERSION, timing=spec.timing_names)


def estimate_torch_impl(spec: TaskSpec, path: Path, gpu: str = DEFAULT_GPU) -> tuple[dict[str, float], list[str], int]:
    """({config: estimated seconds} of the complete configurations, notes on the unknown ones, launches
    on the last config) of a torch2cuda impl (:func:`estimate_torch_configs`)."""
    est = estimate_torch_configs(spec, path, gpu)
    times = {name: c.time_s for name, c in est.configs.items() if c.time_s is not None}
    last = est.configs.get(spec.configs[-1].name) if spec.configs else None
    return times, est.notes(), len(last.launches) if last is not None else 0


def _config_inputs(spec: TaskSpec, cfg: Any) -> tuple[list[tuple[int, ...]], list[Any]]:
    """Input tensor shapes and init inputs of a torch2cuda config: the reference's ``get_inputs()`` and
    ``get_init_inputs()`` with the config's values."""
    from veriforge.cuda.tasks.reference import load_torch_reference

    assert spec.folder is not None
    ref = load_torch_reference((spec.folder / "reference.py").read_text(), cfg.variables, name=f"vf_est_{cfg.name}")
    shapes = [tuple(int(d) for d in getattr(v, "shape", ())) for v in ref.get_inputs()]
    return shapes, list(ref.get_init_inputs())
