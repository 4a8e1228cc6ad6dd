"""Just enough reading of a CUDA source file to edit it safely: functions, launches, constants.

The built-in edit operators rewrite text at exact character positions, so everything here works
on the comment- and string-blanked text of the project's one source reader
(:func:`veriforge.cuda.source_reader.blank`, continued lines spliced, positions preserved) and
returns spans into the original source. A small integer evaluator
resolves launch configurations from literal constants (``#define``, ``const``/``constexpr``,
host locals, ``dim3`` components) so an operator can stay inside hardware limits *before*
spending an evaluation; anything it cannot resolve is ``None`` and the verifier decides.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from veriforge.core import pyparse as _pyparse
from veriforge.cuda.source_reader import blank, functions
from veriforge.optiml.source_tokens import close_of, top_level

__all__ = ["Function", "Launch", "SourceScan", "eval_int", "grid_follow_spans", "identifiers", "param_parts", "scan",
           "split_top", "unparen"]

_INT = r"(?:unsigned\s+int|unsigned|int|size_t|long\s+long|long|short|uint32_t|int32_t|int64_t|uint64_t)"
CONST_DECL = re.compile(
    rf"\b(?:static\s+)?(?:const|constexpr)\s+(?:static\s+)?{_INT}\s+([A-Za-z_]\w*)\s*=\s*(\d+)[uUlL]*\s*;"
)
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+\(?[ \t]*(\d+)[uUlL]*[ \t]*\)?[ \t]*$", re.M)
LOCAL_DECL = re.compile(rf"(?<![\w.])(?:const\s+)?{_INT}\s+([A-Za-z_]\w*)\s*=\s*(\d+)[uUlL]*\s*;")
EXPR_DECL = re.compile(rf"(?<![\w.])(?:const\s+)?(?:{_INT}|auto)\s+([A-Za-z_]\w*)\s*=\s*([^;]+);")
DIM3_DECL = re.compile(r"\bdim3\s+([A-Za-z_]\w*)\s*(?:\(([^;]*)\)|\{([^;]*)\}|=\s*dim3\s*\(([^;]*)\))\s*;")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_KEYWORDS = {"int", "unsigned", "long", "size_t", "float", "double", "const", "dim3", "sizeof", "min", "max"}


@dataclass(frozen=True)
class Function:
    """A top-level function definition: ``body`` spans the text between its braces."""

    name: str
    header_start: int
    body_start: int
    body_end: int
    kernel: bool  # __global__
    device: bool  # __device__ (and not __global__)


@dataclass(frozen=True)
class Launch:
    """One ``kernel<<<grid, block[, smem]>>>(...)`` site; spans are into the source."""

    kernel: str
    start: int
    grid: tuple[int, int]
    block: tuple[int, int]
    host: str  # the function that contains the launch


@dataclass
class SourceScan:
    source: str
    text: str  # comment/string-blanked, same positions
    functions: list[Function] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)

    def kernels(self) -> list[Function]:
        return [f for f in self.functions if f.kernel]

    def function_at(self, pos: int) -> Function | None:
        for f in self.functions:
            if f.header_start <= pos < f.body_end:
                return f
        return None

    def launches_of(self, kernel: str) -> list[Launch]:
        return [launch for launch in self.launches if launch.kernel == kernel]

    def launch_call(self, launch: Launch) -> tuple[list[tuple[int, int]], int, int] | None:
        """``(argument spans, position of '(', position of ')')`` of the call after ``<<<...>>>``;
        None when the call cannot be read (no ``>>>``, no parenthesis, unbalanced)."""
        text = self.text
        end = text.find(">>>", launch.block[1])
        if end < 0:
            return None
        open_m = re.compile(r"\s*\(").match(text, end + 3)
        if not open_m:
            return None
        close = close_of(text, open_m.end() - 1)
        if close is None:
            return None
        return split_top(text, open_m.end(), close), open_m.end() - 1, close

    def host_function(self, launch: Launch, *, containing: bool = False) -> Function | None:
        """The definition named ``launch.host``: the first one, or with ``containing`` the one whose body
        holds the launch (they differ only when host functions are overloaded)."""
        return next((f for f in self.functions if f.name == launch.host
                     and (not containing or f.body_start <= launch.start < f.body_end)), None)

    def expr(self, span: tuple[int, int]) -> str:
        return self.text[span[0]:span[1]].strip()

    def line(self, pos: int) -> int:
        return self.source.count("\n", 0, pos) + 1

    def constants(self) -> dict[str, int]:
        """File-level integer constants with literal values (``#define``, ``const``, ``constexpr``)."""
        return {name: decl[0] for name, decl in self.constant_decls().items()}

    def constant_decls(self) -> dict[str, tuple[int, int, int, str]]:
        """name -> (value, statement start, statement end, ``"define"``/``"const"``) of the file-level
        integer constants; a later definition of a name wins."""
        out: dict[str, tuple[int, int, int, str]] = {}
        for m in DEFINE.finditer(self.text):
            out[m.group(1)] = (int(m.group(2)), m.start(), m.end(), "define")
        for m in CONST_DECL.finditer(self.text):
            if self.function_at(m.start()) is None:
                out[m.group(1)] = (int(m.group(2)), m.start(), m.end(), "const")
        return out

    def host_env(self, host: str, scalars: dict[str, int] | None = None) -> dict[str, Any]:
        """Constants plus the literal/dim3/derived locals of host function ``host``, in order."""
        env: dict[str, Any] = dict(self.constants())
        env.update(scalars or {})
        fn = next((f for f in self.functions if f.name == host), None)
        if fn is None:
            return env
        body = self.text[fn.body_start:fn.body_end]
        events: list[tuple[int, str, str]] = []
        for m in EXPR_DECL.finditer(body):
            events.append((m.start(), m.group(1), m.group(2)))
        for m in DIM3_DECL.finditer(body):
            args = m.group(2) or m.group(3) or m.group(4) or ""
            events.append((m.start(), m.group(1), f"dim3({args})"))
        for _, name, expr in sorted(events):
            value = eval_int(expr, env)
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def block_dims(self, launch: Launch, scalars: dict[str, int] | None = None) -> tuple[int, int, int] | None:
        """The resolved block dimensions of ``launch`` (None when not literal-resolvable)."""
        value = eval_int(self.expr(launch.block), self.host_env(launch.host, scalars))
        if value is None:
            return None
        dims = list(value) if isinstance(value, tuple) else [value]
        dims = [int(d) for d in dims] + [1] * (3 - len(dims))
        return dims[0], dims[1], dims[2]


def scan(source: str) -> SourceScan:
    text = blank(source, splice=True)
    out = SourceScan(source=source, text=text, functions=_functions(text))
    for m in re.finditer(r"([A-Za-z_]\w*)\s*(?:<[^<>;]*>)?\s*<<<", text):
        end = text.find(">>>", m.end())
        if end < 0:
            continue
        parts = split_top(text, m.end(), end)
        if len(parts) < 2:
            continue
        host = out.function_at(m.start())
        out.launches.append(Launch(m.group(1), m.start(), parts[0], parts[1], host.name if host else ""))
    return out


def unparen(expr: str) -> str:
    """``((n + 1))`` → ``n + 1``: parentheses around the whole expression removed."""
    e = expr.strip()
    while e.startswith("(") and e.endswith(")"):
        depth = 0
        for i, ch in enumerate(e):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and i < len(e) - 1:
                return e
        e = e[1:-1].strip()
    return e


def split_top(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of the top-level comma-separated parts of ``text[start:end]``."""
    spans, cur = [], start
    for k in top_level(text, start, end):
        if text[k] == ",":
            spans.append((cur, k))
            cur = k + 1
    spans.append((cur, end))
    return [s for s in spans if text[s[0]:s[1]].strip()]


def param_parts(text: str, fn: Function, *, at_call: bool = False, nested: bool = False) -> list[str] | None:
    """The raw text of each parameter declaration of ``fn`` (blank parts dropped); None when no list is found.

    The list opens at the first ``(`` after the first occurrence of the name in the header, or with
    ``at_call`` at the first ``name(``. It closes at the header's last ``)`` and every comma separates,
    or with ``nested`` at the ``)`` matching the opening one and only top-level commas separate. The
    operators differ on exotic headers (a ``__launch_bounds__(...)`` before a name that occurs earlier
    in the header, commas inside parentheses) and each keeps the rule it was written with.
    """
    header = text[fn.header_start:fn.body_start]
    if at_call:
        m = re.search(rf"\b{re.escape(fn.name)}\s*\(", header)
        if m is None:
            return None
        open_rel = m.end() - 1
    else:
        open_rel = header.find("(", header.find(fn.name))
        if open_rel < 0:
            return None
    if nested:
        close = close_of(text, fn.header_start + open_rel)
        if close is None:
            return None
        return [text[a:b] for a, b in split_top(text, fn.header_start + open_rel + 1, close)]
    close_rel = header.rfind(")")
    if close_rel < 0:
        return None
    return [part for part in header[open_rel + 1:close_rel].split(",") if part.strip()]


_CEIL_DIV = re.compile(r"(?<![\w.])(\d+)\s*\)\s*/\s*(\d+)(?![\w.])")
_DIV = re.compile(r"/\s*(\d+)(?![\w.])")


def grid_follow_spans(text: str, g0: int, g1: int, value: int) -> list[tuple[int, int, int]]:
    """Spans of the literals in a grid expression ``text[g0:g1]`` that must follow a block size of
    ``value``, each with its offset from the block size: ``(span start, span end, offset)``.

    Only the divisor of a division by ``value`` (offset 0) and the ``value - 1`` of a ceil-division
    ``(n + value-1) / value`` (offset -1) follow; any other literal in the grid is left alone. Matching
    by pattern (not by equal value) also works for tiny block sizes, where a stray ``1`` or ``2`` would
    otherwise be ambiguous — an earlier value-based rule stopped following at block size 2 and left
    grids 4x too large, which an optimiser then exploited.
    """
    part = text[g0:g1]
    spans: dict[int, tuple[int, int, int]] = {}
    for m in _CEIL_DIV.finditer(part):
        if int(m.group(2)) == value and int(m.group(1)) == value - 1:
            spans[m.start(1)] = (g0 + m.start(1), g0 + m.end(1), -1)
    for m in _DIV.finditer(part):
        if int(m.group(1)) == value:
            spans[m.start(1)] = (g0 + m.start(1), g0 + m.end(1), 0)
    return [spans[k] for k in sorted(spans)]


def identifiers(expr: str) -> set[str]:
    return {t for t in _IDENT.findall(expr) if t not in _KEYWORDS and not t[0].isdigit()}


def _functions(text: str) -> list[Function]:
    return [Function(f.name, f.start, f.body[0] + 1, f.body[1], f.kernel, f.device)
            for f in functions(text) if f.body is not None]


def _c_to_py(expr: str) -> str:
    e = expr.strip()
    e = re.sub(r"static_cast\s*<[^<>]*>", "", e)
    e = re.sub(r"\(\s*(?:unsigned\s+int|unsigned|int|size_t|long\s+long|long)\s*\)", "", e)
    e = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", e)
    return e


def eval_int(expr: str, env: dict[str, Any]) -> Any:
    """Integer value (or dim3 tuple) of a C expression over ``env``; None when not resolvable."""
    if "?" in expr or "[" in expr or "->" in expr:
        return None
    try:
        tree = _pyparse.parse(_c_to_py(expr), mode="eval").body
        return _ev(tree, env)
    except (SyntaxError, _Unresolved, ZeroDivisionError, TypeError, ValueError, RecursionError):
        return None


class _Unresolved(Exception):
    pass


def _ev(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise _Unresolved(node.id)
    if isinstance(node, ast.Attribute) and node.attr in ("x", "y", "z"):
        base = _ev(node.value, env)
        dims = list(base) if isinstance(base, tuple) else [base]
        dims += [1] * (3 - len(dims))
        return dims["xyz".index(node.attr)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _ev(node.operand, env)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _ev(node.left, env), _ev(node.right, env)
        if isinstance(a, tuple) or isinstance(b, tuple):
            raise _Unresolved("arithmetic on dim3")
        if isinstance(node.op, ast.Div | ast.FloorDiv):
            return int(a / b)
        ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
        if type(node.op) in ops:
            return ops[type(node.op)]
        if isinstance(node.op, ast.Mod):
            return a % b
        if isinstance(node.op, ast.LShift):
            return a << b
        if isinstance(node.op, ast.RShift):
            return a >> b
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        args = [_ev(a, env) for a in node.args]
        if node.func.id == "dim3":
            return tuple(int(a) for a in args) if len(args) > 1 else int(args[0])
        if node.func.id in ("min", "max") and args:
            return min(args) if node.func.id == "min" else max(args)
    raise _Unresolved(ast.dump(node)[:40])
