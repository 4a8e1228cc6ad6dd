"""The ``transpose_tile`` operator: a naive out-of-place transpose becomes the shared-memory tiled transpose.

Why: in a naive transpose thread ``(x, y)`` reads ``in[y * W + x]`` and writes ``out[x * H + y]``; the
warp's lanes differ in ``x``, so one of the two accesses is unit-stride across the warp (coalesced) and
the other jumps a whole row per lane (one memory transaction per lane). Swapping the thread axes only
moves the stride to the other access. The classic fix stages a TILE x TILE tile in shared memory: the
block reads the tile with lanes along the input's contiguous axis, synchronises, and writes it with
lanes along the output's contiguous axis, so both global accesses coalesce; the tile has one column of
padding (``[TILE][TILE + 1]``) so the column-wise shared accesses of a warp hit distinct banks.

Recognised shape (anything else yields no edit):

* one ``__global__`` kernel with exactly one launch site; no ``__shared__``, barriers, warp intrinsics,
  atomics, ``gridDim``, ``__launch_bounds__`` (the block changes) anywhere in the file, and nothing
  the statement parser of :mod:`~veriforge.optiml.kernel_reader` refuses (``while``, ``switch``, local
  arrays, ...);
* a prologue of immutable ``int`` locals (:func:`._coords.read_shape`): the two coordinates
  ``x = blockIdx.x * blockDim.x + threadIdx.x`` and ``y = blockIdx.y * blockDim.y + threadIdx.y`` (any
  names, one per declaration) and affine locals over them, the ``int`` parameters and ``blockIdx.z`` (a
  batch index; the grid's z component is kept);
* a guard bounding both coordinates by ``int`` parameters, ``if (x < W && y < H) { ... }`` or
  ``if (x >= W || y >= H) return;`` followed by the rest of the body;
* guarded: immutable affine ``int`` locals, then exactly one store ``OUT[io] = f(IN[ii]);`` where ``OUT``
  and ``IN`` are different pointer parameters, ``IN`` appears nowhere else in the kernel (read once,
  never written, cast or passed on), ``OUT`` nowhere but as this store's target, no other pointer
  parameter is used, and ``f`` (any expression around the one read: ``alpha * in[..]``, a conversion, a
  pure math call) has no side effects;
* ``ii`` and ``io`` are affine in the coordinates (resolved through the locals and ``#define`` constants
  by :class:`~veriforge.optiml.kernel_reader.Analyzer`) with coefficients over ``int`` parameters, and
  one of them has coefficient 1 in ``x`` but not in ``y`` while the other has coefficient 1 in ``y`` but
  not in ``x`` (a transpose, in either direction: strided write or strided read);
* the launch passes ``IN`` and ``OUT`` as two different plain identifiers (the same pointer passed twice,
  or an in-place transpose, could alias: refused), and plain argument expressions for the extents.

The edit: ``#define TILE 32`` and ``#define TILE_ROWS 8`` (tunables), the launch becomes
``<<<dim3((W + TILE - 1) / TILE, (H + TILE - 1) / TILE[, z]), dim3(TILE, TILE_ROWS)>>>`` (``W``/``H``: the
launch's arguments for the guard's extents; ``z``: the original grid's z component when the kernel reads
``blockIdx.z``), and the body becomes two phases over the block's TILE x TILE square of ``(x, y)``:

* **load** — ``for (j = threadIdx.y; j < TILE; j += TILE_ROWS)`` each thread takes the element whose local
  position along ``IN``'s contiguous axis is ``threadIdx.x`` and along the other axis ``j``; it declares
  the coordinates for that element (``x = blockIdx.x * TILE + ...``), re-declares the prologue locals
  verbatim, and under the original guard (and guarded locals) stores ``tile[y_local][x_local] = IN[ii]``;
* ``__syncthreads()``;
* **store** — the same loop with lanes along ``OUT``'s contiguous axis; under the original guard it runs
  the original store with the read ``IN[ii]`` replaced by ``tile[y_local][x_local]``.

Why it is correct: with the new launch the block ``(bx, by)`` covers exactly the coordinates
``[bx * TILE, +TILE) x [by * TILE, +TILE)`` in both phases (``j`` takes each value in ``[0, TILE)`` for
exactly one ``threadIdx.y`` class, for any TILE and TILE_ROWS with TILE * TILE_ROWS <= 1024), so each
in-range ``(x, y)`` runs its store exactly once, after the barrier, and ``tile[y_local][x_local]`` holds
the value ``IN[ii]`` had for that very ``(x, y)``: the load ran under the same guard with the same
coordinates and locals, so it reads only indices the original reads. The store evaluates ``f`` with the
same coordinates, locals and scalars, so it writes the same value to the same ``OUT[io]``; ``IN`` is
never written and may not alias ``OUT`` (different pointers at the launch), so reading it earlier than
the original did cannot change what is read. No thread returns before the barrier (the guard wraps the
work), and the original launch's block and grid shape do not matter: the original kernel never reads
``blockDim`` or ``gridDim`` except in the coordinates it defines. As in every restructuring edit the
verifier still checks the result on the task's sizes.

Motivated by ``uncoalesced_store``/``uncoalesced_load`` and memory-bound findings (prior 2 + severities).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veriforge.optiml.kernel_reader import Node, Poly, Stmt, walk_nodes, walk_stmts
from veriforge.optiml.operators import _coords as coords
from veriforge.optiml.operators import _layout as layout
from veriforge.optiml.operators.registry import EditProposal, operator
from veriforge.optiml.operators.rows import _PURE_FUNCS
from veriforge.optiml.source_scan import Function, SourceScan, scan
from veriforge.optiml.source_tokens import Refuse, fresh_name

__all__ = ["transpose_tile_edits"]

OPERATOR = "transpose_tile"
DEFAULT_TILE = 32
DEFAULT_ROWS = 8
_MOTIVES = {"uncoalesced_load", "uncoalesced_store", "memory_bound", "low_dram_throughput"}
_FORBIDDEN = re.compile(r"\b(__shared__|__syncthreads|__shfl\w*|__syncwarp|atomic\w+|gridDim|__launch_bounds__)\b")
_BATCH = "blockIdx.z"
_IND = "    "


@dataclass
class _Plan:
    shape: coords.Shape
    locals_: list[Stmt]  # guarded int locals
    store: Stmt
    read: Node  # IN[ii]
    src: str  # IN
    dst: str  # OUT
    elem: str  # IN's element type
    src_lanes: str  # the axis along which IN is unit-stride ("x" or "y")
    batch: bool


def _elem_type(ptype: str) -> str | None:
    words = [w for w in ptype.split() if w not in ("const", "__restrict__")]
    if len(words) < 2 or words[-1] != "*" or "*" in words[:-1] or "volatile" in words:
        return None
    return " ".join(words[:-1]) if all(re.fullmatch(r"[A-Za-z_]\w*", w) for w in words[:-1]) else None


def _unit_axis(p: Poly | None, shape: coords.Shape) -> str:
    """The coordinate axis along which index ``p`` is unit-stride (coefficient 1 there, not 1 on the other)."""
    if p is None:
        raise Refuse("index not affine")
    names = {axis: name for name, axis in shape.coords.items()}
    split_x = p.split_by(names["x"])
    if split_x is None:
        raise Refuse("x squared")
    ax, rest = split_x
    split_y = rest.split_by(names["y"])
    if split_y is None:
        raise Refuse("y squared")
    ay, c = split_y
    params = shape.an.int_params
    if not (ax.symbols() <= params and ay.symbols() <= params and c.symbols() <= params | {_BATCH}):
        raise Refuse("index mixes coordinates")
    if not ax.terms or not ay.terms:
        raise Refuse("index misses a coordinate")
    one = Poly.const(1)
    if ax == one and ay != one:
        return "x"
    if ay == one and ax != one:
        return "y"
    raise Refuse("no single unit-stride axis")


def _plan(sc: SourceScan, fn: Function) -> _Plan:
    shape = coords.read_shape(sc, fn, "xy", frozenset({_BATCH}))
    an = shape.an
    *locals_, store = shape.inner if shape.inner else [None]
    if store is None or store.kind != "expr":
        raise Refuse("no single store")
    env = dict(shape.env)
    coords.int_locals(an, locals_, env, {_BATCH})
    e = store.exprs[0]
    if e is None or e.kind != "assign" or e.op != "=" or e.kids[0].kind != "index" \
            or e.kids[0].kids[0].kind != "id":
        raise Refuse("not OUT[...] = ...")
    target, rhs = e.kids
    pointers = an.pointers
    dst = target.kids[0].value
    reads = [n for n in walk_nodes(rhs) if n.kind == "index" and n.kids[0].kind == "id"
             and n.kids[0].value in pointers]
    if dst not in pointers or len(reads) != 1:
        raise Refuse("not one read of a pointer parameter")
    read = reads[0]
    src = read.kids[0].value
    if src == dst or not coords.side_effect_free(rhs, _PURE_FUNCS) \
            or not coords.side_effect_free(target.kids[1], frozenset()):
        raise Refuse("aliasing or side effects")
    used = [n.value for n in coords.names_in(an.body) if n.value in pointers]
    if sorted(used) != sorted([src, dst]):
        raise Refuse("pointer parameters used elsewhere")
    # builtins: only in the coordinate declarations, or blockIdx.z
    coord_decls = [s for s in shape.prologue if s not in shape.others]
    for stmt in an.body:
        for s in walk_stmts(stmt):
            if any(s is c for c in coord_decls):
                continue
            for ex in [*s.exprs, *(init for _, init in s.names)]:
                if any(n.kind == "member" and n.value != _BATCH for n in walk_nodes(ex)):
                    raise Refuse("builtin outside the coordinates")
    elem = _elem_type(dict((n, t) for t, n in an.params)[src])
    if elem is None:
        raise Refuse("element type")
    src_axis = _unit_axis(an.poly(read.kids[1], env), shape)
    dst_axis = _unit_axis(an.poly(target.kids[1], env), shape)
    if src_axis == dst_axis:
        raise Refuse("not a transpose: both accesses are unit-stride along the same axis")
    batch = _BATCH in sc.text[fn.body_start:fn.body_end]
    return _Plan(shape, locals_, store, read, src, dst, elem, src_axis, batch)


def _phase(sc: SourceScan, plan: _Plan, names: dict[str, str], lanes: str, work: str) -> str:
    """One pass over the block's tile with lanes along ``lanes``: coordinates, locals, guarded ``work``."""
    src = sc.source
    tile, rows, j = names["TILE"], names["TILE_ROWS"], names["j"]
    local = {lanes: "(int)threadIdx.x", "y" if lanes == "x" else "x": j}
    ind2, ind3 = _IND * 2, _IND * 3
    lines = [f"{_IND}for (int {j} = (int)threadIdx.y; {j} < {tile}; {j} += {rows}) {{"]
    for name, axis in plan.shape.coords.items():
        lines.append(f"{ind2}const int {name} = (int)blockIdx.{axis} * {tile} + {local[axis]};")
    lines += [f"{ind2}{src[s.start:s.end].strip()}" for s in plan.shape.others]
    lines.append(f"{ind2}if ({plan.shape.guard}) {{")
    lines += [f"{ind3}{src[s.start:s.end].strip()}" for s in plan.locals_]
    lines += [f"{ind3}{work}", f"{ind2}}}", f"{_IND}}}"]
    return "\n".join(lines)


