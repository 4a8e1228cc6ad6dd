"""Helpers of the operators that move a kernel's work onto a new block shape (:mod:`.transpose_tile`,
:mod:`.column_reduce`; :mod:`.tile_shared` shares the guard reader): the prologue of ``int`` locals
that names the global thread coordinates, the bounds guard on them, and the launch's arguments.

These operators regenerate the kernel body around statements of the original, so they need to know
exactly what each original statement depends on. The prologue reader accepts only immutable ``int``
locals whose values the affine reader (:class:`~veriforge.optiml.kernel_reader.Analyzer`) resolves:
the coordinates themselves (``c = blockIdx.a * blockDim.a + threadIdx.a``, one name per declaration)
and locals over the coordinates, the immutable ``int`` parameters and the builtins the caller allows
(``blockIdx.z`` for a batch index). A local that reads ``threadIdx``/``blockDim`` any other way would
change meaning when the block shape changes, so it is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from veriforge.optiml.kernel_reader import Analyzer, Node, Poly, Stmt, gcoord, is_int_type, walk_nodes, walk_stmts
from veriforge.optiml.operators.registry import motivating_findings
from veriforge.optiml.source_scan import Function, Launch, SourceScan
from veriforge.optiml.source_tokens import Refuse, apply_edits, trim_span

__all__ = ["Shape", "block_items", "bounds_guard", "flatten", "int_locals", "launch_arguments", "motivated",
           "names_in", "plain_value", "planned", "read_guard", "read_shape", "relaunch", "side_effect_free",
           "single_launch"]

P = TypeVar("P")


@dataclass
class Shape:
    """A kernel read as ``prologue; if (guard) { inner }`` (or ``if (!guard) return; inner``)."""

    an: Analyzer
    coords: dict[str, str]  # coordinate local -> axis ("x", "y")
    prologue: list[Stmt]  # every top-level declaration before the guard, coordinates included
    others: list[Stmt]  # the prologue declarations that are not coordinates
    env: dict[str, Poly]  # int params and coordinates as symbols, other locals resolved
    ext: dict[str, str]  # axis -> the int parameter bounding it in the guard
    guard: str  # C text of the guard, positive (the condition under which the inner part runs)
    inner: list[Stmt]


def flatten(node: Node, op: str) -> list[Node]:
    if node.kind == "bin" and node.op == op:
        return flatten(node.kids[0], op) + flatten(node.kids[1], op)
    return [node]


def block_items(s: Stmt) -> list[Stmt]:
    return list(s.kids) if s.kind == "block" else [s]


def names_in(stmts: list[Stmt]) -> list[Node]:
    """Every identifier node of the statements' expressions and initialisers."""
    out = []
    for stmt in stmts:
        for s in walk_stmts(stmt):
            for e in [*s.exprs, *(init for _, init in s.names)]:
                out.extend(n for n in walk_nodes(e) if n.kind == "id")
    return out


def side_effect_free(node: Node | None, pure: set[str] | frozenset[str]) -> bool:
    """No assignment, increment, address-of or call other than to the ``pure`` functions."""
    for n in walk_nodes(node):
        if n.kind == "assign" or (n.kind in ("unary", "post") and n.op in ("++", "--", "&")):
            return False
        if n.kind == "call" and (n.kids[0].kind != "id" or n.kids[0].value not in pure):
            return False
    return True


def bounds_guard(an: Analyzer, cond: Node, positive: bool, coords: dict[str, str], axes: str) -> dict[str, str]:
    """axis -> extent parameter name, from ``row < M && col < N`` (positive) or ``row >= M || col >= N``;
    every axis of ``axes`` bounded exactly once by a plain immutable ``int`` parameter, nothing else."""
    ext: dict[str, str] = {}
    for atom in flatten(cond, "&&" if positive else "||"):
        if atom.kind != "bin":
            raise Refuse("guard atom")
        lhs, rhs = atom.kids
        if atom.op == ("<" if positive else ">="):
            var, bound = lhs, rhs
        elif atom.op == (">" if positive else "<="):
            var, bound = rhs, lhs
        else:
            raise Refuse("guard comparison")
        if var.kind != "id" or var.value not in coords or bound.kind != "id" or bound.value not in an.int_params:
            raise Refuse("guard operands")
        axis = coords[var.value]
        if axis in ext:
            raise Refuse("guard repeats an axis")
        ext[axis] = bound.value
    if set(ext) != set(axes):
        raise Refuse("guard must bound every coordinate")
    return ext


def _local_poly(an: Analyzer, s: Stmt, env: dict[str, Poly]) -> list[tuple[str, Poly]]:
    if s.kind != "decl" or not is_int_type(s.type):
        raise Refuse("not an int declaration")
    out = []
    for name, init in s.names:
        if init is None or an._mutated.get(name) or an._decls.get(name, 0) != 1:
            raise Refuse("mutable local")
        p = an.poly(init, env)
        if p is None:
            raise Refuse("local not affine")
        out.append((name, p))
        env[name] = p
    return out


def int_locals(an: Analyzer, stmts: list[Stmt], env: dict[str, Poly], allowed: set[str]) -> None:
    """Resolve immutable affine ``int`` declarations into ``env``; Refuse anything else or a value over
    symbols outside ``env``'s names and ``allowed``."""
    for s in stmts:
        for _, p in _local_poly(an, s, env):
            if not p.symbols() <= set(env) | allowed:
                raise Refuse("local over other builtins")


