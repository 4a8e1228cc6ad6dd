"""Grid-stride loops over a capped grid: the index shapes and launch rewrite shared by the operators
that let one thread handle many elements (``aggregate``, ``privatize_histogram``).

A kernel that does per-block work around its per-element work (a block reduction, a shared
sub-histogram) pays that work once per block, so it wants few blocks that each stream many
elements. The three shapes of a one-dimensional kernel that this module recognises, from the
statements of the kernel body (:func:`~veriforge.optiml.kernel_reader.parse_block`)::

    T i = <global index>; if (i < N [&& rest]) S        // "guard": the whole if is the loop body
    T i = <global index>; if (i >= N) return; S1 S2 ... // "return": S1 S2 ... are the loop body
    for (T i = <global index>; i < N; i += blockDim.x * gridDim.x) S   // "loop": already grid-stride

are rewritten to ``for (T i = <global index>; i < N; i += blockDim.x * gridDim.x) { body }`` and
every launch grid ``G`` becomes ``((G) < CAP ? (G) : CAP)``.

Why it is correct: the loop visits every ``i`` in ``[first index, N)`` exactly once, whatever the
grid, and runs the body with the same ``i``. For the "guard" and "return" shapes every launch grid
must be the ceil-division of the launch's N by its block size (:func:`covers`), so the original grid
already ran every ``i < N`` (and the extra threads did nothing): the loop runs the same set of
elements. The body must not otherwise depend on which thread runs it: no ``threadIdx``/``blockIdx``/
``blockDim``/``gridDim`` in it, ``i`` never assigned, addressed or incremented, N built from
parameters the kernel never assigns (and constants), no ``return`` or ``goto`` in it. Running
several elements one after the other in one thread is one of the orders the original allowed (the
blocks of a grid run in any order, also one after another), so a body without barriers — which the
callers forbid — computes the same thing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from veriforge.optiml.kernel_reader import TokStmt, kernel_launches, kernel_params, thread_index
from veriforge.optiml.source_scan import EXPR_DECL, Function, Launch, SourceScan, unparen
from veriforge.optiml.source_tokens import ASSIGN_OPS, Tok

__all__ = ["STRIDE", "StrideLoop", "cap_grid_edit", "covers", "host_value", "stride_loop", "written"]

STRIDE = "blockDim.x * gridDim.x"
_INDEX_WORDS = {"int", "unsigned", "long", "size_t", "const"}
_BUILTIN = re.compile(r"^(?:threadIdx|blockIdx|blockDim|gridDim)$")


@dataclass
class StrideLoop:
    """A recognised index shape; token indices are into the kernel body's tokens, spans into the source."""

    form: str  # "guard" | "return" | "loop"
    itype: str  # the index type without const
    var: str
    init: str  # source text of the global index
    bound: str  # kernel-side N (source text)
    first: int  # token index of the first statement replaced (the index declaration or the for)
    last: int  # token index one past the last statement replaced
    body: tuple[int, int]  # source span of the loop body (inside the braces of a block)
    launches: list[tuple[Launch, str, str]]  # (launch, N in host terms, block expression)

    def header(self) -> str:
        return f"for ({self.itype} {self.var} = {self.init}; {self.var} < {self.bound}; {self.var} += {STRIDE})"


def written(toks: list[Tok], name: str) -> bool:
    """``name`` is assigned, incremented or addressed somewhere in ``toks``."""
    for k, t in enumerate(toks):
        if t.text != name:
            continue
        nxt = toks[k + 1].text if k + 1 < len(toks) else ""
        prev = toks[k - 1].text if k else ""
        if nxt in ASSIGN_OPS or nxt in ("++", "--") or prev in ("++", "--", "&"):
            return True
    return False


