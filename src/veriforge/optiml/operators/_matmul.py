"""The naive inner-product kernel (a matmul written one output per thread), as the matmul operators
(:mod:`.tile_shared`, :mod:`.register_block`) recognise it.

:func:`read_matmul` returns a :class:`MatmulPlan` for a kernel of this shape, or raises
:class:`~veriforge.optiml.source_tokens.Refuse`:

* **Prologue**: ``int`` locals, each declared once, never changed, an affine expression (through
  :class:`~veriforge.optiml.kernel_reader.Analyzer`) of int parameters, ``#define`` constants and the
  two thread coordinates ``row = blockIdx.y * blockDim.y + threadIdx.y`` / ``col = blockIdx.x *
  blockDim.x + threadIdx.x`` (any names, any order, one local each; no other thread builtin), in
  between any number of early returns ``if (<atoms joined by ||>) return;``.
* **Guard**: the early returns and/or a last statement ``if (<atoms joined by &&>) { ... }``. Every
  atom must read as ``coordinate < E`` (when the thread goes on), with ``E`` an affine expression of
  int parameters: ``row < M``, ``M > row``, ``row <= M - 1``, ``!(row >= M)``, ``row >= M`` in a
  return, ``col < n`` for an immutable local ``int n = N``... Both coordinates are bounded, each once.
* **Body** (after the guard): ``T acc = <init>;`` (``T`` ``float`` or ``double``; ``init`` a literal
  or a side-effect-free expression of parameters, prologue locals and reads of pointers), then the
  only loop ``for (int k = 0; k < K; ++k / k++ / k += 1) <update>;`` (``K`` affine in int
  parameters), then the epilogue: any statements without a loop (the store, bias, activation...).
* **Update**, one statement: ``acc += X * Y``, ``acc = acc + X * Y``, ``acc = X * Y + acc`` or
  ``acc = fmaf(X, Y, acc)`` (also ``__fmaf_rn``, ``fma``, ``__fma_rn``), operands in either order.
  ``X``/``Y`` are pointer parameters of one type (``float`` or ``double``; ``acc`` of that type or
  ``double``) that the kernel never writes, casts or
  passes on (only ``P[...]`` reads anywhere), each index affine ``a * s + b * k + c`` with ``s``
  exactly one coordinate, ``a``, ``b``, ``c`` over int parameters/constants and ``b == 1`` ("sk":
  ``A[row * K + k]``) or ``a == 1`` ("ks": ``B[k * N + col]``); ``k`` appears nowhere else.
* Nothing in the guard, the init or the epilogue reads a thread builtin (``threadIdx``...): the
  edits change the block shape, so only the coordinates keep their meaning.

What the edits keep: :meth:`MatmulPlan.update_text` is the update *as written* with the operands and
``acc`` replaced, so a separate multiply and add stays one and ``fmaf`` stays ``fmaf`` (nvcc
contracts, or not, the same way) and the terms are still added for ``k = 0, 1, ..., K - 1`` in that
order: every thread's result is bit-identical except where zero-padding adds ``0 * 0`` to a ``-0.0``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from veriforge.optiml.kernel_reader import Analyzer, Node, Poly, Stmt, gcoord, is_int_type, walk_nodes, walk_stmts
from veriforge.optiml.operators._coords import (
    _local_poly,
    block_items,
    flatten,
    launch_arguments,
    motivated,
    plain_value,
    relaunch,
    side_effect_free,
    single_launch,
)
from veriforge.optiml.operators.registry import EditProposal
from veriforge.optiml.source_scan import Function, Launch, SourceScan
from veriforge.optiml.source_tokens import Refuse, apply_edits

__all__ = ["FMA_CALLS", "MatmulPlan", "Operand", "PrologueLocal", "affine_text", "launch_args", "poly_text", "proposal",
           "read_matmul", "words", "zero"]

FMA_CALLS = {"fmaf", "__fmaf_rn", "fma", "__fma_rn"}
_ELEMENT_TYPES = {"float", "double"}
_FORBIDDEN = re.compile(r"\b(__shared__|__syncthreads|__shfl\w*|__syncwarp|atomic\w+)\b")


@dataclass
class Operand:
    """One factor of the product: ``name[a * s + b * k + c]``."""

    name: str  # the pointer parameter
    elem: str  # "float" or "double"
    axis: str  # "x" or "y": which thread coordinate the index depends on
    layout: str  # "sk" (k unit stride) or "ks" (coordinate unit stride)
    a: Poly  # coefficient of the coordinate
    b: Poly  # coefficient of k
    c: Poly  # the rest
    node: Node  # the ``name[...]`` read in the update


@dataclass
class PrologueLocal:
    name: str
    type: str  # the declared type words, without ``const``
    init: str  # source text of the initialiser
    axis: str | None  # "x"/"y" for a coordinate


@dataclass
class MatmulPlan:
    fn: Function
    locals: list[PrologueLocal]
    decl_texts: list[str]  # the prologue declaration statements, verbatim, in order
    ext: dict[str, Poly]  # axis -> extent (over int parameters)
    guard: str  # C text, true exactly when the thread's output is in range
    acc: str
    acc_type: str
    init: str  # the initialiser's source text
    init_literal: bool
    k_bound: Poly
    first: Operand
    second: Operand
    update: Node  # the loop body's expression
    post: list[Stmt]
    source: str
    params: list[tuple[str, str]]  # (type, name) of the kernel parameters

    def update_text(self, first: str, second: str, acc: str) -> str:
        """The update as written, with the two operand reads and every ``acc`` replaced."""
        u = self.update
        edits = [(self.first.node.start - u.start, self.first.node.end - u.start, first),
                 (self.second.node.start - u.start, self.second.node.end - u.start, second)]
        edits += [(n.start - u.start, n.end - u.start, acc) for n in walk_nodes(u)
                  if n.kind == "id" and n.value == self.acc]
        return apply_edits(self.source[u.start:u.end], edits, disjoint=True)

    def post_text(self) -> list[str]:
        return [self.source[s.start:s.end].strip() for s in self.post]


def words(t: str) -> list[str]:
    return [w for w in t.replace("*", " * ").split() if w not in ("const", "__restrict__", "volatile")]


def zero(elem: str) -> str:
    return "0.0f" if elem == "float" else "0.0"


def _paren(p: Poly) -> str:
    text = p.render()
    return text if re.fullmatch(r"-?\w+", text) else f"({text})"


def poly_text(p: Poly, names: dict[str, str] | None = None) -> str:
    """C text of ``p``, each symbol replaced by ``names[symbol]`` (parenthesised) when given."""
    text = p.render()
    if names:
        text = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: f"({names[m.group(0)]})" if m.group(0) in names
                      else m.group(0), text)
    return text


def affine_text(op: Operand, coord: str, kexpr: str) -> str:
    """``op``'s index at coordinate ``coord`` and ``k = kexpr`` (both C expressions)."""
    parts = []
    for coef, expr in ((op.a, coord), (op.b, kexpr)):
        parts.append(f"({expr})" if coef == Poly.const(1) else f"{_paren(coef)} * ({expr})")
    if op.c.terms:
        parts.append(_paren(op.c))
    return " + ".join(parts)


