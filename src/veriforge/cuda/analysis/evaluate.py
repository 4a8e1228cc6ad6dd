"""Values of expressions across lanes: the arithmetic the lane evaluator runs.

Every value is a float64 array broadcastable to ``(warps, 32)`` (one number per sampled lane; a
0-d array when all lanes agree), or unknown with the reason. Integers are held exactly as floats
(exact below 2**53, far beyond any index) and C's integer semantics are applied where the type is
integral (truncating division, ``%`` with the dividend's sign, shifts, bit operations). Lanes whose
value is not determined hold NaN, so a value can be known on some lanes only (``int j; if (c) j = 1;``).

``deps`` records what a value depends on — ``tid`` (threadIdx), ``bid`` (blockIdx), ``data``
(something loaded from memory) — which is how barriers under thread-dependent conditions are
found independently of the particular launch. Unsigned wrap-around is not modelled (indices are
treated as mathematical integers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

# name -> (bytes, is_float, vector width)
_SCALARS: dict[str, tuple[int, bool]] = {
    "char": (1, False),
    "signed char": (1, False),
    "unsigned char": (1, False),
    "bool": (1, False),
    "int8_t": (1, False),
    "uint8_t": (1, False),
    "short": (2, False),
    "unsigned short": (2, False),
    "int16_t": (2, False),
    "uint16_t": (2, False),
    "int": (4, False),
    "unsigned": (4, False),
    "unsigned int": (4, False),
    "signed": (4, False),
    "int32_t": (4, False),
    "uint32_t": (4, False),
    "uint": (4, False),
    "long": (8, False),
    "unsigned long": (8, False),
    "long long": (8, False),
    "unsigned long long": (8, False),
    "int64_t": (8, False),
    "uint64_t": (8, False),
    "size_t": (8, False),
    "ptrdiff_t": (8, False),
    "long int": (8, False),
    "float": (4, True),
    "double": (8, True),
    "half": (2, True),
    "__half": (2, True),
    "__nv_bfloat16": (2, True),
    "nv_bfloat16": (2, True),
    "half2": (4, True),
    "__half2": (4, True),
    "__nv_bfloat162": (4, True),
    "nv_bfloat162": (4, True),
}
_VECTOR = re.compile(r"^(u?char|u?short|u?int|u?long|u?longlong|float|double)([1-4])$")
_VEC_BASE = {"char": 1, "short": 2, "int": 4, "long": 8, "longlong": 8, "float": 4, "double": 8}


@dataclass(frozen=True, slots=True)
class Elem:
    """An element type: its size in bytes (None: not known), floating point or not, vector width."""

    name: str
    size: int | None
    is_float: bool
    width: int = 1


def elem_type(name: str, typedefs: dict[str, str] | None = None) -> Elem:
    """Elem for a type spelling (``const float``, ``float4``, ``unsigned int``, a typedef/template arg)."""
    words = [w for w in name.replace("*", " ").split() if w not in ("const", "volatile", "__restrict__", "struct")]
    clean = " ".join(words)
    for _ in range(4):
        if typedefs and clean in typedefs and typedefs[clean] != clean:
            clean = typedefs[clean]
        else:
            break
    if clean in _SCALARS:
        size, is_float = _SCALARS[clean]
        return Elem(clean, size, is_float, 2 if clean.endswith("2") and size == 4 and is_float else 1)
    m = _VECTOR.match(clean)
    if m:
        base = m.group(1).lstrip("u")
        n = int(m.group(2))
        return Elem(clean, _VEC_BASE[base] * n, base in ("float", "double"), n)
    return Elem(clean, None, False)


INT = Elem("int", 4, False)
FLOAT = Elem("float", 4, True)


@dataclass(frozen=True, slots=True)
class Ptr:
    """A pointer (or array) value: which allocation, byte offset per lane, pointee type.

    ``dims`` holds the remaining extents of a multi-dimensional array (``tile[32][33]`` → ``(33,)``
    after the name, ``()`` after ``tile[ty]``); ``offset`` None means the offset is unknown
    (``reason`` says why).
    """

    space: str  # "global" | "shared" | "local" | "constant" | "unknown"
    base: str
    offset: np.ndarray | None
    elem: Elem
    dims: tuple[int, ...] = ()
    read_only: bool = False
    restrict: bool = False
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Value:
    """A value on every sampled lane (see the module docstring)."""

    arr: np.ndarray | None
    is_float: bool = False
    deps: frozenset[str] = frozenset()
    reason: str | None = None
    ptr: Ptr | None = None

    @property
    def known(self) -> bool:
        return self.arr is not None

    def lanes(self, shape: tuple[int, int]) -> np.ndarray | None:
        return None if self.arr is None else np.broadcast_to(self.arr, shape)


def const(x: float, is_float: bool = False) -> Value:
    return Value(np.asarray(float(x)), is_float)


def unknown(reason: str, deps: frozenset[str] = frozenset(), is_float: bool = False) -> Value:
    return Value(None, is_float, deps, reason)


def _int_binop(a: np.ndarray, b: np.ndarray, fn) -> np.ndarray:  # type: ignore[no-untyped-def]
    ok = np.isfinite(a) & np.isfinite(b)
    ai = np.where(ok, a, 0).astype(np.int64)
    bi = np.where(ok, b, 0).astype(np.int64)
    with np.errstate(all="ignore"):
        out = fn(ai, bi).astype(np.float64)
    return np.where(ok, out, np.nan)


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        q = np.floor_divide(np.abs(a), np.abs(b)) * np.sign(a) * np.sign(b)
    return np.where(b == 0, np.nan, q)


def _c_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        r = np.fmod(a, b)
    return np.where(b == 0, np.nan, r)


def binary(op: str, a: Value, b: Value) -> Value:
    """``a op b`` with C semantics; unknown when either side is (comparisons included)."""
    deps = a.deps | b.deps
    is_float = a.is_float or b.is_float
    if op in ("<", ">", "<=", ">=", "==", "!=", "&&", "||"):
        is_float = False
    if op in ("&&", "||") and (a.arr is None) != (b.arr is None):
        # `i == 0 && v != 0.0f` with v unknown is still false wherever i != 0: keep the known side
        known = a.arr if a.arr is not None else b.arr
        unknown_side = np.full(np.shape(known), np.nan)
        a = Value(known if a.arr is not None else unknown_side, False, a.deps, a.reason)
        b = Value(known if b.arr is not None else unknown_side, False, b.deps, b.reason)
    if a.arr is None or b.arr is None:
        return Value(None, is_float, deps, a.reason or b.reason)
    x, y = a.arr, b.arr
    with np.errstate(all="ignore"):
        if op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        elif op == "*":
            r = x * y
        elif op == "/":
            r = x / y if is_float else _trunc_div(x, y)
        elif op == "%":
            r = _c_mod(x, y)
        elif op == "<<":
            r = _int_binop(x, y, np.left_shift)
        elif op == ">>":
            r = _int_binop(x, y, np.right_shift)
        elif op == "&":
            r = _int_binop(x, y, np.bitwise_and)
        elif op == "|":
            r = _int_binop(x, y, np.bitwise_or)
        elif op == "^":
            r = _int_binop(x, y, np.bitwise_xor)
        elif op in ("<", ">", "<=", ">=", "==", "!="):
            cmp = {
                "<": np.less,
                ">": np.greater,
                "<=": np.less_equal,
                ">=": np.greater_equal,
                "==": np.equal,
                "!=": np.not_equal,
            }[op]
            r = np.where(np.isnan(x) | np.isnan(y), np.nan, cmp(x, y).astype(np.float64))
        elif op == "&&":
            r = np.where((x == 0) | (y == 0), 0.0, np.where(np.isnan(x) | np.isnan(y), np.nan, 1.0))
        elif op == "||":
            r = np.where(
                (x != 0) & ~np.isnan(x) | (y != 0) & ~np.isnan(y), 1.0, np.where(np.isnan(x) | np.isnan(y), np.nan, 0.0)
            )
        else:
            return Value(None, is_float, deps, f"operator {op} is not evaluated")
    r = np.asarray(r, dtype=np.float64)
    r = np.where(np.isinf(r), np.nan, r) if r.ndim else (r if np.isfinite(r) else np.asarray(np.nan))
    return Value(r, is_float, deps, a.reason or b.reason)


def unary(op: str, a: Value) -> Value:
    if a.arr is None:
        return a
    with np.errstate(all="ignore"):
        if op == "-":
            r = -a.arr
        elif op == "+":
            r = a.arr
        elif op == "!":
            r = np.where(np.isnan(a.arr), np.nan, (a.arr == 0).astype(np.float64))
        elif op == "~":
            r = _int_binop(a.arr, np.zeros_like(a.arr), lambda x, _y: np.invert(x))
        else:
            return Value(None, a.is_float, a.deps, f"operator {op} is not evaluated")
    return replace(a, arr=np.asarray(r, dtype=np.float64))


def convert(v: Value, to_float: bool) -> Value:
    """Assignment/cast conversion: float → integer truncates toward zero."""
    if v.arr is None or to_float or not v.is_float:
        return replace(v, is_float=to_float or (v.is_float and to_float))
    return replace(v, arr=np.trunc(v.arr), is_float=False)


def select(cond: Value, a: Value, b: Value) -> Value:
    """``cond ? a : b`` lane by lane."""
    deps = cond.deps | a.deps | b.deps
    is_float = a.is_float or b.is_float
    if cond.arr is None:
        return Value(None, is_float, deps, cond.reason)
    if a.arr is None or b.arr is None:
        if a.arr is None and b.arr is None:
            return Value(None, is_float, deps, a.reason or b.reason)
        known = a if a.arr is not None else b
        take_known = (cond.arr != 0) if a.arr is not None else (cond.arr == 0)
        arr = np.where(take_known & ~np.isnan(cond.arr), known.arr, np.nan)
        return Value(arr, is_float, deps, a.reason or b.reason)
    arr = np.where(np.isnan(cond.arr), np.nan, np.where(cond.arr != 0, a.arr, b.arr))
    return Value(arr, is_float, deps, a.reason or b.reason or cond.reason)


def merge(mask: np.ndarray, new: Value, old: Value | None) -> Value:
    """The value after assigning ``new`` on the lanes in ``mask`` only."""
    if old is None:
        old = Value(None, new.is_float, frozenset(), new.reason)
    deps = new.deps | old.deps
    if new.ptr is not None or old.ptr is not None:
        if bool(np.all(mask)):
            return new
        a, b = new.ptr, old.ptr
        if (
            a is not None
            and b is not None
            and a.offset is not None
            and b.offset is not None
            and (a.space, a.base, a.elem, a.dims) == (b.space, b.base, b.elem, b.dims)
        ):
            # the same allocation on every lane (`p += step` under a partial mask): offsets per lane
            return Value(None, False, deps, None, replace(a, offset=np.where(mask, a.offset, b.offset)))
        return Value(None, new.is_float, deps, "pointer assigned under a condition")
    if bool(np.all(mask)):
        return new
    if new.arr is None and old.arr is None:
        return Value(None, new.is_float, deps, new.reason or old.reason)
    n = new.arr if new.arr is not None else np.asarray(np.nan)
    o = old.arr if old.arr is not None else np.asarray(np.nan)
    return Value(np.where(mask, n, o), new.is_float, deps, new.reason or old.reason)
