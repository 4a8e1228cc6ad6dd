"""The cost model's time for a C→CUDA candidate (the CPU back-end's ``estimated`` number).

The static analysis needs one kernel and one launch configuration, so this module reads them
from the ``<<<grid, block, smem>>>`` launches in the entry function, evaluating the launch
expressions with the configuration's scalar arguments and the entry's simple local
declarations (``int blocks = (n + 255) / 256;``, ``dim3 grid(...)``, file-level ``#define`` and
``const int``). Anything it cannot evaluate - a launch inside a loop, a ternary, a helper call -
makes the time *unknown with the reason*, never a guess.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from veriforge.core.types import Measurement
from veriforge.cuda.tasks.schema import TaskSpec

from .backend import CCase
from .cleanup import function_bodies, strip_c

__all__ = ["DEFAULT_GPU", "estimate_c", "find_launches"]

DEFAULT_GPU = "H100-SXM"


class _Unknown(Exception):
    pass


def _c_to_py(expr: str) -> str:
    e = expr.strip()
    e = re.sub(r"\bstd::", "", e)
    e = re.sub(r"static_cast\s*<[^<>]*>", "", e)
    e = re.sub(r"\(\s*(unsigned\s+int|unsigned|int|size_t|long\s+long|long|float|double)\s*\)", "", e)
    e = re.sub(r"(\d+(?:\.\d*)?)[uUlLfF]+\b", r"\1", e)
    if "?" in e or "->" in e or "[" in e:
        raise _Unknown(f"cannot evaluate `{expr.strip()}`")
    return e


def _eval(expr: str, env: dict[str, Any]) -> Any:
    """C integer semantics: ``/`` on integers truncates."""
    try:
        tree = ast.parse(_c_to_py(expr), mode="eval").body
    except SyntaxError:
        raise _Unknown(f"cannot parse `{expr.strip()}`") from None

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise _Unknown(f"`{node.id}` in `{expr.strip()}` is not known statically")
            return env[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.Mod: lambda: a % b, ast.LShift: lambda: a << b, ast.RShift: lambda: a >> b,
                   ast.BitAnd: lambda: a & b, ast.BitOr: lambda: a | b}
            if isinstance(node.op, ast.Div):
                if isinstance(a, int) and isinstance(b, int):
                    return int(a / b) if b else _raise(expr)
                return a / b
            if type(node.op) in ops:
                return ops[type(node.op)]()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            args = [ev(x) for x in node.args]
            return min(args) if node.func.id == "min" else max(args)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dim3":
            return tuple(ev(x) for x in node.args)
        raise _Unknown(f"cannot evaluate `{expr.strip()}` statically")

    return ev(tree)


def _raise(expr: str) -> Any:
    raise _Unknown(f"division by zero in `{expr}`")


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def find_launches(body: str) -> list[tuple[str, list[str], list[str], int]]:
    """Launches in ``body``: (kernel, config expressions, argument expressions, position)."""
    out = []
    for m in re.finditer(r"([A-Za-z_]\w*)\s*(<[^<>;]*>)?\s*<<<", body):
        end = body.find(">>>", m.end())
        if end < 0:
            continue
        config = _split_top(body[m.end(): end])
        p = body.find("(", end)
        depth, k = 0, p
        while 0 <= k < len(body):
            depth += {"(": 1, ")": -1}.get(body[k], 0)
            k += 1
            if depth == 0:
                break
        args = _split_top(body[p + 1: k - 1]) if p >= 0 else []
        out.append((m.group(1), config, args, m.start()))
    return out


def _file_constants(text: str) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for m in re.finditer(r"^\s*#\s*define\s+([A-Za-z_]\w*)\s+([^\n]+)$", text, re.M):
        try:
            env[m.group(1)] = _eval(m.group(2), env)
        except _Unknown:
            pass
    for m in re.finditer(r"\b(?:static\s+)?(?:const|constexpr)\s+(?:unsigned\s+|int\s+|size_t\s+|long\s+)+"
                         r"([A-Za-z_]\w*)\s*=\s*([^;]+);", text):
        try:
            env[m.group(1)] = _eval(m.group(2), env)
        except _Unknown:
            pass
    return env


def _locals(body: str, env: dict[str, Any]) -> None:
    decl = re.compile(r"\b(?:const\s+)?(?:unsigned\s+int|unsigned|int|size_t|long\s+long|long|auto|dim3)\s+"
                      r"([A-Za-z_]\w*)\s*(=\s*([^;]+)|\(([^;]*)\)|\{([^;]*)\})\s*;")
    for m in decl.finditer(body):
        expr = m.group(3) or f"dim3({m.group(4) or m.group(5)})"
        try:
            env[m.group(1)] = _eval(expr, env)
        except _Unknown:
            env.pop(m.group(1), None)


def _dims(value: Any) -> tuple[int, int, int]:
    if isinstance(value, tuple):
        v = [int(x) for x in value] + [1] * (3 - len(value))
        return (v[0], v[1], v[2])
    return (int(value), 1, 1)


def _in_loop(body: str, pos: int) -> bool:
    for m in re.finditer(r"\b(for|while)\s*\(", body[:pos]):
        brace = body.find("{", m.end())
        if brace < 0 or brace > pos:
            continue
        depth = 0
        for k in range(brace, pos):
            depth += {"{": 1, "}": -1}.get(body[k], 0)
        if depth > 0:
            return True
    return False


def estimate_c(spec: TaskSpec, source: str, cases: list[CCase], gpu: str = DEFAULT_GPU
               ) -> tuple[list[Measurement], dict[str, Any], list[str]]:
    """Estimated time per configuration; returns (measurements, features, notes on unknowns)."""
    from veriforge.cuda import analysis, costmodel

    text = strip_c(source)
    funcs = {name: (header, body) for name, header, body, _ in function_bodies(text)}
    if spec.entry not in funcs:
        return [], {}, [f"estimated time unknown: no definition of {spec.entry}() found"]
    _, body = funcs[spec.entry]
    launches = find_launches(body)
    if not launches:
        return [], {}, [f"estimated time unknown: no <<<...>>> launch in {spec.entry}()"]
    if any(_in_loop(body, pos) for *_, pos in launches):
        return [], {}, ["estimated time unknown: a kernel is launched inside a loop (trip count not evaluated)"]
    constants = _file_constants(text)
    measurements: list[Measurement] = []
    features: dict[str, Any] = {}
    notes: list[str] = []
    seen: set[str] = set()
    for case in cases:
        if case.config in seen:
            continue
        seen.add(case.config)
        env = dict(constants)
        for p, value in zip(spec.params, case.args, strict=True):
            if p.role == "scalar":
                env[p.name] = value
        _locals(body, env)
        total, parts, details = 0.0, [], []
        try:
            for kernel, config, args, _pos in launches:
                if len(config) < 2:
                    raise _Unknown(f"launch of {kernel} has no block size")
                grid, block = _dims(_eval(config[0], env)), _dims(_eval(config[1], env))
                smem = int(_eval(config[2], env)) if len(config) > 2 else 0
                kheader = funcs.get(kernel, ("", ""))[0]
                kparams = _kernel_params(kheader)
                values: dict[str, Any] = {}
                for (ptype, pname), arg in zip(kparams, args, strict=False):
                    if "*" in ptype:
                        continue
                    try:
                        values[pname] = _eval(arg, env)
                    except _Unknown:
                        pass
                rep = analysis.analyze(source, kernel=kernel, grid=grid, block=block, params=values,
                                       dynamic_smem=smem)
                est = costmodel.estimate(rep, gpu)
                total += est.time_s
                parts.append(est)
                details.append({"kernel": kernel, "grid": grid, "block": block, "time_s": est.time_s,
                                "bound": est.bound})
                if case is cases[-1] or case.config == cases[-1].config:
                    features.update({f"{kernel}.{k}" if len(launches) > 1 else k: v
                                     for k, v in rep.features.items()})
        except _Unknown as exc:
            notes.append(f"config {case.config!r}: estimated time unknown: {exc}")
            continue
        except Exception as exc:
            notes.append(f"config {case.config!r}: estimated time unknown: {type(exc).__name__}: {exc}")
            continue
        first = parts[0].to_measurement()
        measurements.append(Measurement(name="time_s", value=total, unit="s", provenance="estimated",
                                        backend=first.backend, details={"config": case.config, "gpu": gpu,
                                                                        "launches": details}))
    return measurements, features, notes


def _kernel_params(header: str) -> list[tuple[str, str]]:
    m = re.search(r"\(([^()]*)\)\s*$", header.strip())
    if not m or not m.group(1).strip():
        return []
    out = []
    for part in _split_top(m.group(1)):
        pm = re.match(r"^(.*?)([A-Za-z_]\w*)\s*$", part)
        if pm:
            out.append((pm.group(1), pm.group(2)))
    return out