def _is_return(s: Stmt) -> bool:
    items = block_items(s)
    return len(items) == 1 and items[0].kind == "return" and items[0].exprs[0] is None


def _bounds(an: Analyzer, cond: Node, go_on: bool, env: dict[str, Poly], coords: dict[str, str],
            ext: dict[str, Poly]) -> None:
    """Add to ``ext`` the extent each atom of ``cond`` proves (the thread goes on when ``cond`` is
    ``go_on``): each atom's fact must be ``E - s - 1 >= 0`` for a coordinate ``s``."""
    for atom in flatten(cond, "&&" if go_on else "||"):
        if atom.kind not in ("bin", "unary") or (atom.kind == "unary" and atom.op != "!"):
            raise Refuse("guard atom")
        facts, diseqs = an.cond_facts(atom, go_on, env)
        if len(facts) != 1 or diseqs:
            raise Refuse("guard atom is not one bound")
        split = None
        for name in coords:
            q_r = facts[0].split_by(name)
            if q_r is not None and q_r[0] == Poly.const(-1):
                split = name, q_r[1]
        if split is None:
            raise Refuse("guard atom does not bound a coordinate from above")
        name, rest = split
        extent = rest + Poly.const(1)
        if not extent.symbols() <= an.int_params:
            raise Refuse("guard extent is not an expression of int parameters")
        axis = coords[name]
        if axis in ext:
            raise Refuse("guard repeats an axis")
        ext[axis] = extent


