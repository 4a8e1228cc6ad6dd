"""Safe evaluation of the small arithmetic expressions used in task.toml.

Sizes, scalar values, metrics and generator bounds are written as expressions over a
configuration's variables (``"ceil_div(n, 256) * 4"``). They come from task folders users may
download, so they are parsed with :mod:`ast` and interpreted over a closed set of node types:
no attribute access, no subscripts, no names other than the variables and a few functions.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Mapping
from typing import Any

from veriforge.core import pyparse as _pyparse
from veriforge.errors import ConfigError

__all__ = ["ExpressionError", "evaluate", "evaluate_int", "free_names", "parse"]

Number = int | float


class ExpressionError(ConfigError):
    """An expression in a task file is malformed or cannot be evaluated."""


def _ceil_div(a: Number, b: Number) -> int:
    if b == 0:
        raise ZeroDivisionError("ceil_div by zero")
    return -(-int(a) // int(b))


_FUNCS: dict[str, Any] = {
    "min": min,
    "max": max,
    "ceil_div": _ceil_div,
    "abs": abs,
    "int": int,
    "float": float,
    "sqrt": math.sqrt,
    "log2": math.log2,
}
_BINOPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Any] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> ast.expr:
    """Parse and check ``text``; raises :class:`ExpressionError` on anything outside the grammar."""
    try:
        tree = _pyparse.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression {text!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Expression | ast.Load | ast.Name | ast.operator | ast.unaryop):
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            continue
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS \
                and not node.keywords:
            continue
        raise ExpressionError(f"expression {text!r}: `{ast.unparse(node)}` is not allowed "
                              f"(use numbers, variables, + - * / // % **, and {', '.join(_FUNCS)})")
    return tree.body


def free_names(text: str) -> set[str]:
    """Variable names ``text`` refers to (function names excluded)."""
    body = parse(text)
    funcs = {id(n.func) for n in ast.walk(body) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(body) if isinstance(n, ast.Name) and id(n) not in funcs}


def _eval(node: ast.expr, env: Mapping[str, Any], text: str) -> Number:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            known = ", ".join(sorted(env)) or "none"
            raise ExpressionError(f"expression {text!r}: unknown variable {node.id!r} (known: {known})")
        value = env[node.id]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ExpressionError(f"expression {text!r}: variable {node.id!r} is not a number ({value!r})")
        return value
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env, text), _eval(node.right, env, text)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ExpressionError(f"expression {text!r}: exponent {right} is too large")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env, text))
    if isinstance(node, ast.Call):
        args = [_eval(a, env, text) for a in node.args]
        return _FUNCS[node.func.id](*args)  # type: ignore[union-attr]
    raise ExpressionError(f"expression {text!r}: unsupported node {type(node).__name__}")  # pragma: no cover


def evaluate(text: str | int | float, env: Mapping[str, Any]) -> Number:
    """Value of ``text`` with variables from ``env``. Numbers pass through unchanged."""
    if isinstance(text, bool):
        raise ExpressionError(f"expected a number or an expression, got {text!r}")
    if isinstance(text, int | float):
        return text
    body = parse(str(text))
    try:
        return _eval(body, env, str(text))
    except ExpressionError:
        raise
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise ExpressionError(f"expression {text!r} failed: {exc}") from None


def evaluate_int(text: str | int | float, env: Mapping[str, Any], what: str = "value") -> int:
    """Like :func:`evaluate` but the result must be integral (sizes, counts)."""
    value = evaluate(text, env)
    if isinstance(value, float):
        if not value.is_integer():
            raise ExpressionError(f"{what} {text!r} = {value} is not an integer")
        value = int(value)
    return value