def read_shape(sc: SourceScan, fn: Function, axes: str, allowed: frozenset[str] = frozenset()) -> Shape:
    """Read ``fn`` as coordinates for ``axes`` (``"x"`` or ``"xy"``), other affine ``int`` locals, then a
    guard bounding every coordinate by an ``int`` parameter with nothing after it. Refuse otherwise."""
    an = Analyzer(sc, fn)
    env: dict[str, Poly] = {n: Poly.sym(n) for n in an.int_params}
    coords: dict[str, str] = {}
    body = an.body
    prologue: list[Stmt] = []
    others: list[Stmt] = []
    i = 0
    while i < len(body) and body[i].kind == "decl":
        s = body[i]
        probe = dict(env)
        values = _local_poly(an, s, probe)
        axis = next((a for a in axes if values[0][1] == gcoord(a)), None)
        if axis is not None:
            if len(values) != 1 or axis in coords.values():
                raise Refuse("coordinate declaration")
            coords[values[0][0]] = axis
            env[values[0][0]] = Poly.sym(values[0][0])
        else:
            for name, p in values:
                if not p.symbols() <= set(env) | set(allowed):
                    raise Refuse("prologue local over other builtins")
                env[name] = p
            others.append(s)
        prologue.append(s)
        i += 1
    if set(coords.values()) != set(axes):
        raise Refuse("no coordinate for every axis")
    ext, guard, inner = read_guard(sc, an, i, coords, axes)
    return Shape(an, coords, prologue, others, env, ext, guard, inner)


def read_guard(sc: SourceScan, an: Analyzer, i: int, coords: dict[str, str], axes: str
               ) -> tuple[dict[str, str], str, list[Stmt]]:
    """(extents, positive guard text, guarded statements) of the guard at top-level statement ``i``:
    ``if (guard) { ... }`` ending the body, or ``if (!guard) return;`` followed by the rest."""
    body = an.body
    if i >= len(body) or body[i].kind != "if" or len(body[i].kids) != 1:
        raise Refuse("no guard on the coordinates")
    gstmt = body[i]
    cond = gstmt.exprs[0]
    assert cond is not None
    then = block_items(gstmt.kids[0])
    if len(then) == 1 and then[0].kind == "return" and then[0].exprs[0] is None:
        positive, inner = False, body[i + 1:]
    elif i == len(body) - 1:
        positive, inner = True, then
    else:
        raise Refuse("statements after the guard")
    ext = bounds_guard(an, cond, positive, coords, axes)
    cond_text = sc.source[cond.start:cond.end]
    return ext, cond_text if positive else f"!({cond_text})", inner


def single_launch(sc: SourceScan, fn: Function) -> Launch | None:
    """The only launch of ``fn`` when ``fn`` is defined once and launched once."""
    launches = sc.launches_of(fn.name)
    if len(launches) != 1 or sum(1 for f in sc.functions if f.name == fn.name) != 1:
        return None
    return launches[0]


def planned(sc: SourceScan, fn: Function, planner: Callable[[SourceScan, Function], P]
            ) -> tuple[Launch, P, dict[str, str]] | None:
    """(the single launch, ``planner``'s plan, the launch's arguments by parameter name) or None when the
    kernel is not launched exactly once, the planner refuses or the call cannot be read. The plan must
    carry its :class:`Shape` as ``plan.shape``; the guard's extents must be plain argument expressions."""
    launch = single_launch(sc, fn)
    if launch is None:
        return None
    try:
        plan = planner(sc, fn)
    except Refuse:
        return None
    shape: Shape = plan.shape  # type: ignore[attr-defined]
    args = launch_arguments(sc, launch, shape.an)
    if args is None or not all(plain_value(args[p]) for p in shape.ext.values()):
        return None  # the new grid repeats the extents' argument expressions: keep them side-effect free
    return launch, plan, args


def relaunch(sc: SourceScan, body: tuple[int, int, str], launch: Launch, grid: str, block: str,
             defines: dict[str, int]) -> str | None:
    """The source with ``body`` (span, new text) replaced, the launch's grid and block rewritten and
    ``defines`` prepended as ``#define`` lines (None when the spans overlap)."""
    edits = [
        body,
        (*trim_span(sc.text, launch.grid), grid),
        (*trim_span(sc.text, launch.block), block),
        (0, 0, "".join(f"#define {name} {value}\n" for name, value in defines.items())),
    ]
    try:
        return apply_edits(sc.source, edits, disjoint=True)
    except ValueError:
        return None


def motivated(findings: Sequence[Any], motives: set[str]) -> tuple[list[dict[str, Any]], float]:
    """(motivating findings, prior 2 + their severities): a restructuring edit the search tries early."""
    motive = motivating_findings(findings, motives)
    return motive, 2.0 + sum(float(f.get("severity") or 0) for f in motive)


def launch_arguments(sc: SourceScan, launch: Launch, an: Analyzer) -> dict[str, str] | None:
    """Parameter name -> the launch's argument text (None when the call cannot be read)."""
    call = sc.launch_call(launch)
    if call is None:
        return None
    args, _, _ = call
    names = [n for _, n in an.params]
    if len(args) != len(names):
        return None
    return {n: sc.source[a:b].strip() for n, (a, b) in zip(names, args, strict=True)}


def plain_value(text: str) -> bool:
    """An argument expression the new grid may repeat: no call, assignment or increment."""
    return re.fullmatch(r"[\w\s.+\-*/()]+", text) is not None and "++" not in text and "--" not in text
