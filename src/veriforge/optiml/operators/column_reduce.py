"""The ``column_reduce`` operator: a thread-per-column reduction over the rows of a row-major matrix
becomes a 2-D block whose row groups share each column's loop, combined in shared memory.

Why: the naive column kernel (column sums, ``y = Aᵀx``, column max/min/mean) gives one thread one column
and walks all M rows serially. Its loads coalesce (lanes take neighbouring columns) but there are only
N threads, each with a serial chain of M dependent adds: with a few hundred or thousand columns most of
the GPU idles, and each warp has one load in flight per step. The fix is a 2-D block: threads along x
cover consecutive columns (still coalesced), threads along y take every ROWS-th row of those columns,
and the y partials of a column are combined through shared memory by one thread, which then runs the
original epilogue (the store, a division by M for a mean). ``tune`` cannot reach this by changing
numbers, and :mod:`.rows` handles only the row direction.

Recognised shape (anything else yields no edit):

* one ``__global__`` kernel with exactly one launch site; no ``__shared__``, barriers, warp intrinsics,
  atomics, ``gridDim``, ``__launch_bounds__``, and nothing the statement parser refuses;
* a prologue of immutable affine ``int`` locals (:func:`._coords.read_shape`) with the coordinate
  ``col = blockIdx.x * blockDim.x + threadIdx.x`` and no other builtin anywhere in the kernel;
* a guard ``if (col < N) { ... }`` or ``if (col >= N) return; ...`` (``N`` an ``int`` parameter);
* guarded: declarations, then exactly one ``for`` loop, then any statements without a loop (the
  epilogue). Each declaration before the loop is either never modified (copied, so its initialiser must
  be side-effect free and may not read an accumulator) or an *accumulator*: a ``float``/``double``/
  integer scalar with an initialiser, modified by exactly one statement, in the loop;
* the loop is ``for (int r = S; r < E; ++r)`` (``<=``, ``r++``, ``r += 1`` too) with ``r`` changed only
  by the step and ``S``, ``E`` side-effect free; its body is side-effect-free declarations (no
  accumulator read) followed by one update per accumulator: ``s += e``, ``s = s + e``, ``s = e + s``
  (sum) or ``s = f(s, e)`` / ``f(e, s)`` with ``f`` one of ``fmaxf fmax max`` (max) / ``fminf fmin min``
  (min), where ``e`` reads no accumulator, calls only pure math functions (and ``__ldg``), and writes
  nothing; an integer sum's ``e`` has only integer operands (no float literal, cast or call, every
  pointer it reads holds integers), so every partial sum is exact;
* some read in the loop walks a column: ``P[idx]`` with ``idx`` affine, coefficient 1 on ``col`` and a
  non-zero coefficient on ``r`` (``a[r * N + col]``) — row walks (``a[col * M + r]``) are left alone;
* the loop writes no memory; the pointers the epilogue writes are not read before it and are passed
  at the launch as plain identifiers different from every pointer that is read (no aliasing).

The edit: ``#define COLS_X 32`` and ``#define ROWS_Y 8`` (tunables; correct for any values with
COLS_X * ROWS_Y <= 1024), the launch becomes ``<<<dim3((N + COLS_X - 1) / COLS_X), dim3(COLS_X,
ROWS_Y)>>>`` (``N``: the launch's argument for the guard's extent), ``col = blockIdx.x * COLS_X +
threadIdx.x``, and the body becomes: the prologue, each accumulator declared with its type and a
start value, then under the guard the pre-loop declarations in order (an accumulator gets its start:
``0`` for a sum, its original initialiser for max/min) and the loop with ``r = S + threadIdx.y`` and
step ``ROWS_Y``; every thread stores its partials in ``__shared__ T part[ROWS_Y][COLS_X]``,
``__syncthreads()``, and the thread with ``threadIdx.y == 0`` of each in-range column folds the other
``ROWS_Y - 1`` partials in order (``+`` for a sum, ``f`` for max/min), re-declares the unmodified
pre-loop locals, adds the original initialiser to a sum when it is not the literal 0, and runs the
epilogue verbatim.

Why it is correct: the row groups ``r ≡ S + t (mod ROWS_Y)``, ``t = 0..ROWS_Y-1``, partition exactly the
original iterations (same bounds, same body, same ``r``), and no iteration writes memory, so they may
run in any order on any thread. A sum of integers is exact in any order (wrap-around addition is
associative and commutative); a floating-point sum changes only its rounding order, which the
verifier's floating-point tolerance admits (the same policy as :mod:`.rows` and :mod:`.aggregate`;
bundled tasks document "any summation order is accepted within the tolerance"); max and min are
associative, commutative and idempotent, so starting every row group from the original initialiser
gives the original result. Each column's epilogue runs once, by one thread, with the same values of
the locals it reads (unmodified pre-loop declarations are recomputed from the same operands, which
nothing has written) and the reduced accumulators. The guard is evaluated without returning, so every
thread reaches the barrier; partials of out-of-range columns are stored and never used. A split-K
variant with atomics is left out: it needs the output cleared before the launch and an epilogue that
is itself a sum (a mean's division or a max's store does not distribute over atomics).

Motivated by small-grid, occupancy and memory-bound findings (prior 2 + severities).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veriforge.optiml.kernel_reader import Node, Poly, Stmt, is_int_type, walk_nodes, walk_stmts
from veriforge.optiml.operators import _coords as coords
from veriforge.optiml.operators.registry import EditProposal, operator
from veriforge.optiml.operators.rows import _MAX_FUNCS, _PURE_FUNCS
from veriforge.optiml.source_scan import Function, SourceScan, scan
from veriforge.optiml.source_tokens import Refuse, fresh_name

__all__ = ["column_reduce_edits"]

OPERATOR = "column_reduce"
DEFAULT_COLS = 32
DEFAULT_ROWS = 8
_MOTIVES = {"small_grid", "low_occupancy", "memory_bound", "low_dram_throughput", "partial_warp"}
_FORBIDDEN = re.compile(r"\b(__shared__|__syncthreads|__shfl\w*|__syncwarp|atomic\w+|gridDim|__launch_bounds__)\b")
_FLOATS = {"float", "double"}
_INTS = {"int", "unsigned", "unsigned int", "long", "long long", "unsigned long long", "int32_t", "uint32_t",
         "int64_t", "uint64_t"}
_IND = "    "


@dataclass
class _Acc:
    name: str
    ctype: str
    kind: str  # sum | max | min
    func: str  # combining function for max/min
    init: Node
    operand: Node | None = None  # e of the update


@dataclass
class _Plan:
    shape: coords.Shape
    pre: list[Stmt]  # the guarded declarations before the loop
    accs: list[_Acc]
    loop: Stmt
    var: str
    post: list[Stmt]
    reads: set[str]  # pointers read before the epilogue
    written: set[str]  # pointers the epilogue writes


def _ctype(t: str) -> str | None:
    words = " ".join(w for w in t.split() if w not in ("const", "__restrict__"))
    return words if words in _FLOATS or words in _INTS else None


def _is(node: Node | None, kind: str, value: Any = None) -> bool:
    return node is not None and node.kind == kind and (value is None or node.value == value)


def _reduction(e: Node | None, accs: dict[str, _Acc]) -> tuple[str, str, str, Node] | None:
    """(accumulator, kind, combining function, operand) of an update statement's expression."""
    if e is None or e.kind != "assign" or not _is(e.kids[0], "id") or e.kids[0].value not in accs:
        return None
    name, rhs = e.kids[0].value, e.kids[1]
    if e.op == "+=":
        return name, "sum", "+", rhs
    if e.op != "=":
        return None
    if rhs.kind == "bin" and rhs.op == "+":
        a, b = rhs.kids
        if _is(a, "id", name):
            return name, "sum", "+", b
        if _is(b, "id", name):
            return name, "sum", "+", a
    if rhs.kind == "call" and _is(rhs.kids[0], "id") and rhs.kids[0].value in _MAX_FUNCS and len(rhs.kids) == 3:
        f, a, b = rhs.kids
        kind = _MAX_FUNCS[f.value]
        if _is(a, "id", name):
            return name, kind, f.value, b
        if _is(b, "id", name):
            return name, kind, f.value, a
    return None