def _operand(an: Analyzer, node: Node, env: dict[str, Poly], coords: dict[str, str], k: str) -> Operand:
    if node.kind != "index" or node.kids[0].kind != "id":
        raise Refuse("operand is not X[...]")
    name = node.kids[0].value
    ptype = dict((n, t) for t, n in an.params).get(name)
    w = words(ptype or "")
    if len(w) != 2 or w[0] not in _ELEMENT_TYPES or w[1] != "*":
        raise Refuse("operand is not a float/double pointer parameter")
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
    if not all(part.symbols() <= an.int_params for part in (a, b, c)):
        raise Refuse("index mixes coordinates")
    if not a.terms or not b.terms:
        raise Refuse("index misses the coordinate or k")
    if b == Poly.const(1):
        layout = "sk"
    elif a == Poly.const(1):
        layout = "ks"
    else:
        raise Refuse("no unit stride")
    return Operand(name, w[0], coords[s], layout, a, b, c, node)


def _product(e: Node, acc: str) -> tuple[Node, Node]:
    """The two operand nodes of an update of ``acc`` (see the module docstring)."""
    if e.kind != "assign" or e.kids[0].kind != "id" or e.kids[0].value != acc:
        raise Refuse("loop body is not an update of acc")
    rhs = e.kids[1]

    def is_acc(n: Node) -> bool:
        return n.kind == "id" and n.value == acc

    if e.op == "+=":
        prod = rhs
    elif e.op == "=" and rhs.kind == "bin" and rhs.op == "+" and is_acc(rhs.kids[0]):
        prod = rhs.kids[1]
    elif e.op == "=" and rhs.kind == "bin" and rhs.op == "+" and is_acc(rhs.kids[1]):
        prod = rhs.kids[0]
    elif e.op == "=" and rhs.kind == "call" and rhs.kids[0].kind == "id" and rhs.kids[0].value in FMA_CALLS \
            and len(rhs.kids) == 4 and is_acc(rhs.kids[3]):
        return rhs.kids[1], rhs.kids[2]
    else:
        raise Refuse("loop body is not acc += X * Y, acc = acc + X * Y or acc = fmaf(X, Y, acc)")
    if prod.kind != "bin" or prod.op != "*":
        raise Refuse("not a product")
    return prod.kids[0], prod.kids[1]


def _writes_or_escapes(stmts: list[Stmt], name: str) -> bool:
    """Whether ``name`` is used otherwise than read as ``name[...]`` (written, cast, passed, addressed)."""
    for stmt in stmts:
        for s in walk_stmts(stmt):
            for e in [*s.exprs, *(init for _, init in s.names)]:
                reads: set[int] = set()
                written: set[int] = set()
                for n in walk_nodes(e):
                    if n.kind == "index" and n.kids[0].kind == "id" and n.kids[0].value == name:
                        reads.add(id(n.kids[0]))
                    if n.kind == "assign" or (n.kind in ("unary", "post") and n.op in ("++", "--", "&")):
                        target = n.kids[0]
                        while target.kind == "index":
                            target = target.kids[0]
                        written.add(id(target))
                for n in walk_nodes(e):
                    if n.kind == "id" and n.value == name and (id(n) not in reads or id(n) in written):
                        return True
    return False


def _builtins(stmts: list[Stmt]) -> bool:
    return any(n.kind == "member" for stmt in stmts for s in walk_stmts(stmt)
               for e in [*s.exprs, *(init for _, init in s.names)] for n in walk_nodes(e))


