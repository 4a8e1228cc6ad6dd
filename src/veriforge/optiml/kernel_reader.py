"""Reading a kernel: the parsers and analyses the edit operators share.

The operators (:mod:`veriforge.optiml.operators`) rewrite kernels they fully understand, and they
understand them through the readers here, all working on the comment/string-blanked text of
:func:`veriforge.optiml.source_scan.scan` (positions are into it and into the source):

* **Expressions and statements** — :class:`Parser` builds :class:`Node`/:class:`Stmt` trees from the
  tokens of a kernel body (:func:`walk_nodes`, :func:`walk_stmts`); anything outside its small C
  subset raises :class:`~veriforge.cuda.source_reader.Refuse`.
* **The affine reader** — :class:`Poly` (integer polynomials over symbols), :func:`gcoord` (a thread's
  global coordinate), :class:`Analyzer` (resolves immutable ints to polynomials, tracks the conditions
  that dominate each access and collects every ``X[...]`` read of the pointer parameters).
* **The statement splitter** — :func:`parse_block` splits a token range into :class:`TokStmt`
  statements (``for``/``if``/blocks/simple statements, ``#pragma unroll`` attached);
  :func:`kernel_params` and :func:`kernel_launches` read a 1-D kernel's parameters and launches.
* **The element-wise matcher** — :func:`match_elementwise` and :func:`analyse_elementwise` recognise a
  1-D element-wise kernel (``i = blockIdx.x * blockDim.x + threadIdx.x``, guard ``i < B``) and
  classify every pointer access (:class:`ElemKernel`).

The file-level reading (functions, launches, constants) is :mod:`veriforge.optiml.source_scan`; the
tokenizer and bracket helpers :mod:`veriforge.optiml.source_tokens`; comments, literals and
functions of any CUDA source the project-wide :mod:`veriforge.cuda.source_reader`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from veriforge.optiml.source_scan import (
    DIM3_DECL,
    Function,
    Launch,
    SourceScan,
    eval_int,
    identifiers,
    param_parts,
    split_top,
)
from veriforge.optiml.source_tokens import (
    ASSIGN_OPS,
    Refuse,
    Tok,
    close_of,
    line_indent,
    statement_after,
    tokens,
    top_level,
)

__all__ = [
    "AXES",
    "FULL_MASK",
    "INT_CAST",
    "Access",
    "Analyzer",
    "Ctx",
    "ElemAccess",
    "ElemKernel",
    "ElemParam",
    "Mono",
    "Node",
    "Parser",
    "Poly",
    "Stmt",
    "TokStmt",
    "analyse_elementwise",
    "bracket_close",
    "file_level_names",
    "gcoord",
    "is_int_type",
    "kernel_launches",
    "kernel_params",
    "match_elementwise",
    "parse_block",
    "thread_index",
    "walk_nodes",
    "walk_stmts",
]

AXES = "xyz"
_BUILTINS = {f"{b}.{a}" for b in ("blockIdx", "blockDim", "threadIdx") for a in "xyz"}
_TYPE_WORDS = {"int", "float", "double", "unsigned", "signed", "long", "short", "char", "bool", "size_t",
               "const", "volatile", "auto", "half", "__half", "uint32_t", "int32_t", "int64_t", "uint64_t",
               "float2", "float4", "int2", "int4", "__restrict__"}


# ---------------------------------------------------------------------------------------------
# A small C expression / statement parser over the tokens of the blanked text (positions into it)


@dataclass
class Node:
    kind: str  # num id member index call unary post bin tern assign cast
    op: str = ""
    kids: list[Node] = field(default_factory=list)
    start: int = 0
    end: int = 0
    value: Any = None  # num: (int|float), id/member: name


@dataclass
class Stmt:
    kind: str  # block if for decl expr return jump empty pp
    kids: list[Stmt] = field(default_factory=list)
    exprs: list[Node | None] = field(default_factory=list)
    names: list[tuple[str, Node | None]] = field(default_factory=list)  # decl: (name, init)
    type: str = ""
    start: int = 0
    end: int = 0


_BIN_PREC = {"||": 4, "&&": 5, "|": 6, "^": 7, "&": 8, "==": 9, "!=": 9, "<": 10, "<=": 10, ">": 10, ">=": 10,
             "<<": 11, ">>": 11, "+": 12, "-": 12, "*": 13, "/": 13, "%": 13}


class Parser:
    def __init__(self, toks: list[Tok]) -> None:
        self.toks = toks
        self.i = 0

    # -- helpers
    def peek(self, k: int = 0) -> Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def at(self, text: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.text == text and t.kind in ("op", "id")

    def next(self) -> Tok:
        t = self.peek()
        if t is None:
            raise Refuse("unexpected end of kernel")
        self.i += 1
        return t

    def expect(self, text: str) -> Tok:
        t = self.next()
        if t.text != text:
            raise Refuse(f"expected {text!r}, got {t.text!r}")
        return t

    # -- expressions
    def expr(self, comma: bool = False) -> Node:
        node = self.assign()
        while comma and self.at(","):
            self.next()
            rhs = self.assign()
            node = Node("comma", ",", [node, rhs], node.start, rhs.end)
        return node

    def assign(self) -> Node:
        lhs = self.ternary()
        t = self.peek()
        if t is not None and t.kind == "op" and t.text in ASSIGN_OPS:
            self.next()
            rhs = self.assign()
            return Node("assign", t.text, [lhs, rhs], lhs.start, rhs.end)
        return lhs

    def ternary(self) -> Node:
        cond = self.binary(4)
        if self.at("?"):
            self.next()
            a = self.assign()
            self.expect(":")
            b = self.assign()
            return Node("tern", "?", [cond, a, b], cond.start, b.end)
        return cond

    def binary(self, prec: int) -> Node:
        lhs = self.unary()
        while True:
            t = self.peek()
            if t is None or t.kind != "op" or _BIN_PREC.get(t.text, 0) < prec:
                return lhs
            self.next()
            rhs = self.binary(_BIN_PREC[t.text] + 1)
            lhs = Node("bin", t.text, [lhs, rhs], lhs.start, rhs.end)

    def _is_cast(self) -> bool:
        if not self.at("("):
            return False
        j = 1
        seen = False
        while True:
            t = self.peek(j)
            if t is None:
                return False
            if t.kind == "id" and t.text in _TYPE_WORDS:
                seen = True
            elif t.text == "*" and seen:
                pass
            elif t.text == ")":
                return seen
            else:
                return False
            j += 1

    def unary(self) -> Node:
        t = self.peek()
        if t is None:
            raise Refuse("unexpected end of expression")
        if t.kind == "op" and t.text in ("-", "+", "!", "~", "*", "&", "++", "--"):
            self.next()
            operand = self.unary()
            return Node("unary", t.text, [operand], t.start, operand.end)
        if self._is_cast():
            self.next()
            words = []
            while not self.at(")"):
                words.append(self.next().text)
            self.next()
            operand = self.unary()
            return Node("cast", " ".join(words), [operand], t.start, operand.end)
        if t.kind == "id" and t.text == "sizeof":
            raise Refuse("sizeof")
        return self.postfix(self.primary())

    def primary(self) -> Node:
        t = self.next()
        if t.kind == "num":
            lit = t.text.rstrip("uUlL")
            if re.fullmatch(r"\d+", lit):
                return Node("num", start=t.start, end=t.end, value=int(lit))
            if re.fullmatch(r"0[xX][0-9a-fA-F]+", lit):
                return Node("num", start=t.start, end=t.end, value=int(lit, 16))
            return Node("num", start=t.start, end=t.end, value=float(lit.rstrip("fF")))
        if t.kind == "id":
            if t.text in _TYPE_WORDS or t.text in ("static_cast", "reinterpret_cast", "new", "delete", "this"):
                raise Refuse(f"unsupported expression at {t.text!r}")
            return Node("id", start=t.start, end=t.end, value=t.text)
        if t.text == "(":
            inner = self.expr(comma=True)
            close = self.expect(")")
            return Node(inner.kind, inner.op, inner.kids, t.start, close.end, inner.value) if inner.kind != "num" \
                else Node("num", start=t.start, end=close.end, value=inner.value)
        raise Refuse(f"unexpected {t.text!r}")

    def postfix(self, node: Node) -> Node:
        while True:
            t = self.peek()
            if t is None or t.kind != "op":
                return node
            if t.text == "[":
                self.next()
                idx = self.expr(comma=True)
                close = self.expect("]")
                node = Node("index", kids=[node, idx], start=node.start, end=close.end)
            elif t.text == "(":
                self.next()
                args: list[Node] = []
                while not self.at(")"):
                    args.append(self.assign())
                    if self.at(","):
                        self.next()
                close = self.expect(")")
                node = Node("call", kids=[node, *args], start=node.start, end=close.end)
            elif t.text == ".":
                self.next()
                name = self.next()
                if node.kind != "id" or name.kind != "id":
                    raise Refuse("member access")
                node = Node("member", start=node.start, end=name.end, value=f"{node.value}.{name.text}")
            elif t.text in ("++", "--"):
                self.next()
                node = Node("post", t.text, [node], node.start, t.end)
            elif t.text in ("->", "::"):
                raise Refuse(f"unsupported {t.text}")
            else:
                return node

    # -- statements
    def statements(self) -> list[Stmt]:
        out = []
        while self.peek() is not None:
            out.append(self.statement())
        return out

    def _decl_type(self) -> str | None:
        """The type words of a declaration starting here (consumed), or None (nothing consumed)."""
        j = 0
        words: list[str] = []
        while True:
            t = self.peek(j)
            if t is None or t.kind != "id" or t.text not in _TYPE_WORDS:
                break
            words.append(t.text)
            j += 1
        if not words:
            t = self.peek()
            if t is not None and t.kind == "id" and t.text in ("__shared__", "static", "extern", "dim3"):
                raise Refuse(f"unsupported declaration {t.text}")
            return None
        while self.peek(j) is not None and self.peek(j).text == "*":  # type: ignore[union-attr]
            words.append("*")
            j += 1
        self.i += j
        return " ".join(words)

    def statement(self) -> Stmt:
        t = self.peek()
        if t is None:
            raise Refuse("unexpected end of kernel")
        if t.kind == "pp":
            self.next()
            return Stmt("pp", start=t.start, end=t.end)
        if t.text == "{":
            self.next()
            kids = []
            while not self.at("}"):
                if self.peek() is None:
                    raise Refuse("unbalanced braces")
                kids.append(self.statement())
            close = self.next()
            return Stmt("block", kids, start=t.start, end=close.end)
        if t.text == ";":
            self.next()
            return Stmt("empty", start=t.start, end=t.end)
        if t.kind == "id" and t.text == "if":
            self.next()
            self.expect("(")
            cond = self.expr(comma=True)
            self.expect(")")
            then = self.statement()
            kids = [then]
            if self.at("else"):
                self.next()
                kids.append(self.statement())
            return Stmt("if", kids, [cond], start=t.start, end=kids[-1].end)
        if t.kind == "id" and t.text == "for":
            self.next()
            self.expect("(")
            init = None if self.at(";") else self.simple(";")
            if init is None:
                self.expect(";")
            cond = None if self.at(";") else self.expr(comma=True)
            self.expect(";")
            step = None if self.at(")") else self.expr(comma=True)
            self.expect(")")
            body = self.statement()
            return Stmt("for", [body] + ([init] if init else []), [cond, step], start=t.start, end=body.end)
        if t.kind == "id" and t.text == "return":
            self.next()
            value = None if self.at(";") else self.expr(comma=True)
            close = self.expect(";")
            return Stmt("return", exprs=[value], start=t.start, end=close.end)
        if t.kind == "id" and t.text in ("break", "continue"):
            self.next()
            close = self.expect(";")
            return Stmt("jump", start=t.start, end=close.end)
        if t.kind == "id" and t.text in ("while", "do", "switch", "goto", "case", "default", "asm", "__syncthreads",
                                         "__syncwarp", "__shared__", "extern", "static", "template", "typedef"):
            raise Refuse(f"unsupported statement {t.text}")
        return self.simple(";")

    def simple(self, terminator: str) -> Stmt:
        """A declaration or expression statement ending in ``terminator`` (consumed)."""
        first = self.peek()
        if first is None:
            raise Refuse("unexpected end of kernel")
        typ = self._decl_type()
        if typ is not None:
            names: list[tuple[str, Node | None]] = []
            while True:
                name = self.next()
                if name.kind != "id":
                    raise Refuse("unsupported declarator")
                if self.at("["):
                    raise Refuse("local array")
                init = None
                if self.at("="):
                    self.next()
                    init = self.assign()
                names.append((name.text, init))
                if self.at(","):
                    self.next()
                    continue
                break
            close = self.expect(terminator)
            return Stmt("decl", names=names, type=typ, start=first.start, end=close.end)
        e = self.expr(comma=True)
        close = self.expect(terminator)
        return Stmt("expr", exprs=[e], start=first.start, end=close.end)


def walk_nodes(node: Node | None) -> Iterator[Node]:
    if node is None:
        return
    yield node
    for k in node.kids:
        yield from walk_nodes(k)


def walk_stmts(stmt: Stmt) -> Iterator[Stmt]:
    yield stmt
    for k in stmt.kids:
        yield from walk_stmts(k)


def _stmt_exprs(stmt: Stmt) -> Iterator[Node]:
    for s in walk_stmts(stmt):
        for e in s.exprs:
            if e is not None:
                yield e
        for _, init in s.names:
            if init is not None:
                yield init


# ---------------------------------------------------------------------------------------------
# Integer polynomials over symbols (the affine normaliser, with products of symbols allowed)

Mono = tuple[str, ...]


class Poly:
    __slots__ = ("terms",)

    def __init__(self, terms: dict[Mono, int] | None = None) -> None:
        self.terms = {m: c for m, c in (terms or {}).items() if c != 0}

    @staticmethod
    def const(value: int) -> Poly:
        return Poly({(): value})

    @staticmethod
    def sym(name: str) -> Poly:
        return Poly({(name,): 1})

    def __add__(self, other: Poly) -> Poly:
        out = dict(self.terms)
        for m, c in other.terms.items():
            out[m] = out.get(m, 0) + c
        return Poly(out)

    def __neg__(self) -> Poly:
        return Poly({m: -c for m, c in self.terms.items()})

    def __sub__(self, other: Poly) -> Poly:
        return self + (-other)

    def __mul__(self, other: Poly) -> Poly:
        out: dict[Mono, int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return Poly(out)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Poly) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(frozenset(self.terms.items()))

    def __repr__(self) -> str:
        return f"Poly({self.render()})"

    def symbols(self) -> set[str]:
        return {s for m in self.terms for s in m}

    def constant(self) -> int:
        return self.terms.get((), 0)

    def is_const(self) -> bool:
        return not self.symbols()

    def render(self) -> str:
        """C text (symbols are C names; monomials in a stable order, constant last)."""
        parts: list[tuple[int, str]] = []
        for m in sorted(self.terms, key=lambda m: (len(m) == 0, m)):
            c = self.terms[m]
            body = " * ".join(m)
            if not body:
                parts.append((c, str(abs(c))))
            elif abs(c) == 1:
                parts.append((c, body))
            else:
                parts.append((c, f"{abs(c)} * {body}"))
        if not parts:
            return "0"
        text = ("-" if parts[0][0] < 0 else "") + parts[0][1]
        for c, p in parts[1:]:
            text += f" {'-' if c < 0 else '+'} {p}"
        return text

    def split_by(self, sym: str) -> tuple[Poly, Poly] | None:
        """(q, r) with self = q * sym + r and sym in no monomial of r; None when sym appears squared."""
        q: dict[Mono, int] = {}
        r: dict[Mono, int] = {}
        for m, c in self.terms.items():
            n = m.count(sym)
            if n > 1:
                return None
            if n == 1:
                rest = list(m)
                rest.remove(sym)
                q[tuple(rest)] = c
            else:
                r[m] = c
        return Poly(q), Poly(r)


def gcoord(axis: str) -> Poly:
    return Poly.sym(f"blockDim.{axis}") * Poly.sym(f"blockIdx.{axis}") + Poly.sym(f"threadIdx.{axis}")


# ---------------------------------------------------------------------------------------------
# Kernel analysis


Cond = tuple[Node, bool, dict[str, "Poly"]]  # a dominating condition, its polarity, the variables then


@dataclass
class Access:
    node: Node
    poly: Poly
    facts: list[Poly]  # each: poly >= 0
    diseqs: list[Poly]  # each: poly != 0
    conds: list[Cond]


@dataclass
class Ctx:
    env: dict[str, Poly]  # immutable int locals (resolved), int params, loop variables
    facts: list[Poly]
    diseqs: list[Poly]
    conds: list[Cond] = field(default_factory=list)

    def copy(self) -> Ctx:
        return Ctx(dict(self.env), list(self.facts), list(self.diseqs), list(self.conds))

    def assume(self, an: Analyzer, node: Node, positive: bool) -> Ctx:
        facts, diseqs = an.cond_facts(node, positive, self.env)
        return Ctx(self.env, self.facts + facts, self.diseqs + diseqs, [*self.conds, (node, positive, dict(self.env))])


class Analyzer:
    """Walks one kernel: resolves int variables to polynomials, tracks dominating conditions and
    collects every ``X[...]`` read of the candidate pointers with the facts that hold there."""

    def __init__(self, sc: SourceScan, fn: Function, block_consts: dict[str, str] | None = None,
                 dynamic: bool = False) -> None:
        self.sc = sc
        # With ``dynamic``, ``for`` loops with a constant start and a bound over unmodified int parameters
        # (``j < k``) are resolved too: their variables go to ``dyn_loops`` as (start, last) with a symbolic last.
        self.dynamic = dynamic
        self.dyn_loops: dict[str, tuple[int, Poly]] = {}
        self.fn = fn
        self.consts = sc.constants()
        # File-level constants that are the launch's block size in some axes (``dim3 block(B, B, B)``):
        # symbols, not values, and ``B * blockIdx.a`` reads as ``blockDim.a * blockIdx.a`` (equal at run time).
        self.block_consts = dict(block_consts or {})
        self.used_consts: set[str] = set()
        self.params = _params(sc, fn)
        toks = tokens(sc.text, fn.body_start, fn.body_end)
        self.body = Parser(toks).statements()
        self.loops: dict[str, tuple[int, int]] = {}
        self.accesses: dict[str, list[Access]] = {}
        self.bad: set[str] = set()  # pointers used otherwise than read as X[...]
        self._mutated = self._mutated_names()
        self._decls = self._declared_names()
        self.int_params = {n for t, n in self.params
                           if is_int_type(t) and n not in self._mutated and self._decls.get(n, 0) == 1}
        self.loop_scoped = self._loop_scoped_names()
        self.pointers = {n: t for t, n in self.params if t.count("*") == 1}

    # -- preparation
    def _mutated_names(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for stmt in self.body:
            for e in _stmt_exprs(stmt):
                for n in walk_nodes(e):
                    target = None
                    if n.kind == "assign" or (n.kind in ("unary", "post") and n.op in ("++", "--")):
                        target = n.kids[0]
                    elif n.kind == "unary" and n.op == "&" and n.kids[0].kind == "id":
                        target = n.kids[0]
                    if target is not None and target.kind == "id":
                        out[target.value] = out.get(target.value, 0) + 1
        return out

    def _declared_names(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for stmt in self.body:
            for s in walk_stmts(stmt):
                for name, _ in s.names:
                    out[name] = out.get(name, 0) + 1
        for _, name in self.params:
            out[name] = out.get(name, 0) + 1
        return out

    def _loop_scoped_names(self) -> set[str]:
        """Names whose value may change from one loop iteration to the next: every name declared in
        a ``for`` header or body."""
        out: set[str] = set()
        for stmt in self.body:
            for s in walk_stmts(stmt):
                if s.kind == "for":
                    for kid in s.kids:
                        for inner in walk_stmts(kid):
                            out.update(name for name, _ in inner.names)
        return out

    # -- normalisation
    def poly(self, node: Node, env: dict[str, Poly]) -> Poly | None:
        k = node.kind
        if k == "num":
            return Poly.const(node.value) if isinstance(node.value, int) else None
        if k == "id":
            name = node.value
            if name in env:
                return env[name]
            if name in self.block_consts and name not in self._decls:
                return Poly.sym(name)
            if name in self.consts and name not in self._decls:
                self.used_consts.add(name)
                return Poly.const(self.consts[name])
            return None
        if k == "member":
            return Poly.sym(node.value) if node.value in _BUILTINS else None
        if k == "cast":
            return self.poly(node.kids[0], env) if node.op in ("int", "unsigned", "unsigned int") else None
        if k == "unary" and node.op in ("-", "+"):
            p = self.poly(node.kids[0], env)
            return None if p is None else (-p if node.op == "-" else p)
        if k == "bin" and node.op in ("+", "-", "*"):
            a = self.poly(node.kids[0], env)
            b = self.poly(node.kids[1], env)
            if a is None or b is None:
                return None
            return a + b if node.op == "+" else a - b if node.op == "-" else self._canon(a * b)
        return None

    def _canon(self, p: Poly) -> Poly:
        if not self.block_consts:
            return p
        out: dict[Mono, int] = {}
        for m, c in p.terms.items():
            mono = list(m)
            for name, axes in self.block_consts.items():
                for a in axes:
                    if f"blockIdx.{a}" in mono and name in mono:
                        mono.remove(name)
                        mono.append(f"blockDim.{a}")
            key = tuple(sorted(mono))
            out[key] = out.get(key, 0) + c
        return Poly(out)

    def cond_facts(self, node: Node, positive: bool, env: dict[str, Poly]) -> tuple[list[Poly], list[Poly]]:
        """Linear facts (``p >= 0``) and disequalities (``p != 0``) implied by ``node`` being true/false."""
        if node.kind == "unary" and node.op == "!":
            return self.cond_facts(node.kids[0], not positive, env)
        if node.kind == "bin" and node.op in ("&&", "||"):
            if (node.op == "&&") == positive:
                a = self.cond_facts(node.kids[0], positive, env)
                b = self.cond_facts(node.kids[1], positive, env)
                return a[0] + b[0], a[1] + b[1]
            return [], []
        if node.kind == "bin" and node.op in ("<", "<=", ">", ">=", "==", "!="):
            a = self.poly(node.kids[0], env)
            b = self.poly(node.kids[1], env)
            if a is None or b is None:
                return [], []
            op = node.op if positive else {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}[node.op]
            one = Poly.const(1)
            if op == "<":
                return [b - a - one], []
            if op == "<=":
                return [b - a], []
            if op == ">":
                return [a - b - one], []
            if op == ">=":
                return [a - b], []
            if op == "==":
                return [a - b, b - a], []
            return [], [a - b]
        return [], []

    # -- walking
    def run(self) -> None:
        ctx = Ctx({n: Poly.sym(n) for n in self.int_params}, [gcoord(a) for a in AXES], [])
        self.block(self.body, ctx)

    def block(self, stmts: list[Stmt], ctx: Ctx) -> None:
        ctx = ctx.copy()
        for s in stmts:
            self.stmt(s, ctx)
            if s.kind == "if" and _always_returns(s.kids[0]) and len(s.kids) == 1:
                after = ctx.assume(self, s.exprs[0], False)  # type: ignore[arg-type]
                ctx.facts, ctx.diseqs, ctx.conds = after.facts, after.diseqs, after.conds

    def stmt(self, s: Stmt, ctx: Ctx) -> None:
        if s.kind == "block":
            self.block(s.kids, ctx)
        elif s.kind == "if":
            cond = s.exprs[0]
            assert cond is not None
            self.expr(cond, ctx)
            self.stmt_scoped(s.kids[0], ctx.assume(self, cond, True))
            if len(s.kids) > 1:
                self.stmt_scoped(s.kids[1], ctx.assume(self, cond, False))
        elif s.kind == "for":
            self.for_loop(s, ctx)
        elif s.kind == "decl":
            for name, init in s.names:
                if init is not None:
                    self.expr(init, ctx)
                if is_int_type(s.type) and init is not None and self._mutated.get(name, 0) == 0 \
                        and self._decls.get(name, 0) == 1:
                    p = self.poly(init, ctx.env)
                    if p is not None:
                        ctx.env[name] = p
                        continue
                ctx.env.pop(name, None)
        elif s.kind in ("expr", "return"):
            for e in s.exprs:
                if e is not None:
                    self.expr(e, ctx)

    def stmt_scoped(self, s: Stmt, ctx: Ctx) -> None:
        self.block([s], ctx)

    def for_loop(self, s: Stmt, ctx: Ctx) -> None:
        body = s.kids[0]
        init = s.kids[1] if len(s.kids) > 1 else None
        cond, step = s.exprs
        inner = ctx.copy()
        var = None
        if init is not None:
            self.stmt(init, inner.copy())
            rng = self._loop_range(init, cond, step)
            if rng is not None:
                var, lo, hi = rng
                self.loops[var] = (lo, hi)
                inner.env[var] = Poly.sym(var)
                inner.facts += [Poly.sym(var) - Poly.const(lo), Poly.const(hi) - Poly.sym(var)]
            elif self.dynamic and (dyn := self._dyn_loop_range(init, cond, step)) is not None:
                var, first, last = dyn
                self.dyn_loops[var] = (first, last)
                inner.env[var] = Poly.sym(var)
                inner.facts += [Poly.sym(var) - Poly.const(first), last - Poly.sym(var)]
            elif init.kind == "decl":
                for name, _ in init.names:
                    inner.env.pop(name, None)
        for e in (cond, step):
            if e is not None:
                self.expr(e, inner)
        self.stmt_scoped(body, inner)

    def _unit_loop(self, init: Stmt, cond: Node | None, step: Node | None) -> tuple[str, int, Node] | None:
        """``for (int k = A; k < / <= B; ++k)`` with constant A and k changed only by the step:
        ``(k, A, B's node)`` (``cond.op`` tells ``<`` from ``<=``)."""
        if init.kind != "decl" or len(init.names) != 1 or not is_int_type(init.type) or cond is None or step is None:
            return None
        var, start = init.names[0]
        if start is None or self._decls.get(var, 0) != 1 or self._mutated.get(var, 0) != 1:
            return None
        a = self.poly(start, {})
        if a is None or not a.is_const():
            return None
        inc = (step.kind in ("unary", "post") and step.op == "++") or (
            step.kind == "assign" and step.op == "+=" and step.kids[1].kind == "num" and step.kids[1].value == 1)
        if not inc or step.kids[0].kind != "id" or step.kids[0].value != var:
            return None
        if cond.kind != "bin" or cond.op not in ("<", "<=") or cond.kids[0].kind != "id" or cond.kids[0].value != var:
            return None
        return var, a.constant(), cond.kids[1]

    def _loop_range(self, init: Stmt, cond: Node | None, step: Node | None) -> tuple[str, int, int] | None:
        """``for (int k = A; k <= B; ++k)`` with constant A, B and k changed only by the step."""
        loop = self._unit_loop(init, cond, step)
        if loop is None or cond is None:
            return None
        var, lo, bound = loop
        b = self.poly(bound, {})
        if b is None or not b.is_const():
            return None
        hi = b.constant() - (1 if cond.op == "<" else 0)
        if hi < lo:
            return None
        return var, lo, hi

    def _dyn_loop_range(self, init: Stmt, cond: Node | None, step: Node | None) -> tuple[str, int, Poly] | None:
        """``for (int j = A; j < k; ++j)`` with constant A and a bound linear in unmodified int parameters."""
        loop = self._unit_loop(init, cond, step)
        if loop is None or cond is None:
            return None
        var, lo, bound = loop
        b = self.poly(bound, {n: Poly.sym(n) for n in self.int_params})
        if b is None or b.is_const() or not all(len(m) <= 1 for m in b.terms) or not b.symbols() <= self.int_params:
            return None
        return var, lo, b - Poly.const(1 if cond.op == "<" else 0)

    def expr(self, node: Node, ctx: Ctx) -> None:
        k = node.kind
        if k == "index" and node.kids[0].kind == "id" and node.kids[0].value in self.pointers:
            name = node.kids[0].value
            p = self.poly(node.kids[1], ctx.env)
            if p is None:
                self.bad.add(name)
            else:
                self.accesses.setdefault(name, []).append(
                    Access(node, p, list(ctx.facts), list(ctx.diseqs), list(ctx.conds)))
            self.expr(node.kids[1], ctx)
            return
        if k == "id" and node.value in self.pointers:
            self.bad.add(node.value)  # used otherwise than X[...]: passed on, aliased, offset
            return
        if k in ("assign",) or (k in ("unary", "post") and node.op in ("++", "--", "&")):
            target = node.kids[0]
            if target.kind == "index" and target.kids[0].kind == "id":
                self.bad.add(target.kids[0].value)
            elif target.kind == "unary" and target.op == "*":
                for n in walk_nodes(target):
                    if n.kind == "id":
                        self.bad.add(n.value)
        if k == "unary" and node.op == "*":
            for n in walk_nodes(node):
                if n.kind == "id":
                    self.bad.add(n.value)
        if k == "bin" and node.op in ("&&", "||"):
            self.expr(node.kids[0], ctx)
            self.expr(node.kids[1], ctx.assume(self, node.kids[0], node.op == "&&"))
            return
        if k == "tern":
            c, a, b = node.kids
            self.expr(c, ctx)
            self.expr(a, ctx.assume(self, c, True))
            self.expr(b, ctx.assume(self, c, False))
            return
        for kid in node.kids:
            self.expr(kid, ctx)


def is_int_type(t: str) -> bool:
    words = [w for w in t.split() if w not in ("const", "__restrict__")]
    return words == ["int"]


def _always_returns(s: Stmt) -> bool:
    if s.kind == "return":
        return True
    if s.kind == "block":
        return bool(s.kids) and _always_returns(s.kids[-1])
    if s.kind == "if" and len(s.kids) == 2:
        return _always_returns(s.kids[0]) and _always_returns(s.kids[1])
    return False


def _params(sc: SourceScan, fn: Function) -> list[tuple[str, str]]:
    parts = param_parts(sc.text, fn)
    if parts is None:
        raise Refuse("no parameter list")
    out = []
    for part in parts:
        m = re.fullmatch(r"\s*(.*?[\s*&])\s*([A-Za-z_]\w*)\s*", part, re.S)
        if not m:
            if part.strip() == "void":
                continue
            raise Refuse(f"parameter {part.strip()!r}")
        out.append((" ".join(m.group(1).replace("*", " * ").split()), m.group(2)))
    return out


# ---------------------------------------------------------------------------------------------
# Statements as token ranges


FULL_MASK = "0xffffffffu"


@dataclass
class TokStmt:
    kind: str  # decl | expr | for | if | block | return | empty | other
    a: int  # token range [a, b)
    b: int
    pragmas: list[int] = field(default_factory=list)
    children: list[TokStmt] = field(default_factory=list)
    header: tuple[int, int] = (0, 0)  # for/if: tokens inside the parentheses
    body: TokStmt | None = None
    orelse: TokStmt | None = None


def bracket_close(toks: list[Tok], i: int) -> int:
    """Index of the bracket closing ``toks[i]``."""
    k = close_of(toks, i, toks[i].text)
    if k is None:
        raise Refuse("unbalanced brackets")
    return k


def parse_block(toks: list[Tok], a: int, b: int) -> list[TokStmt]:
    out, i, pragmas = [], a, []
    while i < b:
        if toks[i].kind == "pp":
            if not re.fullmatch(r"#\s*pragma\s+unroll(\s+\d+)?\s*", toks[i].text):
                raise Refuse(f"preprocessor line {toks[i].text!r} in the kernel")
            pragmas.append(i)
            i += 1
            continue
        stmt = _parse_stmt(toks, i, b)
        stmt.pragmas = pragmas
        pragmas = []
        out.append(stmt)
        i = stmt.b
    if pragmas:
        raise Refuse("dangling pragma")
    return out


def _parse_stmt(toks: list[Tok], i: int, b: int) -> TokStmt:
    t = toks[i].text
    if t == "{":
        j = bracket_close(toks, i)
        return TokStmt("block", i, j + 1, children=parse_block(toks, i + 1, j))
    if t == ";":
        return TokStmt("empty", i, i + 1)
    if t in ("for", "if") and toks[i].kind == "id":
        if i + 1 >= b or toks[i + 1].text != "(":
            raise Refuse(f"malformed {t}")
        close = bracket_close(toks, i + 1)
        if close + 1 >= b:
            raise Refuse(f"{t} without a body")
        body = _parse_stmt(toks, close + 1, b)
        stmt = TokStmt(t, i, body.b, header=(i + 2, close), body=body)
        if t == "if" and body.b < b and toks[body.b].text == "else":
            stmt.orelse = _parse_stmt(toks, body.b + 1, b)
            stmt.b = stmt.orelse.b
        return stmt
    j = next((k for k in top_level(toks, i, b, balanced=True) if toks[k].text == ";"), b)
    if j >= b:
        raise Refuse("statement without ';'")
    kind = "return" if t == "return" else "other"
    return TokStmt(kind, i, j + 1)


def kernel_params(sc: SourceScan, fn: Function) -> list[tuple[str, bool]]:
    if "template" in sc.text[fn.header_start:fn.body_start]:
        raise Refuse("template kernel")
    parts = param_parts(sc.text, fn, at_call=True)
    if parts is None:
        raise Refuse("kernel header")
    out = []
    for part in parts:
        part = part.strip()
        if part == "void":
            continue
        m = re.search(r"([A-Za-z_]\w*)\s*(\[\s*\])?$", part)
        if not m:
            raise Refuse("unsupported parameter")
        out.append((m.group(1), "*" in part or "[" in part or "&" in part))
    return out


def kernel_launches(sc: SourceScan, fn: Function, params: list[tuple[str, bool]], bound: str
              ) -> list[tuple[Launch, str, str]]:
    out = []
    sites = sc.launches_of(fn.name)
    if not sites:
        raise Refuse("kernel is never launched")
    for launch in sites:
        grid, block = sc.expr(launch.grid), sc.expr(launch.block)
        if "dim3" in grid or "dim3" in block:
            raise Refuse("dim3 launch")
        host = sc.host_function(launch)
        if host is None:
            raise Refuse("launch outside a function")
        host_body = sc.text[host.body_start:host.body_end]
        dim3_names = {m.group(1) for m in DIM3_DECL.finditer(host_body)}
        if set(re.findall(r"[A-Za-z_]\w*", grid + " " + block)) & dim3_names:
            raise Refuse("dim3 launch")
        dims = sc.block_dims(launch)
        if dims is None or dims[1] != 1 or dims[2] != 1 or dims[0] % 32 or dims[0] > 1024:
            raise Refuse("block size not a resolvable multiple of 32")
        end = sc.text.find(">>>", launch.block[1])
        k = end + 3
        while k < len(sc.text) and sc.text[k].isspace():
            k += 1
        if k >= len(sc.text) or sc.text[k] != "(":
            raise Refuse("launch arguments")
        j = close_of(sc.text, k)
        if j is None:  # an unclosed call: the arguments run to the end of the text
            j = len(sc.text)
        args = [sc.source[a:b].strip() for a, b in split_top(sc.text, k + 1, j)]
        if len(args) != len(params):
            raise Refuse("launch argument count")
        used = set(re.findall(r"[A-Za-z_]\w*", bound))
        for (name, _), arg in zip(params, args, strict=True):  # repeated in the grid: must be a plain value
            calls = [f for f in re.findall(r"(\w+)\s*\(", arg) if f not in ("min", "max", "static_cast", "sizeof")]
            if name in used and (re.search(r"\+\+|--|(?<![=!<>])=(?!=)", arg) or calls):
                raise Refuse("launch argument with a side effect")
        mapping = {name: arg for (name, _), arg in zip(params, args, strict=True)}

        def sub(m: re.Match[str], mapping: dict[str, str] = mapping) -> str:
            arg = mapping.get(m.group(0))
            if arg is None:
                return m.group(0)
            return arg if re.fullmatch(r"[A-Za-z_]\w*|\d+", arg) else f"({arg})"

        rows = re.sub(r"(?<![\w.])[A-Za-z_]\w*", sub, bound)
        out.append((launch, rows, sc.source[launch.block[0]:launch.block[1]].strip()))
    return out


# ---------------------------------------------------------------------------------------------
# 1-D element-wise kernels


_FOUR_BYTE = {
    "float": "float",
    "int": "int", "signed": "int", "signed int": "int", "int32_t": "int",
    "unsigned": "uint", "unsigned int": "uint", "uint32_t": "uint",
}
_INDEX_TYPE = re.compile(
    r"(?:const\s+)?(?:unsigned\s+int|unsigned|int|long\s+long|long|size_t|int64_t|uint32_t|uint64_t|ptrdiff_t)"
)
INT_CAST = re.compile(
    r"\(\s*(?:unsigned\s+int|unsigned|int|long\s+long|long|size_t|int64_t|uint32_t|uint64_t|ptrdiff_t)\s*\)"
    r"|static_cast\s*<\s*[\w\s]+>"
)
_ELEM_FORBIDDEN = re.compile(
    r"__shared__|__syncthreads|__syncwarp|__shfl|__ballot|__any|__all|__activemask|__match|__reduce\w*_sync"
    r"|__threadfence|\batomic\w*|\bcooperative_groups\b|\bcg::|\bthis_thread_block\b|\bgrid_group\b|\basm\b"
    r"|\bgoto\b|\breturn\b|\bgridDim\b|\b(?:threadIdx|blockIdx|blockDim)\b|->|\bprintf\b|\bclock"
    r"|\bnew\b|\bdelete\b|\bmalloc\b|\bmemcpy\b|\bmemset\b|\bvf_\w*|<<<|\bcuda[A-Z]\w*"
)
_ELEM_FORBIDDEN_CALLEE = re.compile(_ELEM_FORBIDDEN.pattern.replace(r"|\breturn\b", ""))
_WRITE_ANY = re.compile(r"\]\s*(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--)|(?:^|[;{}])\s*(?:\+\+|--)?\s*\(?\s*\*")
_ELEM_TYPE_WORDS = (r"(?:int|unsigned|signed|long|short|char|float|double|size_t|ptrdiff_t|auto|bool|int\d+_t|uint\d+_t"
               r"|const|half|__half|__nv_bfloat16|(?:float|int|uint|double|char|short|long)[1-4])")
_ASSIGNED = re.compile(r"\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*(?:[-+*/%&|^]|<<|>>)?=(?!=)")


@dataclass
class ElemParam:
    name: str
    type_text: str
    pointer: bool
    elem: str | None  # "float" | "int" | "uint" for 4-byte element pointers


@dataclass
class ElemAccess:
    start: int  # into the source (absolute)
    end: int
    name: str
    index: str
    write: bool  # assigned (=, op=, ++, --)
    read: bool  # value used (everything but a plain `=` target)
    plain_top_store: bool  # `P[i] = …;` as an unconditional top-level statement of BODY


@dataclass
class ElemKernel:
    name: str
    params: list[ElemParam]
    ivar: str
    itype: str
    init: str
    bound: str  # kernel-side expression of the bound B (i < B)
    body: tuple[int, int]  # BODY span into the source
    span: tuple[int, int]  # what is replaced: from the index declaration to the kernel's closing brace
    indent: str
    vec: dict[str, str] = field(default_factory=dict)  # vectorised pointer -> element kind
    mode: dict[str, str] = field(default_factory=dict)  # pointer -> "ro" | "rw" | "wo"
    accesses: list[ElemAccess] = field(default_factory=list)
    scalar_reads: list[str] = field(default_factory=list)  # i-dependent loads that stay scalar


# ---------------------------------------------------------------------------------------------
# Kernel matching


def _elem_params(sc: SourceScan, fn: Any) -> list[ElemParam] | None:
    parts = param_parts(sc.text, fn, nested=True)
    if parts is None:
        return None
    out = []
    for raw in parts:
        part = " ".join(raw.split())
        m = re.fullmatch(r"(.*?)\b([A-Za-z_]\w*)\s*", part)
        if not m or not m.group(1).strip():
            return None
        ty = m.group(1).strip()
        pointer = "*" in ty or "&" in ty
        elem = None
        if ty.count("*") == 1 and "&" not in ty:
            base = " ".join(re.sub(r"\b(?:const|volatile|__restrict__|restrict|__restrict)\b|\*", " ", ty).split())
            elem = _FOUR_BYTE.get(base)
        out.append(ElemParam(m.group(2), ty, pointer, elem))
    return out


def thread_index(init: str) -> bool:
    """``blockIdx.x * blockDim.x + threadIdx.x`` in any order, with integer casts and parentheses."""
    e = INT_CAST.sub("", init)
    e = re.sub(r"\s+", "", e)
    while e.startswith("(") and e.endswith(")") and close_of(e, 0) == len(e) - 1:
        e = e[1:-1]
    terms = e.split("+")
    if len(terms) != 2:
        return False
    terms = [t[1:-1] if t.startswith("(") and t.endswith(")") else t for t in terms]
    if "threadIdx.x" not in terms:
        return False
    other = terms[1 - terms.index("threadIdx.x")]
    return sorted(f.strip("()") for f in other.split("*")) == ["blockDim.x", "blockIdx.x"]


def match_elementwise(sc: SourceScan, fn: Any) -> ElemKernel | None:
    text, src = sc.text, sc.source
    params = _elem_params(sc, fn)
    if params is None:
        return None
    b0, b1 = fn.body_start, fn.body_end
    body = text[b0:b1]
    decl = re.match(rf"\s*({_INDEX_TYPE.pattern})\s+([A-Za-z_]\w*)\s*=\s*([^;]+);", body)
    if not decl or not thread_index(decl.group(3)):
        return None
    itype = " ".join(decl.group(1).split())
    ivar, init = decl.group(2), " ".join(src[b0 + decl.start(3):b0 + decl.end(3)].split())
    indent = line_indent(src, b0 + decl.start(2), text)
    pos = b0 + decl.end()
    guard = re.compile(r"\s*if\s*\(").match(text, pos)
    if not guard:
        return None
    close = close_of(text, guard.end() - 1)
    if close is None:
        return None
    cond = text[guard.end():close].strip()
    iv = re.escape(ivar)
    less = re.fullmatch(rf"{iv}\s*<\s*([^<>=!&|?,]+)|([^<>=!&|?,]+?)\s*>\s*{iv}", cond)
    geq = re.fullmatch(rf"{iv}\s*>=\s*([^<>=!&|?,]+)|([^<>=!&|?,]+?)\s*<=\s*{iv}", cond)
    after = close + 1
    if less:
        bound = (less.group(1) or less.group(2)).strip()
        k = after
        while k < b1 and text[k].isspace():
            k += 1
        if k < b1 and text[k] == "{":
            end = close_of(text, k, "{")
            if end is None or text[end + 1:b1].strip():
                return None
            span = (k + 1, end)
        else:
            stmt = statement_after(text, after)
            if re.match(r"\s*(?:if|for|while|do|switch|else)\b", stmt):
                return None
            s = text.find(stmt, after)
            span = (s, s + len(stmt))
            if text[span[1]:b1].strip():
                return None
    elif geq:
        bound = (geq.group(1) or geq.group(2)).strip()
        ret = re.compile(r"\s*return\s*;").match(text, after)
        if not ret:
            return None
        span = (ret.end(), b1)
    else:
        return None
    if re.search(rf"\b{iv}\b", bound) or not bound:
        return None
    return ElemKernel(fn.name, params, ivar, itype, init, " ".join(bound.split()), span, (b0 + decl.start(1), b1),
                   indent)


def analyse_elementwise(sc: SourceScan, k: ElemKernel, vector: bool = True) -> bool:
    """Classify BODY's accesses into ``k``; False when the kernel must be refused.

    ``vector``: for ``vectorize`` — written pointers must have 4-byte elements, at least one ``P[i]``
    must be vectorisable, and loops over memory per element are refused (they lose on the cost
    model, see vectorize's doc). Without it only what makes elements independent is checked (a
    written pointer is only ever accessed at ``[i]``, nothing else written, no thread built-ins,
    scalars, ``i`` and device functions as above): what ``coarsen`` needs."""
    text = sc.text
    s0, s1 = k.body
    body = text[s0:s1]
    iv = re.escape(k.ivar)
    if _ELEM_FORBIDDEN.search(body) or re.search(r"^\s*#\s*(?:define|undef|include)", body, re.M):
        return False
    fn_start = text.rfind("__global__", 0, k.span[0])
    if re.search(r"\bvf_\w*", text[fn_start:k.span[1]]):
        return False  # the names this operator declares are taken
    # `i` keeps its meaning: never modified or addressed; neither it nor a parameter is redeclared.
    if re.search(rf"\b{iv}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*{iv}\b|\b{iv}\s*(?:\+\+|--)"
                 rf"|(?<![&\w)\]])\s*&\s*{iv}\b", body):
        return False
    shadowed = "|".join(re.escape(n) for n in [k.ivar, *(p.name for p in k.params)])
    if re.search(rf"\b{_ELEM_TYPE_WORDS}\b[\s*&]*\b(?:{shadowed})\s*(?:=|;|,|\[|\)|:)", body):
        return False
    # Macros that hide memory accesses or assignments would escape the checks below.
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(.*)$", text, re.M):
        if re.search(r"[\[=]|\+\+|--|\batomic|__sync|\bvf_", m.group(2)) and re.search(rf"\b{m.group(1)}\b", body):
            return False
    # Writes through `*p`, `(*p)`, `++*p`: not seen as subscripts, so refused.
    if re.search(r"(?:^|[;{}])\s*(?:\+\+|--)?\s*\(?\s*\*", body):
        return False
    by_name = {p.name: p for p in k.params}
    local_arrays = set(re.findall(r"\b(?!(?:else|return|case|do)\b)[A-Za-z_]\w*\s+([A-Za-z_]\w*)\s*\[[^\]]*\]\s*"
                                  r"(?:=|;|,)", body))
    # Scalars that live outside BODY (parameters, file-level variables) stay unassigned: the VEC
    # bodies of one thread would otherwise see each other's updates.
    outside = {p.name for p in k.params} | file_level_names(sc)
    for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)\s*(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--)"
                         r"|(?:\+\+|--)\s*([A-Za-z_]\w*)", body):
        if (m.group(1) or m.group(2)) in outside:
            return False
    if not _callees_pure(sc, body):
        return False
    tainted = _tainted(body, k.ivar, set(by_name))
    loops = _elem_loops(sc, s0, s1)
    depth = _depths(body)

    # Every pointer parameter appears only subscripted.
    for p in k.params:
        if not p.pointer:
            continue
        for m in re.finditer(rf"(?<![\w.])({re.escape(p.name)})\b", body):
            nxt = re.compile(r"\s*\[").match(body, m.end())
            if not nxt:
                return False
            before = body[:m.start()].rstrip()
            if before.endswith("&") and not before.endswith("&&"):
                return False
    written: set[str] = set()
    other_access: set[str] = set()
    for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)\s*\[", body):
        name = m.group(1)
        close = close_of(body, m.end() - 1, "[(")
        if close is None or body[close] != "]":
            return False
        index = body[m.end():close]
        rest = body[close + 1:]
        if re.match(r"\s*\[", rest) and name in by_name:
            return False
        lead = body[:m.start()].rstrip()
        assign = re.match(r"\s*((?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--)", rest)
        pre_inc = lead.endswith(("++", "--"))
        write = bool(assign) or pre_inc
        plain = bool(assign) and assign.group(1) == "=" and not pre_inc  # type: ignore[union-attr]
        read = not plain
        top = plain and depth[m.start()] == 0 and (not lead or lead[-1] in ";}")
        abs_start, abs_end = s0 + m.start(), s0 + close + 1
        idx_ids = identifiers(index)
        dependent = bool(idx_ids & tainted) or name in tainted
        param = by_name.get(name)
        if param is not None and param.pointer:
            exact = index.strip() == k.ivar
            if write:
                written.add(name)
                if not exact or (param.elem is None and vector):
                    return False  # scatter, or a store of an element we cannot vectorise
            if not exact:
                other_access.add(name)
            if exact and param.elem is not None:
                k.accesses.append(ElemAccess(abs_start, abs_end, name, index, write, read, top))
                k.vec[name] = param.elem
        elif write and name not in local_arrays:
            return False  # a store through a local pointer or a global array
        vector_access = param is not None and index.strip() == k.ivar and param.elem is not None
        in_loop = [const for a, b, const in loops if a <= m.start() < b]
        if not write and not vector_access and name not in local_arrays and in_loop and not all(in_loop) and vector:
            return False  # a loop over memory per element (a row per thread, a table walk): see module doc
        if dependent and not write and not vector_access and "[" not in index:
            if in_loop and vector:
                return False  # a neighbourhood walk (stencil, convolution): VEC per thread uncoalesces it
            k.scalar_reads.append(" ".join(body[m.start():close + 1].split()))
    if written & other_access or (vector and not k.vec):
        return False
    for name in k.vec:
        acc = [a for a in k.accesses if a.name == name]
        if not any(a.write for a in acc):
            k.mode[name] = "ro"
        elif all(a.plain_top_store for a in acc):
            k.mode[name] = "wo"
        else:
            k.mode[name] = "rw"
    return True


def file_level_names(sc: SourceScan) -> set[str]:
    """Identifiers that occur outside every function body (globals, constants, macros)."""
    text, names, last = sc.text, set(), 0
    for f in sorted(sc.functions, key=lambda f: f.header_start):
        names |= identifiers(text[last:f.header_start])
        last = f.body_end
    return names | identifiers(text[last:])


def _callees_pure(sc: SourceScan, body: str, depth: int = 0) -> bool:
    """Device functions BODY calls neither write memory nor synchronise (they run VEC times per thread)."""
    for f in sc.functions:
        if not f.device or not re.search(rf"(?<![\w.]){re.escape(f.name)}\s*\(", body):
            continue
        fbody = sc.text[f.body_start:f.body_end]
        if "&" in sc.text[f.header_start:f.body_start]:
            return False  # a reference parameter could write what BODY passes
        if depth > 4 or _ELEM_FORBIDDEN_CALLEE.search(fbody) or _WRITE_ANY.search(fbody):
            return False
        if not _callees_pure(sc, fbody, depth + 1):
            return False
    return True


def _depths(body: str) -> list[int]:
    out, d = [], 0
    for ch in body:
        if ch == "}":
            d -= 1
        out.append(d)
        if ch == "{":
            d += 1
    return out


def _tainted(body: str, ivar: str, params: set[str]) -> set[str]:
    """Names whose value may depend on ``i`` (assigned in a statement that mentions a dependent name)."""
    tainted = {ivar}
    statements = [s for s in re.split(r"[;{}]", body) if s.strip()]
    changed = True
    while changed:
        changed = False
        for st in statements:
            if not identifiers(st) & tainted:
                continue
            for name in _ASSIGNED.findall(st):
                if name not in tainted and name not in params:
                    tainted.add(name)
                    changed = True
    return tainted


def _elem_loops(sc: SourceScan, s0: int, s1: int) -> list[tuple[int, int, bool]]:
    """``(start, end, constant trip count)`` of the loops in BODY, spans relative to ``s0``."""
    text = sc.text
    env = sc.constants()
    out = []
    for m in re.finditer(r"\b(for|while|do)\b", text[s0:s1]):
        start = s0 + m.start()
        if m.group(1) == "do":
            stmt_from = start + 2
            constant = False
        else:
            open_pos = text.find("(", start)
            close = close_of(text, open_pos) if open_pos >= 0 else None
            if close is None:
                out.append((m.start(), s1 - s0, False))
                continue
            stmt_from = close + 1
            parts = text[open_pos + 1:close].split(";")
            constant = False
            if m.group(1) == "for" and len(parts) == 3:
                init = re.fullmatch(r"\s*(?:int|unsigned|long|size_t)?\s*([A-Za-z_]\w*)\s*=\s*(-?\w+)\s*", parts[0])
                cond = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*(<=|<|>=|>|!=)\s*(.+?)\s*", parts[1])
                constant = bool(init and cond and init.group(1) == cond.group(1)
                                and eval_int(init.group(2), env) is not None
                                and eval_int(cond.group(3), env) is not None)
        stmt = statement_after(text, stmt_from)
        end = text.find(stmt, stmt_from) + len(stmt) if stmt else stmt_from
        out.append((m.start(), max(end, stmt_from) - s0, constant))
    return out