def _int_only(e: Node, int_names: set[str], int_pointers: set[str]) -> bool:
    """Every operand of ``e`` an integer: ints, integer arrays, integer literals; no casts or calls."""
    for n in walk_nodes(e):
        if n.kind in ("cast", "call") or (n.kind == "num" and not isinstance(n.value, int)):
            return False
        if n.kind == "index" and not (_is(n.kids[0], "id") and n.kids[0].value in int_pointers):
            return False
        if n.kind == "id" and n.value not in int_names and n.value not in int_pointers:
            return False
    return True


def _plan(sc: SourceScan, fn: Function) -> _Plan:
    shape = coords.read_shape(sc, fn, "x")
    an = shape.an
    (col,) = shape.coords
    inner = shape.inner
    loops = [i for i, s in enumerate(inner) if s.kind == "for"]
    if len(loops) != 1:
        raise Refuse("not one loop")
    k = loops[0]
    pre, loop, post = inner[:k], inner[k], inner[k + 1:]
    if any(s.kind != "decl" or len(s.names) != 1 for s in pre):
        raise Refuse("pre-loop statements other than single declarations")
    if any(x.kind == "for" for s in post for x in walk_stmts(s)):
        raise Refuse("loop in the epilogue")
    coord_decls = [s for s in shape.prologue if not any(s is o for o in shape.others)]
    for stmt in an.body:
        for s in walk_stmts(stmt):
            if any(s is c for c in coord_decls):
                continue
            for ex in [*s.exprs, *(init for _, init in s.names)]:
                if any(n.kind == "member" for n in walk_nodes(ex)):
                    raise Refuse("builtin outside the coordinate")
    accs: dict[str, _Acc] = {}
    for s in pre:
        name, init = s.names[0]
        if an._decls.get(name) != 1 or init is None:
            raise Refuse("redeclared or uninitialised")
        mutated = an._mutated.get(name, 0)
        if mutated == 1:
            ctype = _ctype(s.type)
            if ctype is None:
                raise Refuse("accumulator type")
            accs[name] = _Acc(name, ctype, "", "", init)
        elif mutated:
            raise Refuse("local modified more than once")
    pure = frozenset(_PURE_FUNCS)
    for s in pre:
        init = s.names[0][1]
        if not coords.side_effect_free(init, pure) or any(n.value in accs for n in walk_nodes(init) if n.kind == "id"):
            raise Refuse("pre-loop initialiser")
    # the loop header
    if len(loop.kids) != 2 or loop.kids[1].kind != "decl" or not is_int_type(loop.kids[1].type) \
            or len(loop.kids[1].names) != 1:
        raise Refuse("loop header")
    var, start = loop.kids[1].names[0]
    cond, step = loop.exprs
    if start is None or an._decls.get(var) != 1 or an._mutated.get(var) != 1:
        raise Refuse("loop variable")
    if cond is None or cond.kind != "bin" or cond.op not in ("<", "<=") or not _is(cond.kids[0], "id", var):
        raise Refuse("loop bound")
    unit = step is not None and (
        (step.kind in ("unary", "post") and step.op == "++" and _is(step.kids[0], "id", var))
        or (step.kind == "assign" and step.op == "+=" and _is(step.kids[0], "id", var) and _is(step.kids[1], "num", 1)))
    if not unit:
        raise Refuse("loop step")
    for e in (start, cond.kids[1]):
        if not coords.side_effect_free(e, pure) or any(n.value in accs or n.value == var
                                                     for n in walk_nodes(e) if n.kind == "id"):
            raise Refuse("loop bounds")
    # the loop body: declarations, then one update per accumulator
    items = coords.block_items(loop.kids[0])
    updated: set[str] = set()
    operands: list[Node] = []
    for s in items:
        if s.kind == "decl" and not updated:
            for name, init in s.names:
                if init is None or an._mutated.get(name) or not coords.side_effect_free(init, pure) \
                        or any(n.value in accs for n in walk_nodes(init) if n.kind == "id"):
                    raise Refuse("loop-body declaration")
                operands.append(init)
            continue
        red = _reduction(s.exprs[0] if s.kind == "expr" else None, accs)
        if red is None or red[0] in updated:
            raise Refuse("loop statement is not a recognised reduction")
        name, kind, func, operand = red
        if not coords.side_effect_free(operand, pure) or any(
                n.value in accs for n in walk_nodes(operand) if n.kind == "id"):
            raise Refuse("reduction operand")
        acc = accs[name]
        acc.kind, acc.func, acc.operand = kind, func, operand
        updated.add(name)
        operands.append(operand)
    if updated != set(accs) or not accs:
        raise Refuse("accumulators")
    # integer sums must stay integer all the way
    ptypes = {n: t for t, n in an.params}
    int_pointers = {n for n, t in ptypes.items() if t.count("*") == 1
                    and _ctype(t.replace("*", "")) in _INTS}
    int_names = set(an.int_params) | set(shape.coords) | {var} | {
        n for s in [*shape.others, *pre, *items] if s.kind == "decl" and is_int_type(s.type) for n, _ in s.names}
    for acc in accs.values():
        if acc.kind == "sum" and acc.ctype in _INTS and not _int_only(acc.operand, int_names, int_pointers):
            raise Refuse("integer sum of non-integer terms")
    # memory: a column walk among the loop's reads; writes only in the epilogue
    env = dict(shape.env)
    env[var] = Poly.sym(var)
    for s in pre:
        if is_int_type(s.type) and s.names[0][0] not in accs:
            p = an.poly(s.names[0][1], env)  # type: ignore[arg-type]
            if p is not None:
                env[s.names[0][0]] = p
    walk = False
    for o in operands:
        for n in walk_nodes(o):
            if n.kind == "index" and _is(n.kids[0], "id") and n.kids[0].value in an.pointers:
                p = an.poly(n.kids[1], env)
                split = None if p is None else p.split_by(var)
                if split is not None and split[0].terms:
                    by_col = split[1].split_by(col)
                    walk = walk or (by_col is not None and by_col[0] == Poly.const(1)
                                    and not (split[0].symbols() & {col}))
    if not walk:
        raise Refuse("no column walk")
    reads = {n.kids[0].value for s in [*shape.prologue, *pre, loop] for e in _exprs(s) for n in walk_nodes(e)
             if n.kind == "index" and _is(n.kids[0], "id")}
    written: set[str] = set()
    for s in post:
        for e in _exprs(s):
            for n in walk_nodes(e):
                if n.kind == "assign" or (n.kind in ("unary", "post") and n.op in ("++", "--")):
                    t = n.kids[0]
                    if t.kind == "index" and _is(t.kids[0], "id"):
                        written.add(t.kids[0].value)
                    elif t.kind != "id" or t.value in ptypes:
                        raise Refuse("epilogue write")
    for pointer in an.pointers:  # pointers appear only subscripted
        ids = sum(1 for n in coords.names_in(an.body) if n.value == pointer)
        subs = sum(1 for s in an.body for e in _exprs(s) for n in walk_nodes(e)
                   if n.kind == "index" and _is(n.kids[0], "id", pointer))
        if ids != subs:
            raise Refuse("pointer used otherwise than subscripted")
    if written & reads or not written:
        raise Refuse("epilogue writes what is read")
    return _Plan(shape, pre, list(accs.values()), loop, var, post, reads, written)