def _edit(sc: SourceScan, fn: Function, findings: Sequence[Any]) -> EditProposal | None:
    found = coords.planned(sc, fn, _plan)
    if found is None:
        return None
    launch, plan, args = found
    ext = {a: args[plan.shape.ext[a]] for a in "xy"}
    if not (re.fullmatch(r"[A-Za-z_]\w*", args[plan.src]) and re.fullmatch(r"[A-Za-z_]\w*", args[plan.dst])
            and args[plan.src] != args[plan.dst]):
        return None  # the same pointer twice, or pointer arithmetic: input and output may alias
    z = ""
    if plan.batch:
        grid = layout.resolve(sc, launch, "grid")
        if grid is None:
            return None
        if grid.kind == "var":
            z = f", {grid.var}.z"
        elif grid.kind == "inline" and len(grid.comps) == 3:
            z = f", {sc.source[grid.comps[2][0]:grid.comps[2][1]]}"
    source = sc.source
    taken: set[str] = set()
    names = {n: fresh_name(source, n, taken) for n in ("TILE", "TILE_ROWS", "tile", "j")}
    tile_t = names["tile"]
    slot = {"x": "(int)threadIdx.x", "y": names["j"]}  # local position of the element, lanes along x
    flip = {"x": names["j"], "y": "(int)threadIdx.x"}
    src_at = slot if plan.src_lanes == "x" else flip
    dst_at = flip if plan.src_lanes == "x" else slot
    load = f"{tile_t}[{src_at['y']}][{src_at['x']}] = {source[plan.read.start:plan.read.end]};"
    st = plan.store
    rd = plan.read
    store_text = (source[st.start:rd.start] + f"{tile_t}[{dst_at['y']}][{dst_at['x']}]"
                  + source[rd.end:st.end]).strip()
    dst_lanes = "y" if plan.src_lanes == "x" else "x"
    tile, rows = names["TILE"], names["TILE_ROWS"]
    body = (f"\n{_IND}__shared__ {plan.elem} {tile_t}[{tile}][{tile} + 1];\n"
            + _phase(sc, plan, names, plan.src_lanes, load) + f"\n{_IND}__syncthreads();\n"
            + _phase(sc, plan, names, dst_lanes, store_text) + "\n")
    grid_text = f"dim3(({ext['x']} + {tile} - 1) / {tile}, ({ext['y']} + {tile} - 1) / {tile}{z})"
    new = coords.relaunch(sc, (fn.body_start, fn.body_end, body), launch, grid_text, f"dim3({tile}, {rows})",
                          {tile: DEFAULT_TILE, rows: DEFAULT_ROWS})
    if new is None:
        return None
    motive, prior = coords.motivated(findings, _MOTIVES)
    desc = (f"tile {fn.name}'s transpose ({plan.src} -> {plan.dst}) through a padded {tile} x {tile} "
            f"shared tile, both accesses coalesced")
    return EditProposal(OPERATOR, new, desc,
                        {"kernel": fn.name, "input": plan.src, "output": plan.dst, "tile": tile,
                         "strided": "store" if plan.src_lanes == "x" else "load", "batch": plan.batch,
                         "findings": motive}, prior)


@operator(OPERATOR, order=125, motives=_MOTIVES, restructuring=True)
def transpose_tile_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Stage each recognised naive transpose through a padded shared-memory tile (see the module docstring)."""
    sc = scan(source)
    if _FORBIDDEN.search(sc.text):
        return []
    return [edit for fn in sc.kernels() if (edit := _edit(sc, fn, findings)) is not None]
