"""C→CUDA element-wise family: compositions of unary/binary/ternary ops over 1–3 input arrays.

A variant is an expression tree (depth 1–3) over the inputs ``a``, ``b``, ``c`` with optional scalar
wrappers (``alpha * E``, ``alpha * E + beta``) and an optional in-place form (``a`` is overwritten),
in float, double or int (int only with the integer-safe ops). Depth-1 trees are enumerated
exhaustively; deeper trees are drawn from a seeded generator, canonicalised (commutative children
sorted, inputs renamed by first use) so that two ids never denote the same computation, and kept
only when interval bounds show every intermediate value stays finite and well conditioned (no
overflow, no exp of large arguments, no sin of huge arguments, no floor after a rounding-sensitive
op) — otherwise a GPU's ulp-level differences would turn into test failures.

The same per-element body (straight-line C, one temporary per node) is used by the reference and by
every implementation, so the strategies differ only in how the elements are mapped to threads:
one thread per element, a grid-stride loop with 4-way ILP, and 16-byte vector loads with a scalar
tail and a fallback for unaligned pointers.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from veriforge.cudaperf.dataset.families._ckit import DTYPES, CType, P, args, impl, make_task, param, signature
from veriforge.cudaperf.dataset.families._ckit import tolerance as tol_for
from veriforge.cudaperf.dataset.family import GeneratedTask, family

FAMILY = "c_elementwise"

Emit = Callable[[CType, list[str]], str]


@dataclass(frozen=True)
class Op:
    name: str  # no underscores: ids are built from op names joined by "_"
    arity: int
    kinds: str  # "f" float types, "i" int
    emit: Emit
    npf: Callable[..., np.ndarray]
    transc: bool = False
    commutative: bool = False
    leaf_args: tuple[int, ...] = ()  # argument positions that must be raw inputs (discontinuous ops)
    max_arg: float = 1e5  # largest |argument| for which the op stays well conditioned


def _f(name: str) -> Callable[[CType], str]:
    return lambda d: d.fn(name)


def _sig(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


_FLOAT_OPS: list[Op] = [
    Op("neg", 1, "f", lambda d, a: f"-{a[0]}", lambda x: -x),
    Op("abs", 1, "f", lambda d, a: f"{d.fn('fabs')}({a[0]})", np.abs),
    Op("exp", 1, "f", lambda d, a: f"{d.fn('exp')}({a[0]})", np.exp, transc=True, max_arg=10),
    Op("log1pabs", 1, "f", lambda d, a: f"{d.fn('log1p')}({d.fn('fabs')}({a[0]}))", lambda x: np.log1p(np.abs(x)),
       transc=True),
    # sqrt has an unbounded slope at 0: fed a computed value, ulp differences near 0 would exceed the
    # tolerance on a GPU, so it only takes raw inputs (as do the rounding and sign ops below)
    Op("sqrtabs", 1, "f", lambda d, a: f"{d.fn('sqrt')}({d.fn('fabs')}({a[0]}))", lambda x: np.sqrt(np.abs(x)),
       transc=True, leaf_args=(0,)),
    Op("sin", 1, "f", lambda d, a: f"{d.fn('sin')}({a[0]})", np.sin, transc=True, max_arg=30),
    Op("cos", 1, "f", lambda d, a: f"{d.fn('cos')}({a[0]})", np.cos, transc=True, max_arg=30),
    Op("tanh", 1, "f", lambda d, a: f"{d.fn('tanh')}({a[0]})", np.tanh, transc=True),
    Op("sigmoid", 1, "f", lambda d, a: f"{d.lit(1)} / ({d.lit(1)} + {d.fn('exp')}(-{a[0]}))", _sig, transc=True,
       max_arg=80),
    Op("relu", 1, "f", lambda d, a: f"{d.fn('fmax')}({a[0]}, {d.lit(0)})", lambda x: np.maximum(x, 0)),
    Op("lrelu", 1, "f", lambda d, a: f"({a[0]} > {d.lit(0)} ? {a[0]} : {d.lit(0.01)} * {a[0]})",
       lambda x: np.where(x > 0, x, 0.01 * x)),
    Op("gelu", 1, "f", lambda d, a: (f"{d.lit(0.5)} * {a[0]} * ({d.lit(1)} + {d.fn('tanh')}({d.lit(0.7978845608)} * "
                                     f"({a[0]} + {d.lit(0.044715)} * {a[0]} * {a[0]} * {a[0]})))"),
       lambda x: 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3))), transc=True, max_arg=1000),
    Op("softplus", 1, "f", lambda d, a: f"{d.fn('log1p')}({d.fn('exp')}({a[0]}))", lambda x: np.log1p(np.exp(x)),
       transc=True, max_arg=30),
    Op("square", 1, "f", lambda d, a: f"{a[0]} * {a[0]}", lambda x: x * x),
    Op("cube", 1, "f", lambda d, a: f"{a[0]} * {a[0]} * {a[0]}", lambda x: x ** 3),
    Op("recip", 1, "f", lambda d, a: f"{d.lit(1)} / ({d.lit(1)} + {d.fn('fabs')}({a[0]}))",
       lambda x: 1 / (1 + np.abs(x))),
    Op("floor", 1, "f", lambda d, a: f"{d.fn('floor')}({a[0]})", np.floor, leaf_args=(0,)),
    Op("ceil", 1, "f", lambda d, a: f"{d.fn('ceil')}({a[0]})", np.ceil, leaf_args=(0,)),
    Op("round", 1, "f", lambda d, a: f"{d.fn('round')}({a[0]})", np.round, leaf_args=(0,)),
    Op("silu", 1, "f", lambda d, a: f"{a[0]} / ({d.lit(1)} + {d.fn('exp')}(-{a[0]}))", lambda x: x * _sig(x),
       transc=True, max_arg=80),
    Op("elu", 1, "f", lambda d, a: f"({a[0]} > {d.lit(0)} ? {a[0]} : {d.fn('expm1')}({a[0]}))",
       lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))), transc=True),
    Op("hardtanh", 1, "f", lambda d, a: f"{d.fn('fmin')}({d.fn('fmax')}({a[0]}, {d.lit(-1)}), {d.lit(1)})",
       lambda x: np.clip(x, -1, 1)),
    Op("atan", 1, "f", lambda d, a: f"{d.fn('atan')}({a[0]})", np.arctan, transc=True),
    Op("erf", 1, "f", lambda d, a: f"{d.fn('erf')}({a[0]})", lambda x: np.tanh(1.2 * x), transc=True),
    Op("rsqrtabs", 1, "f", lambda d, a: f"{d.lit(1)} / {d.fn('sqrt')}({d.fn('fabs')}({a[0]}) + {d.lit(1)})",
       lambda x: 1 / np.sqrt(np.abs(x) + 1), transc=True),
    Op("sign", 1, "f", lambda d, a: f"({a[0]} > {d.lit(0)} ? {d.lit(1)} : ({a[0]} < {d.lit(0)} ? {d.lit(-1)} : "
                                    f"{d.lit(0)}))", np.sign, leaf_args=(0,)),
    # binary
    Op("add", 2, "f", lambda d, a: f"{a[0]} + {a[1]}", np.add, commutative=True),
    Op("sub", 2, "f", lambda d, a: f"{a[0]} - {a[1]}", np.subtract),
    Op("mul", 2, "f", lambda d, a: f"{a[0]} * {a[1]}", np.multiply, commutative=True),
    Op("divs", 2, "f", lambda d, a: f"{a[0]} / ({d.fn('fabs')}({a[1]}) + {d.lit(1)})",
       lambda x, y: x / (np.abs(y) + 1)),
    Op("min", 2, "f", lambda d, a: f"{d.fn('fmin')}({a[0]}, {a[1]})", np.minimum, commutative=True),
    Op("max", 2, "f", lambda d, a: f"{d.fn('fmax')}({a[0]}, {a[1]})", np.maximum, commutative=True),
    Op("pows", 2, "f", lambda d, a: f"{d.fn('pow')}({d.fn('fabs')}({a[0]}) + {d.lit(1)}, {a[1]})",
       lambda x, y: np.power(np.abs(x) + 1, y), transc=True, max_arg=4),
    Op("hypot", 2, "f", lambda d, a: f"{d.fn('hypot')}({a[0]}, {a[1]})", np.hypot, transc=True, commutative=True),
    Op("atan2", 2, "f", lambda d, a: f"{d.fn('atan2')}({a[0]}, {a[1]})", np.arctan2, transc=True, leaf_args=(1,)),
    Op("absdiff", 2, "f", lambda d, a: f"{d.fn('fabs')}({a[0]} - {a[1]})", lambda x, y: np.abs(x - y),
       commutative=True),
    Op("sqdiff", 2, "f", lambda d, a: f"({a[0]} - {a[1]}) * ({a[0]} - {a[1]})", lambda x, y: (x - y) ** 2,
       commutative=True),
    Op("mean2", 2, "f", lambda d, a: f"({a[0]} + {a[1]}) * {d.lit(0.5)}", lambda x, y: (x + y) * 0.5,
       commutative=True),
    Op("copysign", 2, "f", lambda d, a: f"{d.fn('copysign')}({a[0]}, {a[1]})", lambda x, y: np.copysign(x, y),
       leaf_args=(1,)),
    Op("fmod", 2, "f", lambda d, a: f"{d.fn('fmod')}({a[0]}, {d.fn('fabs')}({a[1]}) + {d.lit(1)})",
       lambda x, y: np.fmod(x, np.abs(y) + 1), leaf_args=(0, 1)),
    # ternary
    Op("fma", 3, "f", lambda d, a: f"{a[0]} * {a[1]} + {a[2]}", lambda x, y, z: x * y + z),
    Op("lerp", 3, "f", lambda d, a: f"{a[0]} + {a[2]} * ({a[1]} - {a[0]})", lambda x, y, z: x + z * (y - x)),
    Op("clamp", 3, "f", lambda d, a: (f"{d.fn('fmin')}({d.fn('fmax')}({a[0]}, {d.fn('fmin')}({a[1]}, {a[2]})), "
                                      f"{d.fn('fmax')}({a[1]}, {a[2]}))"),
       lambda x, y, z: np.minimum(np.maximum(x, np.minimum(y, z)), np.maximum(y, z))),
    Op("select", 3, "f", lambda d, a: f"({a[0]} > {d.lit(0)} ? {a[1]} : {a[2]})",
       lambda x, y, z: np.where(x > 0, y, z), leaf_args=(0,)),
]


def _imin(d: CType, a: list[str]) -> str:
    return f"({a[0]} < {a[1]} ? {a[0]} : {a[1]})"


def _imax(d: CType, a: list[str]) -> str:
    return f"({a[0]} > {a[1]} ? {a[0]} : {a[1]})"


_INT_OPS: list[Op] = [
    Op("neg", 1, "i", lambda d, a: f"-{a[0]}", lambda x: -x),
    Op("abs", 1, "i", lambda d, a: f"({a[0]} < 0 ? -{a[0]} : {a[0]})", np.abs),
    Op("not", 1, "i", lambda d, a: f"~{a[0]}", lambda x: ~x),
    Op("shl", 1, "i", lambda d, a: f"(int)((unsigned int){a[0]} << 2)", lambda x: x * 4),
    Op("shr", 1, "i", lambda d, a: f"{a[0]} >> 1", lambda x: np.floor(x / 2)),
    Op("square", 1, "i", lambda d, a: f"{a[0]} * {a[0]}", lambda x: x * x),
    Op("add", 2, "i", lambda d, a: f"{a[0]} + {a[1]}", np.add, commutative=True),
    Op("sub", 2, "i", lambda d, a: f"{a[0]} - {a[1]}", np.subtract),
    Op("mul", 2, "i", lambda d, a: f"{a[0]} * {a[1]}", np.multiply, commutative=True),
    Op("min", 2, "i", _imin, np.minimum, commutative=True),
    Op("max", 2, "i", _imax, np.maximum, commutative=True),
    Op("and", 2, "i", lambda d, a: f"{a[0]} & {a[1]}", np.bitwise_and, commutative=True),
    Op("or", 2, "i", lambda d, a: f"{a[0]} | {a[1]}", np.bitwise_or, commutative=True),
    Op("xor", 2, "i", lambda d, a: f"{a[0]} ^ {a[1]}", np.bitwise_xor, commutative=True),
    Op("absdiff", 2, "i", lambda d, a: f"({a[0]} > {a[1]} ? {a[0]} - {a[1]} : {a[1]} - {a[0]})",
       lambda x, y: np.abs(x - y), commutative=True),
    Op("mad", 3, "i", lambda d, a: f"{a[0]} * {a[1]} + {a[2]}", lambda x, y, z: x * y + z),
    Op("select", 3, "i", lambda d, a: f"({a[0]} > 0 ? {a[1]} : {a[2]})", lambda x, y, z: np.where(x > 0, y, z)),
    Op("clamp", 3, "i", lambda d, a: (f"({a[0]} < {_imin(d, a[1:])} ? {_imin(d, a[1:])} : ({a[0]} > "
                                      f"{_imax(d, a[1:])} ? {_imax(d, a[1:])} : {a[0]}))"),
       lambda x, y, z: np.minimum(np.maximum(x, np.minimum(y, z)), np.maximum(y, z))),
]

_OPS = {("f", o.name): o for o in _FLOAT_OPS} | {("i", o.name): o for o in _INT_OPS}
_LEAVES = "abc"
_FLOAT_INPUT = (-2.0, 2.0)
_INT_INPUT = (-300, 300)
_FLOAT_SCALARS = {"alpha": (-1.5, 1.5), "beta": (-1.0, 1.0)}
_INT_SCALARS = {"alpha": (-3, 3), "beta": (-5, 5)}
_LIMIT = {"f": 1e5, "i": float(1 << 30)}

# Tree: a leaf is an int (input index); a node is (op name, tuple of children).
Tree = int | tuple[str, tuple["Tree", ...]]


def _kind(dtype: str) -> str:
    return "i" if dtype == "int" else "f"


# -- canonical form ------------------------------------------------------------------------------
def _shape(t: Tree) -> str:
    if isinstance(t, int):
        return "L"
    return t[0] + "(" + ",".join(_shape(c) for c in t[1]) + ")"


def _sorted(t: Tree, kind: str) -> Tree:
    if isinstance(t, int):
        return t
    kids = tuple(_sorted(c, kind) for c in t[1])
    if _OPS[(kind, t[0])].commutative:
        kids = tuple(sorted(kids, key=_shape))
    return (t[0], kids)


def _rename(t: Tree, mapping: dict[int, int]) -> Tree:
    if isinstance(t, int):
        if t not in mapping:
            mapping[t] = len(mapping)
        return mapping[t]
    return (t[0], tuple(_rename(c, mapping) for c in t[1]))


def canonical(t: Tree, kind: str) -> Tree:
    """Commutative children sorted by shape, inputs renamed a, b, c by first use: equal computations
    (up to input names and operand order) get equal trees."""
    return _rename(_sorted(t, kind), {})


def _tokens(t: Tree) -> list[str]:
    if isinstance(t, int):
        return [_LEAVES[t]]
    return [t[0]] + [tok for c in t[1] for tok in _tokens(c)]


def _depth(t: Tree) -> int:
    return 0 if isinstance(t, int) else 1 + max(_depth(c) for c in t[1])


def _inputs(t: Tree) -> int:
    return 1 + max(_tokens_leaves(t))


def _tokens_leaves(t: Tree) -> list[int]:
    return [t] if isinstance(t, int) else [x for c in t[1] for x in _tokens_leaves(c)]


def _nodes(t: Tree) -> list[tuple[str, tuple[Tree, ...]]]:
    return [] if isinstance(t, int) else [n for c in t[1] for n in _nodes(c)] + [t]


# -- range analysis ------------------------------------------------------------------------------
def _grid(lo: float, hi: float, k: int, integer: bool) -> np.ndarray:
    pts = np.linspace(lo, hi, k)
    if lo < 0 < hi:
        pts = np.append(pts, 0.0)
    if integer:
        pts = np.unique(np.round(pts)).astype(np.int64)
    return pts


def _interval(op: Op, ranges: list[tuple[float, float]], integer: bool) -> tuple[float, float]:
    """Bound of ``op`` over the box ``ranges``: sampled on a grid that contains the corners (exact for
    the monotone-per-piece ops here); bitwise ops get the enclosing power-of-two range."""
    if integer and op.name in ("and", "or", "xor", "not"):
        m = max(max(abs(lo), abs(hi)) for lo, hi in ranges)
        bound = float(1 << int(m + 1).bit_length())
        return (-bound, bound)
    k = {1: 401, 2: 41, 3: 13}[op.arity]
    axes = [_grid(lo, hi, k, integer) for lo, hi in ranges]
    mesh = np.meshgrid(*axes, indexing="ij")
    with np.errstate(all="ignore"):
        vals = np.asarray(op.npf(*[m.astype(np.float64) for m in mesh]), dtype=np.float64)
    if not np.all(np.isfinite(vals)):
        return (-np.inf, np.inf)
    lo, hi = float(vals.min()), float(vals.max())
    if not integer:  # sampling can miss an interior extremum by a little: widen slightly
        pad = 0.02 * (hi - lo) + 1e-6
        lo, hi = lo - pad, hi + pad
    return (lo, hi)


def value_range(t: Tree, kind: str) -> tuple[float, float] | None:
    """Interval of every node; ``None`` when some node leaves the safe range or an op gets an
    argument outside the range where it is well conditioned."""
    integer = kind == "i"
    if isinstance(t, int):
        return _INT_INPUT if integer else _FLOAT_INPUT
    op = _OPS[(kind, t[0])]
    kids = []
    for pos, c in enumerate(t[1]):
        if pos in op.leaf_args and not isinstance(c, int):
            return None
        r = value_range(c, kind)
        if r is None or max(abs(r[0]), abs(r[1])) > op.max_arg:
            return None
        kids.append(r)
    lo, hi = _interval(op, kids, integer)
    if not (np.isfinite(lo) and np.isfinite(hi)) or max(abs(lo), abs(hi)) > _LIMIT[kind]:
        return None
    return (lo, hi)


def _wrapped_ok(r: tuple[float, float], wrapper: str, kind: str) -> bool:
    scal = _INT_SCALARS if kind == "i" else _FLOAT_SCALARS
    m = max(abs(r[0]), abs(r[1]))
    if wrapper != "none":
        m *= max(abs(v) for v in scal["alpha"])
    if wrapper == "affine":
        m += max(abs(v) for v in scal["beta"])
    return m <= _LIMIT[kind]


# -- tree enumeration ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    dtype: str
    tree: Tree
    wrapper: str  # none | scale | affine
    inplace: bool

    @property
    def key(self) -> str:
        return "_".join(_tokens(self.tree))

    @property
    def task_id(self) -> str:
        suffix = {"none": "", "scale": "_sc", "affine": "_af"}[self.wrapper] + ("_ip" if self.inplace else "")
        return f"ew_{DTYPES[self.dtype].tag}_{self.key}{suffix}"


def _ops_for(kind: str, arity: int | None = None) -> list[Op]:
    ops = _INT_OPS if kind == "i" else _FLOAT_OPS
    return [o for o in ops if arity is None or o.arity == arity]


def _random_tree(rng: random.Random, kind: str, depth: int) -> Tree:
    """A tree of exactly ``depth`` op levels; leaves are placeholders renamed later."""
    if depth == 0:
        return 0
    ops = [o for o in _ops_for(kind) if depth == 1 or o.arity > len(o.leaf_args)]
    op = rng.choice(ops)
    free = [pos for pos in range(op.arity) if pos not in op.leaf_args]
    deep = rng.choice(free) if free else -1
    kids: list[Tree] = []
    for pos in range(op.arity):
        if pos in op.leaf_args:
            kids.append(0)
        elif pos == deep:
            kids.append(_random_tree(rng, kind, depth - 1))
        else:
            kids.append(_random_tree(rng, kind, rng.randrange(depth)))
    return (op.name, tuple(kids))


def _assign_leaves(rng: random.Random, t: Tree, used: list[int]) -> Tree:
    if isinstance(t, int):
        if not used or (len(used) < 3 and rng.random() < 0.7):
            used.append(len(used))
            return used[-1]
        return rng.choice(used)
    return (t[0], tuple(_assign_leaves(rng, c, used) for c in t[1]))


def _trivial(t: Tree) -> bool:
    """Compositions a model would simplify away (neg(neg x), abs(abs x), f(x, x) for sub/xor/...)."""
    if isinstance(t, int):
        return False
    name, kids = t
    if len(kids) == 1 and not isinstance(kids[0], int) and kids[0][0] == name:
        return True
    if len(kids) == 1 and name == "abs" and not isinstance(kids[0], int) and kids[0][0] in ("abs", "neg", "square"):
        return True
    if len(kids) >= 2 and kids[0] == kids[1]:
        return True
    return any(_trivial(c) for c in kids)


def _depth1(kind: str) -> Iterator[Tree]:
    for op in _ops_for(kind):
        yield (op.name, tuple(range(op.arity)))


def variants(seed: int) -> list[Variant]:
    """Every variant for ``seed``: depth 1 exhaustively (plain, in-place, scaled/affine), deeper trees
    drawn until each (dtype, depth) quota is met."""
    out: list[Variant] = []
    seen: set[str] = set()

    def add(v: Variant) -> bool:
        kind = _kind(v.dtype)
        r = value_range(v.tree, kind)
        if r is None or not _wrapped_ok(r, v.wrapper, kind) or _trivial(v.tree) or v.task_id in seen:
            return False
        seen.add(v.task_id)
        out.append(v)
        return True

    for dtype in ("float", "double", "int"):
        kind = _kind(dtype)
        for tree in _depth1(kind):
            arity = _OPS[(kind, tree[0])].arity
            add(Variant(dtype, tree, "none", False))
            add(Variant(dtype, tree, "none", True))
            add(Variant(dtype, tree, "affine" if arity == 1 else "scale", False))
    quotas = {("float", 2): 260, ("double", 2): 230, ("int", 2): 90,
              ("float", 3): 130, ("double", 3): 110, ("int", 3): 45}
    rng = random.Random(seed)
    for (dtype, depth), quota in quotas.items():
        kind = _kind(dtype)
        got = attempts = 0
        while got < quota and attempts < quota * 200:
            attempts += 1
            tree = canonical(_assign_leaves(rng, _random_tree(rng, kind, depth), []), kind)
            if _depth(tree) != depth:
                continue
            roll = rng.random()
            wrapper = "scale" if roll < 0.15 else "affine" if roll < 0.3 else "none"
            got += add(Variant(dtype, tree, wrapper, rng.random() < 0.2))
    return out


# -- code ----------------------------------------------------------------------------------------
def _body(v: Variant) -> tuple[list[str], int, bool]:
    """SSA lines of the per-element computation (``xa``/``xb``/``xc`` are the inputs), op count, and
    whether a transcendental function is involved."""
    kind = _kind(v.dtype)
    d = DTYPES[v.dtype]
    lines: list[str] = []
    transc = False

    def walk(t: Tree) -> str:
        nonlocal transc
        if isinstance(t, int):
            return "x" + _LEAVES[t]
        op = _OPS[(kind, t[0])]
        transc |= op.transc
        names = [walk(c) for c in t[1]]
        name = f"t{len(lines)}"
        lines.append(f"{d.c} {name} = {op.emit(d, names)};")
        return name

    last = walk(v.tree)
    if v.wrapper == "scale":
        lines.append(f"{d.c} t{len(lines)} = alpha * {last};")
    elif v.wrapper == "affine":
        lines.append(f"{d.c} t{len(lines)} = alpha * {last} + beta;")
    return lines, len(_nodes(v.tree)) + {"none": 0, "scale": 1, "affine": 2}[v.wrapper], transc


def _params(v: Variant) -> tuple[list[P], list[P], P, list[P]]:
    """(inputs, array params in order, the output, scalars)."""
    d = DTYPES[v.dtype]
    k = _inputs(v.tree)
    init = f"uniform({_FLOAT_INPUT[0]:g}, {_FLOAT_INPUT[1]:g})" if d.floating else \
        f"randint({_INT_INPUT[0]}, {_INT_INPUT[1]})"
    ins = [param(_LEAVES[j], d.c, "inout" if (v.inplace and j == 0) else "in", "n", init) for j in range(k)]
    scalars = []
    if v.wrapper in ("scale", "affine"):
        scalars.append(param("alpha", d.c, "scalar"))
    if v.wrapper == "affine":
        scalars.append(param("beta", d.c, "scalar"))
    out = ins[0] if v.inplace else param("out", d.c, "out", "n")
    arrays = ins if v.inplace else [*ins, out]
    return ins, arrays, out, scalars


def _elem_fn(v: Variant, qualifier: str) -> tuple[str, str]:
    """The per-element function (with ``qualifier``) and its call pattern ``{i}``-formatted later."""
    d = DTYPES[v.dtype]
    lines, _, _ = _body(v)
    ins, _, _, scalars = _params(v)
    formals = [f"{d.c} x{p.name}" for p in ins] + [f"{d.c} {s.name}" for s in scalars]
    body = "\n".join("    " + ln for ln in lines)
    last = lines[-1].split(" = ")[0].split()[-1]
    fn = f"{qualifier}{d.c} ew_elem({', '.join(formals)}) {{\n{body}\n    return {last};\n}}\n"
    return fn, ", ".join([f"{p.name}[{{i}}]" for p in ins] + [s.name for s in scalars])


def _reference(v: Variant, params: list[P]) -> str:
    fn, call = _elem_fn(v, "static inline ")
    _, _, out, _ = _params(v)
    return (fn + f"\nvoid reference({signature(params)}) {{\n"
            f"    for (int i = 0; i < n; ++i) {{\n        {out.name}[i] = ew_elem({call.format(i='i')});\n    }}\n}}\n")


def _impls(v: Variant, params: list[P]) -> list:
    d = DTYPES[v.dtype]
    fn, call = _elem_fn(v, "__device__ __forceinline__ ")
    ins, arrays, out, scalars = _params(v)
    sig, sig_r, names = signature(params), signature(params, restrict=True), args(params)
    one = f"{out.name}[{{i}}] = ew_elem({call})"
    naive = fn + f"""