def _exprs(stmt: Stmt) -> list[Node]:
    return [e for s in walk_stmts(stmt) for e in [*s.exprs, *(init for _, init in s.names)] if e is not None]


def _zero(ctype: str) -> str:
    return {"float": "0.0f", "double": "0.0"}.get(ctype, f"({ctype})0")


def _render(sc: SourceScan, plan: _Plan, names: dict[str, str], taken: set[str]) -> str:
    src = sc.source
    (col,) = plan.shape.coords
    cx, ry = names["COLS_X"], names["ROWS_Y"]
    ind2, ind3 = _IND * 2, _IND * 3
    text = lambda s: src[s.start:s.end].strip()  # noqa: E731
    part = {a.name: fresh_name(src, f"{a.name}_part", taken) for a in plan.accs}
    lines = [f"{_IND}__shared__ {a.ctype} {part[a.name]}[{ry}][{cx}];" for a in plan.accs]
    lines.append(f"{_IND}const int {col} = (int)blockIdx.x * {cx} + (int)threadIdx.x;")
    lines += [f"{_IND}{text(s)}" for s in plan.shape.others]
    lines += [f"{_IND}{a.ctype} {a.name} = {_zero(a.ctype)};" for a in plan.accs]
    lines.append(f"{_IND}if ({plan.shape.guard}) {{")
    accs = {a.name: a for a in plan.accs}
    for s in plan.pre:
        name, init = s.names[0]
        if name in accs:
            start = _zero(accs[name].ctype) if accs[name].kind == "sum" else src[init.start:init.end]  # type: ignore[union-attr]
            lines.append(f"{ind2}{name} = {start};")
        else:
            lines.append(f"{ind2}{text(s)}")
    loop = plan.loop
    header_init = loop.kids[1]
    start = header_init.names[0][1]
    cond = loop.exprs[0]
    assert start is not None and cond is not None
    body = loop.kids[0]
    lines.append(f"{ind2}for (int {plan.var} = ({src[start.start:start.end]}) + (int)threadIdx.y; "
                 f"{src[cond.start:cond.end]}; {plan.var} += {ry})")
    lines.append(f"{ind3}{text(body)}" if body.kind != "block" else f"{ind2}{text(body)}")
    lines.append(f"{_IND}}}")
    lines += [f"{_IND}{part[a.name]}[threadIdx.y][threadIdx.x] = {a.name};" for a in plan.accs]
    lines.append(f"{_IND}__syncthreads();")
    lines.append(f"{_IND}if (threadIdx.y == 0 && ({plan.shape.guard})) {{")
    lvar = names["l"]
    lines.append(f"{ind2}for (int {lvar} = 1; {lvar} < {ry}; ++{lvar}) {{")
    for a in plan.accs:
        other = f"{part[a.name]}[{lvar}][threadIdx.x]"
        comb = f"{a.name} + {other}" if a.kind == "sum" else f"{a.func}({a.name}, {other})"
        lines.append(f"{ind3}{a.name} = {comb};")
    lines.append(f"{ind2}}}")
    for s in plan.pre:
        name, init = s.names[0]
        if name not in accs:
            lines.append(f"{ind2}{text(s)}")
        elif accs[name].kind == "sum" and not (init.kind == "num" and init.value == 0):  # type: ignore[union-attr]
            lines.append(f"{ind2}{name} = ({src[init.start:init.end]}) + {name};")  # type: ignore[union-attr]
    lines += [f"{ind2}{text(s)}" for s in plan.post]
    lines.append(f"{_IND}}}")
    return "\n" + "\n".join(lines) + "\n"