def covers(grid: str, rows: str, block: str) -> bool:
    """``grid`` is the ceil-division of ``rows`` by ``block`` (so the original grid covers every index)."""
    g, r, b = (unparen(re.sub(r"\s+", "", x)) for x in (grid, rows, block))
    forms = {f"({r}+{b}-1)/{b}", f"({r}+({b}-1))/{b}", f"({r}+{b}-1)/({b})"}
    if b.isdigit():
        forms.add(f"({r}+{int(b) - 1})/{b}")
    return g in forms


def _index_decl(toks: list[Tok], a: int, b: int) -> tuple[str, str, int] | None:
    """``T i = <global index>`` in ``toks[a:b]`` (no ``;``): (type, name, token index of the initialiser)."""
    decl = [t.text for t in toks[a:b]]
    if "=" not in decl:
        return None
    eq = decl.index("=")
    type_words, var = decl[:eq - 1], decl[eq - 1] if eq else ""
    if not type_words or any(w not in _INDEX_WORDS for w in type_words) or toks[a + eq - 1].kind != "id":
        return None
    if not thread_index(" ".join(decl[eq + 1:])):
        return None
    return " ".join(w for w in type_words if w != "const"), var, a + eq + 1


def _bound(sc: SourceScan, fn: Function, toks: list[Tok], h0: int, h1: int, var: str, op: str
           ) -> tuple[str, int] | None:
    """``var op N [&& ...]`` in ``toks[h0:h1]``: (N's source text, token index where N ends)."""
    if h1 - h0 < 3 or toks[h0].text != var or toks[h0 + 1].text != op:
        return None
    depth, end = 0, h1
    for j in range(h0 + 2, h1):
        t = toks[j].text
        if t in ("(", "["):
            depth += 1
        elif t in (")", "]"):
            depth -= 1
        elif depth == 0 and t == "&&":
            end = j
            break
        elif depth == 0 and t in ("||", "?", ":", ",", "<", ">", "<=", ">=", "==", "!=", "&", "|", "^"):
            return None
    bound_toks = toks[h0 + 2:end]
    scalars = {n for n, ptr in kernel_params(sc, fn) if not ptr} | set(sc.constants())
    if not bound_toks or any(t.kind == "id" and (t.text not in scalars or written(toks, t.text))
                             for t in bound_toks):
        return None
    if any(t.kind == "op" and t.text not in ("+", "-", "*", "/", "(", ")") for t in bound_toks):
        return None
    return sc.source[bound_toks[0].start:bound_toks[-1].end], end


def _inner(toks: list[Tok], stmt: TokStmt) -> tuple[int, int]:
    """Source span of a statement, or of what is inside its braces when it is a block."""
    if stmt.kind == "block":
        return toks[stmt.a].end, toks[stmt.b - 1].start
    return toks[stmt.a].start, toks[stmt.b - 1].end