__global__ void ew_naive({sig_r}) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{
        {one.format(i="i")};
    }}
}}

extern "C" void solve({sig}) {{
    const int threads = 256;
    ew_naive<<<(n + threads - 1) / threads, threads>>>({names});
}}
"""
    unrolled = "\n".join(f"        {one.format(i=f'i + {k} * stride' if k else 'i')};" for k in range(4))
    stride = fn + f"""
// Four independent elements per iteration: more loads in flight per thread (ILP) on a fixed grid.
__global__ void ew_stride({sig_r}) {{
    int stride = gridDim.x * blockDim.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {{
{unrolled}
    }}
    for (; i < n; i += stride) {{
        {one.format(i="i")};
    }}
}}

extern "C" void solve({sig}) {{
    const int threads = 256;
    ew_stride<<<ck_grid(n, threads, 8), threads>>>({names});
}}
"""
    comps = "xyzw"[: d.width]
    vloads = "\n".join(f"        {d.vec} v{p.name} = reinterpret_cast<const {d.vec}*>({p.name})[v];" for p in ins)
    vcomp = "\n".join(
        f"        r.{c} = ew_elem({', '.join([f'v{p.name}.{c}' for p in ins] + [s.name for s in scalars])});"
        for c in comps)
    aligned = " && ".join(f"ck_aligned({p.name}, 16)" for p in arrays)
    vec = fn + f"""