def _edit(sc: SourceScan, fn: Function, findings: Sequence[Any]) -> EditProposal | None:
    found = coords.planned(sc, fn, _plan)
    if found is None:
        return None
    launch, plan, args = found
    pointer_args = [args[p] for p in plan.reads | plan.written]
    if not all(re.fullmatch(r"[A-Za-z_]\w*", a) for a in pointer_args) \
            or {args[p] for p in plan.reads} & {args[p] for p in plan.written}:
        return None  # a written buffer may alias one that is read
    source = sc.source
    taken: set[str] = set()
    names = {n: fresh_name(source, n, taken) for n in ("COLS_X", "ROWS_Y", "l")}
    body = _render(sc, plan, names, taken)
    cx, ry = names["COLS_X"], names["ROWS_Y"]
    n_arg = args[plan.shape.ext["x"]]
    new = coords.relaunch(sc, (fn.body_start, fn.body_end, body), launch, f"dim3(({n_arg} + {cx} - 1) / {cx})",
                          f"dim3({cx}, {ry})", {cx: DEFAULT_COLS, ry: DEFAULT_ROWS})
    if new is None:
        return None
    motive, prior = coords.motivated(findings, _MOTIVES)
    kinds = ", ".join(f"{a.name}: {a.kind}" for a in plan.accs)
    desc = (f"split {fn.name}'s column loop over {ry} row groups per {cx} columns, "
            f"partials combined in shared memory ({kinds})")
    return EditProposal(OPERATOR, new, desc,
                        {"kernel": fn.name, "accumulators": {a.name: a.kind for a in plan.accs},
                         "cols": cx, "rows": ry, "findings": motive}, prior)


@operator(OPERATOR, order=122, motives=_MOTIVES, restructuring=True)
def column_reduce_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Split each recognised thread-per-column reduction over row groups of a 2-D block (see the module docstring)."""
    sc = scan(source)
    if _FORBIDDEN.search(sc.text):
        return []
    return [edit for fn in sc.kernels() if (edit := _edit(sc, fn, findings)) is not None]