def _loop_header(an: Analyzer, loop: Stmt, env: dict[str, Poly]) -> tuple[str, Poly]:
    if len(loop.kids) != 2 or loop.kids[1].kind != "decl" or not is_int_type(loop.kids[1].type):
        raise Refuse("loop header")
    init = loop.kids[1]
    if len(init.names) != 1 or init.names[0][1] is None or init.names[0][1].kind != "num" \
            or init.names[0][1].value != 0:
        raise Refuse("loop must start at 0")
    k = init.names[0][0]
    kcond, step = loop.exprs
    if kcond is None or kcond.kind != "bin" or kcond.op != "<" or kcond.kids[0].kind != "id" \
            or kcond.kids[0].value != k:
        raise Refuse("loop condition")
    bound = an.poly(kcond.kids[1], env)
    if bound is None or not bound.symbols() <= an.int_params:
        raise Refuse("loop bound is not an expression of int parameters")
    if step is None or not ((step.kind in ("unary", "post") and step.op == "++" and step.kids[0].kind == "id"
                             and step.kids[0].value == k)
                            or (step.kind == "assign" and step.op == "+=" and step.kids[0].kind == "id"
                                and step.kids[0].value == k and step.kids[1].kind == "num"
                                and step.kids[1].value == 1)):
        raise Refuse("loop step")
    if an._mutated.get(k) != 1 or an._decls.get(k) != 1:
        raise Refuse("loop variable reused")
    return k, bound


def read_matmul(sc: SourceScan, fn: Function) -> MatmulPlan:
    """The plan of ``fn`` (see the module docstring), or :class:`Refuse`."""
    if _FORBIDDEN.search(sc.text[fn.header_start:fn.body_end]):
        raise Refuse("kernel already uses shared memory, barriers, warp intrinsics or atomics")
    an = Analyzer(sc, fn)
    env: dict[str, Poly] = {n: Poly.sym(n) for n in an.int_params}
    coords: dict[str, str] = {}
    locals_: list[PrologueLocal] = []
    decl_texts: list[str] = []
    ext: dict[str, Poly] = {}
    guards: list[str] = []
    conds: list[Node] = []
    prologue: list[Stmt] = []
    body = an.body
    i = 0
    inner: list[Stmt] | None = None
    while i < len(body):
        s = body[i]
        if s.kind == "decl" and is_int_type(s.type):
            inits = dict(s.names)
            for name, p in _local_poly(an, s, env):  # immutable, affine (Refuse otherwise)
                init = inits[name]
                assert init is not None
                axis = "x" if p == gcoord("x") else "y" if p == gcoord("y") else None
                if axis is not None:
                    if axis in coords.values():
                        raise Refuse("two locals for one coordinate")
                    coords[name] = axis
                    env[name] = Poly.sym(name)
                else:
                    if not p.symbols() <= an.int_params | set(coords):
                        raise Refuse("prologue local reads a thread builtin other than through a coordinate")
                    env[name] = p
                locals_.append(PrologueLocal(name, " ".join(w for w in s.type.split() if w != "const"),
                                             sc.source[init.start:init.end].strip(), axis))
            decl_texts.append(sc.source[s.start:s.end].strip())
            prologue.append(s)
        elif s.kind == "if" and len(s.kids) == 1 and _is_return(s.kids[0]):
            cond = s.exprs[0]
            assert cond is not None
            _bounds(an, cond, False, env, coords, ext)
            guards.append(f"!({sc.source[cond.start:cond.end].strip()})")
            conds.append(cond)
            prologue.append(s)
        elif s.kind == "if" and len(s.kids) == 1 and i == len(body) - 1:
            cond = s.exprs[0]
            assert cond is not None
            _bounds(an, cond, True, env, coords, ext)
            guards.append(f"({sc.source[cond.start:cond.end].strip()})")
            conds.append(cond)
            inner = block_items(s.kids[0])
        else:
            break
        i += 1
    if inner is None:
        inner = body[i:]
    elif i != len(body):
        raise Refuse("statements after the guard")
    if set(coords.values()) != {"x", "y"} or set(ext) != {"x", "y"}:
        raise Refuse("no 2-D guard")
    # a ``#pragma unroll`` of the user's loop: the edit writes its own loops
    inner = [s for s in inner if not (s.kind == "pp" and re.match(r"#\s*pragma\s+unroll\b", sc.text[s.start:s.end]))]
    if len(inner) < 2 or inner[0].kind != "decl" or inner[1].kind != "for":
        raise Refuse("guarded body is not acc; for")
    d = inner[0]
    acc_words = words(d.type)
    if len(acc_words) != 1 or acc_words[0] not in _ELEMENT_TYPES or len(d.names) != 1 or d.names[0][1] is None:
        raise Refuse("acc is not one float/double with an initial value")
    acc, init = d.names[0]
    assert init is not None
    loop = inner[1]
    post = inner[2:]
    if any(x.kind == "for" for s in [*prologue, *post] for x in walk_stmts(s)):
        raise Refuse("more than one loop")
    if an._decls.get(acc) != 1 or sum(1 for s in [*prologue, d, loop] for x in walk_stmts(s)
                                      for e in x.exprs for n in walk_nodes(e)
                                      if n.kind == "assign" and n.kids[0].kind == "id" and n.kids[0].value == acc) != 1:
        raise Refuse("acc changed outside the loop")
    init_stmt = Stmt("expr", exprs=[init])
    if not side_effect_free(init, frozenset()):
        raise Refuse("acc's initial value has side effects")
    if _builtins([init_stmt, *post, *(Stmt("expr", exprs=[c]) for c in conds)]):
        raise Refuse("thread builtins outside the coordinates")
    k, k_bound = _loop_header(an, loop, env)
    items = block_items(loop.kids[0])
    if len(items) != 1 or items[0].kind != "expr" or items[0].exprs[0] is None:
        raise Refuse("loop body is not one statement")
    update = items[0].exprs[0]
    x, y = _product(update, acc)
    first = _operand(an, x, env, coords, k)
    second = _operand(an, y, env, coords, k)
    if first.elem != second.elem or acc_words[0] not in (first.elem, "double"):
        raise Refuse("operand and accumulator types disagree")
    k_uses = sum(1 for n in walk_nodes(update) if n.kind == "id" and n.value == k)
    if k_uses != sum(1 for op in (x, y) for n in walk_nodes(op) if n.kind == "id" and n.value == k):
        raise Refuse("k used outside the operand indices")
    if sum(1 for n in walk_nodes(update) if n.kind == "id" and n.value == acc) != (2 if update.op == "=" else 1):
        raise Refuse("acc appears in an operand")
    for op in (first, second):
        # Read-only everywhere: no write, cast, alias or call can reach the operand, so other threads may load it.
        if _writes_or_escapes(body, op.name):
            raise Refuse("operand is written or escapes")
    init_text = sc.source[init.start:init.end].strip()
    return MatmulPlan(fn, locals_, decl_texts, ext, " && ".join(guards), acc, acc_words[0], init_text,
                      init.kind == "num", k_bound, first, second, update, post, sc.source, an.params)