// 16-byte vector loads/stores ({d.vec}); the n % {d.width} tail is done element by element.
__global__ void ew_vec({sig_r}) {{
    int nv = n / {d.width};
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    for (int v = tid; v < nv; v += stride) {{
{vloads}
        {d.vec} r;
{vcomp}
        reinterpret_cast<{d.vec}*>({out.name})[v] = r;
    }}
    for (int i = nv * {d.width} + tid; i < n; i += stride) {{
        {one.format(i="i")};
    }}
}}

__global__ void ew_scalar({sig_r}) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{
        {one.format(i="i")};
    }}
}}

extern "C" void solve({sig}) {{
    const int threads = 256;
    if ({aligned}) {{
        ew_vec<<<ck_grid((n + {d.width - 1}) / {d.width}, threads, 8), threads>>>({names});
    }} else {{
        ew_scalar<<<ck_grid(n, threads, 8), threads>>>({names});
    }}
}}
"""
    return [impl("naive", "naive", 1, naive, "one thread per element, 256-thread blocks, bounds-checked"),
            impl("grid_stride", "grid_stride", 2, stride,
                 "grid sized to the SM count, grid-stride loop with 4 independent elements per iteration"),
            impl("vectorized", "vectorized", 3, vec,
                 f"{d.vec} loads/stores in a grid-stride loop, scalar tail, scalar fallback for unaligned pointers")]


def _describe(v: Variant, params: list[P], tolerance: dict[str, float]) -> tuple[str, str]:
    d = DTYPES[v.dtype]
    lines, _, _ = _body(v)
    ins, _, out, scalars = _params(v)
    names = ", ".join(p.name for p in ins)
    title_ops = " ∘ ".join(t for t in _tokens(v.tree) if t not in _LEAVES)
    title = f"Element-wise {title_ops} ({d.c}{', in place' if v.inplace else ''})"
    code = "\n".join("    " + ln for ln in lines)
    last = lines[-1].split(" = ")[0].split()[-1]
    where = (f"the arrays {names} (each of length n)" if len(ins) > 1 else "the array a of length n")
    text = [f"For every i in [0, n), with x{ins[0].name} = {ins[0].name}[i]"
            + "".join(f", x{p.name} = {p.name}[i]" for p in ins[1:])
            + (" and the scalar" + ("s " if len(scalars) > 1 else " ") + " and ".join(s.name for s in scalars)
               if scalars else "")
            + f", compute the following in {d.c} arithmetic (C99 semantics, exactly these expressions) and "
            f"store {last} to {out.name}[i]:", "", code, "",
            f"The inputs are {where}, all of type {d.c}, contiguous and distinct (no aliasing)."]
    if v.inplace:
        text.append("The operation is IN PLACE: a is both an input and the output; a[i] must be read before it "
                    "is overwritten, and there is no separate output array.")
    else:
        text.append(f"The output array {out.name} holds n {d.c} values and is uninitialised on entry.")
    text.append("n >= 1 is arbitrary (not a multiple of any block or vector width), so every element up to n-1 "
                "must be written and nothing past it touched; vectorised code needs a scalar tail and should check "
                "pointer alignment before using 16-byte loads.")
    if d.floating:
        text.append(f"Outputs are compared per element with |got - ref| <= {tolerance['atol']:g} * max|ref| + "
                    f"{tolerance['rtol']:g} * |ref| (library math functions may differ by a few ulps).")
    else:
        text.append("Integer arithmetic never overflows for the generated inputs; results are compared exactly.")
    return title, "\n".join(text)


def build(v: Variant, family_seed: int) -> GeneratedTask:
    d = DTYPES[v.dtype]
    _, arrays, _, scalars = _params(v)
    params = [*arrays, *scalars, param("n", "int", "scalar")]
    _, flops, transc = _body(v)
    tolerance = tol_for(d, "transc" if transc else "arith")
    title, description = _describe(v, params, tolerance)
    nin = _inputs(v.tree)
    cfg_scalars = [{}, {}]
    if scalars:
        vals = ({"alpha": 0.75, "beta": -0.5}, {"alpha": -1.25, "beta": 0.25}) if d.floating else \
            ({"alpha": 3, "beta": -5}, {"alpha": -2, "beta": 4})
        cfg_scalars = [{s.name: val[s.name] for s in scalars} for val in vals]
    configs = [{"name": "small", "n": 1001, **cfg_scalars[0]},
               {"name": "large", "n": (1 << 16) + 3, **cfg_scalars[1]}]
    # H100-scale size the speed is judged at (estimated only): 16M elements, 64-256 MB of traffic
    timing = [{"n": (1 << 24) + 3, **cfg_scalars[1]}]
    return make_task(
        family=FAMILY, family_seed=family_seed, task_id=v.task_id, category="elementwise", title=title,
        description=description, reference=_reference(v, params), impls=_impls(v, params), params=params,
        configs=configs, metrics={"flops": f"{flops} * n", "bytes": f"{d.size * (nin + 1)} * n"},
        tolerance=tolerance, timing=timing,
        variant={"dtype": v.dtype, "expr": v.key, "depth": _depth(v.tree), "inputs": nin, "wrapper": v.wrapper,
                 "inplace": v.inplace},
        tags=["elementwise", "memory-bound"] + (["transcendental"] if transc else []))


@family(FAMILY, kind="c2cuda", category="elementwise")
def generate(seed: int) -> Iterator[GeneratedTask]:
    """Element-wise compositions (depth 1–3, 1–3 inputs, float/double/int, in-place and scalar variants)."""
    for v in variants(seed):
        yield build(v, seed)