def stride_loop(sc: SourceScan, fn: Function, toks: list[Tok], stmts: list[TokStmt]) -> StrideLoop | None:
    """The grid-stride form of a kernel body of one of the three shapes (see the module doc), or None."""
    src = sc.source
    if len(stmts) == 1 and stmts[0].kind == "for" and stmts[0].body is not None:
        loop = stmts[0]
        h0, h1 = loop.header
        semis = [j for j in range(h0, h1) if toks[j].text == ";"]
        if len(semis) != 2:
            return None
        decl = _index_decl(toks, h0, semis[0])
        if decl is None:
            return None
        itype, var, i0 = decl
        step = "".join(t.text for t in toks[semis[1] + 1:h1])
        if step not in (f"{var}+=blockDim.x*gridDim.x", f"{var}+=gridDim.x*blockDim.x"):
            return None
        bound = _bound(sc, fn, toks, semis[0] + 1, semis[1], var, "<")
        if bound is None or bound[1] != semis[1]:
            return None
        body_toks = toks[loop.body.a:loop.body.b]
        out = StrideLoop("loop", itype, var, src[toks[i0].start:toks[semis[0] - 1].end], bound[0],
                         loop.a, loop.b, _inner(toks, loop.body), [])
    else:
        if len(stmts) < 2 or stmts[0].kind != "other" or stmts[1].kind != "if" or stmts[1].orelse is not None:
            return None
        decl = _index_decl(toks, stmts[0].a, stmts[0].b - 1)
        if decl is None:
            return None
        itype, var, i0 = decl
        guard = stmts[1]
        h0, h1 = guard.header
        init = src[toks[i0].start:toks[stmts[0].b - 2].end]
        if len(stmts) == 2 and (b := _bound(sc, fn, toks, h0, h1, var, "<")) is not None:
            body_toks = toks[guard.a:guard.b]
            out = StrideLoop("guard", itype, var, init, b[0], stmts[0].a, guard.b,
                             (toks[guard.a].start, toks[guard.b - 1].end), [])
        else:
            b = _bound(sc, fn, toks, h0, h1, var, ">=")
            ret = guard.body
            if (b is None or b[1] != h1 or ret is None or ret.kind != "return" or ret.b - ret.a != 2
                    or len(stmts) < 3):
                return None
            body_toks = toks[stmts[2].a:stmts[-1].b]
            out = StrideLoop("return", itype, var, init, b[0], stmts[0].a, stmts[-1].b,
                             (toks[stmts[2].a].start, toks[stmts[-1].b - 1].end), [])
    if any(t.kind == "id" and (_BUILTIN.match(t.text) or t.text in ("return", "goto")) for t in body_toks):
        return None
    if written(body_toks, var):
        return None
    try:
        launches = kernel_launches(sc, fn, kernel_params(sc, fn), out.bound)
    except Exception:
        return None
    if out.form != "loop" and not all(covers(*(host_value(sc, la, e) for e in (sc.expr(la.grid), rows, block)))
                                      for la, rows, block in launches):
        return None
    out.launches = launches
    return out


def host_value(sc: SourceScan, launch: Launch, expr: str) -> str:
    """``expr`` with its plain host locals replaced by their initialisers (``blocks`` → ``(n + threads - 1)
    / threads``, ``threads`` → ``256``), repeatedly: only locals of the launch's host function declared
    once (``[const] int NAME = EXPR;``) and never assigned, incremented or addressed afterwards, so the
    value at the launch is the initialiser's (whose own names are checked the same way)."""
    host = sc.host_function(launch, containing=True)
    if host is None:
        return expr
    body = sc.text[host.body_start:host.body_end]
    decls: dict[str, list[str]] = {}
    for m in EXPR_DECL.finditer(body):
        decls.setdefault(m.group(1), []).append(m.group(2).strip())
    values = {}
    for name, inits in decls.items():
        n = re.escape(name)
        plain = len(re.findall(rf"(?<![\w.]){n}\s*=(?!=)", body))  # the declaration's own `NAME =`
        other = re.search(rf"(?<![\w.]){n}\s*(?:[-+*/%&|^]|<<|>>)=|(?:\+\+|--)\s*{n}\b|\b{n}\s*(?:\+\+|--)"
                          rf"|&\s*{n}\b", body)
        if len(inits) == 1 and plain == 1 and not other:
            values[name] = inits[0]
    for _ in range(4):
        new = re.sub(r"(?<![\w.])[A-Za-z_]\w*\b",
                     lambda m: (v if re.fullmatch(r"\w+", v := values[m.group(0)]) else f"({v})")
                     if m.group(0) in values else m.group(0), expr)
        if new == expr:
            break
        expr = new
    return expr


def cap_grid_edit(sc: SourceScan, launch: Launch, cap: str) -> tuple[int, int, str]:
    """The edit that turns ``launch``'s grid ``G`` into ``((G) < cap ? (G) : cap)``."""
    raw = sc.source[launch.grid[0]:launch.grid[1]]
    g = raw.strip()
    g0 = launch.grid[0] + raw.index(g)
    return g0, g0 + len(g), f"(({g}) < {cap} ? ({g}) : {cap})"