def launch_args(sc: SourceScan, fn: Function, plan: MatmulPlan) -> tuple[Launch, dict[str, str]] | None:
    """The single launch of ``fn`` and its argument text per kernel parameter, or None (several
    launches, an unreadable call, or an extent argument the new grid could not safely repeat)."""
    launch = single_launch(sc, fn)
    if launch is None:
        return None
    args = launch_arguments(sc, launch, plan)
    if args is None or not all(plain_value(args[s]) for axis in "xy" for s in plan.ext[axis].symbols()):
        return None  # the grid repeats the argument expression: keep it side-effect free
    return launch, args


def proposal(sc: SourceScan, plan: MatmulPlan, launch: Launch, *, operator: str, body: str, grid: str, block: str,
             defines: dict[str, int], findings: Any, motives: set[str], description: str,
             evidence: dict[str, Any]) -> EditProposal | None:
    """The edit that replaces the kernel's body, its launch's grid and block and adds ``defines`` at
    the top; its prior is 2 + the severities of the ``motives`` findings (a restructuring edit)."""
    new = relaunch(sc, (plan.fn.body_start, plan.fn.body_end, body), launch, grid, block, defines)
    if new is None:
        return None
    motive, prior = motivated(findings, motives)
    return EditProposal(operator, new, description,
                        {"kernel": plan.fn.name, **evidence, "operands": [plan.first.name, plan.second.name],
                         "layouts": [plan.first.layout, plan.second.layout], "findings": motive}, prior)
