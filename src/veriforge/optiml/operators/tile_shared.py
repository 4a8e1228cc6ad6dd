"""The ``tile_shared`` operator: shared-memory tiling of a 2-D inner-product loop (naive matmul).

Why: in a naive matmul every thread walks one row of ``A`` and one column of ``B`` in global memory, so
each element is fetched once per thread that uses it (N resp. M times), and one operand is often read
with a stride across the warp (uncoalesced). Classic TILE x TILE tiling makes the block load one tile of
each operand per K step cooperatively (one element per thread, coalesced), and the inner product runs
from shared memory: every global element is read once per block instead of once per thread.

Recognised shape (anything else yields no edit):

* one ``__global__`` kernel with exactly one launch site; no ``__shared__``, barriers, warp intrinsics,
  ``while``/``switch`` (the statement parser of :mod:`~veriforge.optiml.kernel_reader` refuses them);
* top-level ``int`` locals first, among them two thread coordinates ``row = blockIdx.y * blockDim.y +
  threadIdx.y`` and ``col = blockIdx.x * blockDim.x + threadIdx.x`` (any names, any order), all immutable;
* a guard on both coordinates against plain ``int`` parameters: ``if (row < M && col < N) { ... }`` or
  ``if (row >= M || col >= N) return;`` followed by the rest of the body;
* inside: ``float acc = <literal>;``, then the only loop ``for (int k = 0; k < K; ++k) acc += X[i] * Y[j];``
  (``K`` a plain ``int`` parameter), then any statements (the store), which contain no loop;
* ``X``/``Y`` are ``float`` pointer parameters named nowhere but in the product (so never written,
  cast or aliased), and each index is affine ``a * s + b * k + c`` (resolved through immutable int
  locals and ``#define`` constants by :class:`~veriforge.optiml.kernel_reader.Analyzer`) where ``s``
  is exactly one of the two coordinates, ``a``, ``b``, ``c`` involve only int parameters/constants,
  and ``b == 1`` ("sk": ``A[row * K + k]``) or ``a == 1`` ("ks": ``B[k * N + col]``).

The edit: ``#define TILE 16`` (tunable: correct for any TILE with TILE * TILE <= 1024), the launch becomes
``<<<dim3((N + TILE - 1) / TILE, (M + TILE - 1) / TILE), dim3(TILE, TILE)>>>`` with the launch's own
argument expressions for the guard's extents, and the kernel becomes: the int locals (unchanged), the
shared tiles, ``acc``, a loop over K in steps of TILE in which each thread loads one element of each
tile (0 outside ``[0, extent) x [0, K)``), ``__syncthreads()``, ``for kk < TILE`` accumulates from
shared memory, ``__syncthreads()``; then the original post-loop statements under the original guard.
"sk" operands load ``tile[ty][tx] = X[a * (base + ty) + b * (t + tx) + c]`` (k along the warp:
coalesced) and are read ``tile[s_local][kk]``; "ks" operands load ``tile[ty][tx] = X[a * (base + tx) +
b * (t + ty) + c]`` and are read ``tile[kk][s_local]``. A tile read ``tile[threadIdx.x][kk]`` is padded
to ``[TILE][TILE + 1]`` so the warp's reads hit distinct banks.

Why it is correct: with ``blockDim == (TILE, TILE)`` the coordinates are ``blockIdx * TILE + threadIdx``,
so the tile entry a thread reads at ``(t, kk)`` is exactly ``X[i]`` with ``k = t + kk`` whenever the
thread is in range and ``k < K``; out-of-range entries are 0 on *both* operands' ``k`` side, so each
extra term adds ``0 * 0``; the sum runs over the same ``k`` in the same order. Loads happen only at
indices the original reads (coordinate below its extent, ``0 <= k < K``). The guard is only moved
below the loop (no return before the barriers), and the locals it and the store use are immutable and
still declared; ``acc`` starts from a literal, so computing it for out-of-range threads is harmless.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veriforge.optiml.kernel_reader import Analyzer, Node, Poly, Stmt, gcoord, is_int_type, walk_nodes, walk_stmts
from veriforge.optiml.operators._coords import (
    block_items,
    launch_arguments,
    motivated,
    plain_value,
    read_guard,
    relaunch,
    single_launch,
)
from veriforge.optiml.operators.registry import EditProposal, operator
from veriforge.optiml.source_scan import Function, SourceScan, scan
from veriforge.optiml.source_tokens import Refuse, fresh_name

__all__ = ["tile_shared_edits"]

OPERATOR = "tile_shared"
DEFAULT_TILE = 16
_MOTIVES = {"memory_bound", "uncoalesced_load", "low_dram_throughput", "compute_bound"}
_INDENT = "    "


@dataclass
class _Operand:
    name: str  # the pointer parameter
    axis: str  # "x" or "y": which thread coordinate the index depends on
    layout: str  # "sk" (k unit stride) or "ks" (coordinate unit stride)
    a: Poly  # coefficient of the coordinate
    b: Poly  # coefficient of k
    c: Poly  # the rest


def _words(t: str) -> list[str]:
    return [w for w in t.replace("*", " * ").split() if w not in ("const", "__restrict__", "volatile")]


def _float_pointer(t: str) -> bool:
    return _words(t) == ["float", "*"]


def _param_poly(p: Poly, int_params: set[str]) -> bool:
    return p.symbols() <= int_params


def _paren(p: Poly) -> str:
    text = p.render()
    return text if re.fullmatch(r"-?\w+", text) else f"({text})"


def _affine_text(op: _Operand, coord: str, kexpr: str) -> str:
    parts = []
    for coef, expr in ((op.a, coord), (op.b, kexpr)):
        parts.append(f"({expr})" if coef == Poly.const(1) else f"{_paren(coef)} * ({expr})")
    if op.c.terms:
        parts.append(_paren(op.c))
    return " + ".join(parts)


def _operand(an: Analyzer, node: Node, env: dict[str, Poly], coords: dict[str, str], k: str) -> _Operand:
    if node.kind != "index" or node.kids[0].kind != "id":
        raise Refuse("operand is not X[...]")
    name = node.kids[0].value
    ptype = dict((n, t) for t, n in an.params).get(name)
    if ptype is None or not _float_pointer(ptype):
        raise Refuse("operand is not a float pointer parameter")
    p = an.poly(node.kids[1], {**env, k: Poly.sym(k)})
    if p is None:
        raise Refuse("index not affine")
    used = [c for c in coords if c in p.symbols()]
    if len(used) != 1:
        raise Refuse("operand must depend on exactly one coordinate")
    s = used[0]
    split_k = p.split_by(k)
    if split_k is None:
        raise Refuse("k squared")
    b, r = split_k
    split_s = r.split_by(s)
    if split_s is None:
        raise Refuse("coordinate squared")
    a, c = split_s
    for part in (a, b, c):
        if not _param_poly(part, an.int_params):
            raise Refuse("index mixes coordinates")
    if not a.terms or not b.terms:
        raise Refuse("index misses the coordinate or k")
    if b == Poly.const(1):
        layout = "sk"
    elif a == Poly.const(1):
        layout = "ks"
    else:
        raise Refuse("no unit stride")
    return _Operand(name, coords[s], layout, a, b, c)


def _id_count(stmts: list[Stmt], name: str) -> int:
    count = 0
    for stmt in stmts:
        for s in walk_stmts(stmt):
            for e in [*s.exprs, *(init for _, init in s.names)]:
                count += sum(1 for n in walk_nodes(e) if n.kind == "id" and n.value == name)
    return count


def _kernel_edit(sc: SourceScan, fn: Function, findings: Sequence[Any]) -> EditProposal | None:
    launch = single_launch(sc, fn)
    if launch is None:
        return None
    try:
        an = Analyzer(sc, fn)
        plan = _plan(sc, fn, an)
    except Refuse:
        return None
    if plan is None:
        return None
    return _render(sc, fn, launch, an, plan, findings)


@dataclass
class _Plan:
    pre_end: int  # end of the int-local prologue
    ext: dict[str, str]
    guard: str  # C text of the positive guard
    acc: str
    acc_decl: str
    k_bound: str
    first: _Operand
    second: _Operand
    post: list[Stmt]


def _plan(sc: SourceScan, fn: Function, an: Analyzer) -> _Plan | None:
    text = sc.text
    env: dict[str, Poly] = {n: Poly.sym(n) for n in an.int_params}
    coords: dict[str, str] = {}
    body = an.body
    i = 0
    pre_end = fn.body_start
    while i < len(body) and body[i].kind == "decl":
        s = body[i]
        if not is_int_type(s.type):
            raise Refuse("prologue declares a non-int")
        for name, init in s.names:
            if init is None or an._mutated.get(name) or an._decls.get(name, 0) != 1:
                raise Refuse("mutable prologue local")
            p = an.poly(init, env)
            if p is None:
                raise Refuse("prologue local not affine")
            if p in (gcoord("x"), gcoord("y")):
                axis = "x" if p == gcoord("x") else "y"
                if axis in coords.values():
                    raise Refuse("two locals for one coordinate")
                coords[name] = axis
                env[name] = Poly.sym(name)
            else:
                env[name] = p
        pre_end = s.end
        i += 1
    if set(coords.values()) != {"x", "y"}:
        raise Refuse("no 2-D guard")
    ext, guard, inner = read_guard(sc, an, i, coords, "xy")
    if len(inner) < 2 or inner[0].kind != "decl" or inner[1].kind != "for":
        raise Refuse("guarded body is not acc; for")
    d = inner[0]
    if _words(d.type) != ["float"] or len(d.names) != 1 or d.names[0][1] is None or d.names[0][1].kind != "num":
        raise Refuse("acc is not a float with a literal start")
    acc = d.names[0][0]
    loop = inner[1]
    post = inner[2:]
    for s in [*body[:i], *post]:
        if any(x.kind == "for" for x in walk_stmts(s)):
            raise Refuse("more than one loop")
    if an._mutated.get(acc) != 1 or an._decls.get(acc) != 1:
        raise Refuse("acc changed outside the loop")
    if len(loop.kids) != 2 or loop.kids[1].kind != "decl" or not is_int_type(loop.kids[1].type):
        raise Refuse("loop header")
    init = loop.kids[1]
    if len(init.names) != 1 or init.names[0][1] is None or init.names[0][1].kind != "num" \
            or init.names[0][1].value != 0:
        raise Refuse("loop must start at 0")
    k = init.names[0][0]
    kcond, step = loop.exprs
    if kcond is None or kcond.kind != "bin" or kcond.op != "<" or kcond.kids[0].kind != "id" \
            or kcond.kids[0].value != k or kcond.kids[1].kind != "id" or kcond.kids[1].value not in an.int_params:
        raise Refuse("loop bound")
    if step is None or not ((step.kind in ("unary", "post") and step.op == "++" and step.kids[0].kind == "id"
                             and step.kids[0].value == k)
                            or (step.kind == "assign" and step.op == "+=" and step.kids[0].kind == "id"
                                and step.kids[0].value == k and step.kids[1].kind == "num"
                                and step.kids[1].value == 1)):
        raise Refuse("loop step")
    if an._mutated.get(k) != 1 or an._decls.get(k) != 1:
        raise Refuse("loop variable reused")
    items = block_items(loop.kids[0])
    if len(items) != 1 or items[0].kind != "expr":
        raise Refuse("loop body")
    e = items[0].exprs[0]
    if e is None or e.kind != "assign" or e.op != "+=" or e.kids[0].kind != "id" or e.kids[0].value != acc:
        raise Refuse("loop body is not acc += ...")
    prod = e.kids[1]
    if prod.kind != "bin" or prod.op != "*":
        raise Refuse("not a product")
    first = _operand(an, prod.kids[0], env, coords, k)
    second = _operand(an, prod.kids[1], env, coords, k)
    for name in {first.name, second.name}:
        # Only read, and only in the product: no write, cast, alias or call can reach the operand.
        if _id_count(body, name) != _id_count([loop], name):
            raise Refuse("operand used outside the loop")
    return _Plan(pre_end, ext, guard, acc, text[d.start:d.end], kcond.kids[1].value, first, second, post)


def _render(sc: SourceScan, fn: Function, launch: Any, an: Analyzer, plan: _Plan,
            findings: Sequence[Any]) -> EditProposal | None:
    source = sc.source
    arg_text = launch_arguments(sc, launch, an)
    if arg_text is None or not all(plain_value(arg_text[plan.ext[a]]) for a in "xy"):
        return None  # the grid repeats the argument expression: keep it side-effect free
    taken: set[str] = set()
    tile = fresh_name(source, "TILE", taken)
    kt = fresh_name(source, "kt", taken)
    kk = fresh_name(source, "kk", taken)
    tx = fresh_name(source, "tx", taken)
    ty = fresh_name(source, "ty", taken)
    ind, ind2 = _INDENT, _INDENT * 2
    lines = [f"{ind}const int {tx} = threadIdx.x;", f"{ind}const int {ty} = threadIdx.y;"]
    tiles: list[tuple[_Operand, str, str]] = []
    for op in (plan.first, plan.second):
        tname = fresh_name(source, f"{op.name}_tile", taken)
        pad = op.layout == "sk" and op.axis == "x"
        lines.append(f"{ind}__shared__ float {tname}[{tile}][{tile}{' + 1' if pad else ''}];")
        mine = tx if op.axis == "x" else ty
        if op.layout == "sk":
            coord, kexpr, read = ty, tx, f"{tname}[{mine}][{kk}]"
        else:
            coord, kexpr, read = tx, ty, f"{tname}[{kk}][{mine}]"
        s_at = f"(int)blockIdx.{op.axis} * {tile} + {coord}"
        k_at = f"{kt} + {kexpr}"
        valid = f"{s_at} < {plan.ext[op.axis]} && {k_at} < {plan.k_bound}"
        load = (f"{ind2}{tname}[{ty}][{tx}] = ({valid}) ? "
                f"{op.name}[{_affine_text(op, s_at, k_at)}] : 0.0f;")
        tiles.append((op, load, read))
    post_text = "".join(f"{ind2}{source[s.start:s.end].strip()}\n" for s in plan.post)
    new_body = (
        "\n" + "\n".join(lines) + "\n"
        f"{ind}{plan.acc_decl.strip()}\n"
        f"{ind}for (int {kt} = 0; {kt} < {plan.k_bound}; {kt} += {tile}) {{\n"
        + "".join(load + "\n" for _, load, _ in tiles)
        + f"{ind2}__syncthreads();\n"
        "#pragma unroll\n"
        f"{ind2}for (int {kk} = 0; {kk} < {tile}; ++{kk}) {plan.acc} += {tiles[0][2]} * {tiles[1][2]};\n"
        f"{ind2}__syncthreads();\n"
        f"{ind}}}\n"
        f"{ind}if ({plan.guard}) {{\n{post_text}{ind}}}\n"
    )
    gx = f"({arg_text[plan.ext['x']]} + {tile} - 1) / {tile}"
    gy = f"({arg_text[plan.ext['y']]} + {tile} - 1) / {tile}"
    new = relaunch(sc, (plan.pre_end, fn.body_end, new_body), launch, f"dim3({gx}, {gy})", f"dim3({tile}, {tile})",
                   {tile: DEFAULT_TILE})
    if new is None:
        return None
    motive, prior = motivated(findings, _MOTIVES)
    desc = (f"tile {fn.name}'s inner product over {plan.k_bound} in shared memory "
            f"({plan.first.name}: {plan.first.layout}, {plan.second.name}: {plan.second.layout}), "
            f"{tile}x{tile} blocks")
    return EditProposal(OPERATOR, new, desc,
                        {"kernel": fn.name, "tile": tile, "operands": [plan.first.name, plan.second.name],
                         "layouts": [plan.first.layout, plan.second.layout], "findings": motive}, prior)


@operator("tile_shared", order=120, motives=_MOTIVES, restructuring=True)
def tile_shared_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Tile each recognised naive inner-product kernel in shared memory (see the module docstring)."""
    sc = scan(source)
    if re.search(r"\b(__shared__|__syncthreads|__shfl\w*|__syncwarp|atomic\w+)\b", sc.text):
        return []
    return [edit for fn in sc.kernels() if (edit := _kernel_edit(sc, fn, findings)) is not None]
