"""The ``rows`` operator: a kernel that gives each thread a whole row becomes warp- or block-per-row.

Why: the most common naive kernel for row-wise work (softmax, norms, row sums, gemv) gives one thread
one row and walks the columns serially. Neighbouring lanes then read addresses a row apart, so no load
coalesces, and with few rows most of the GPU idles. The fix an engineer applies first is to let a whole
warp (or a whole block) cooperate on a row: lanes stride over the columns, and every scalar the serial
loop accumulated is combined with an all-reduce. ``tune`` cannot find this by changing numbers, and it
is the step that closes most of the gap to hand-written row kernels, so it is a built-in operator.

The transformation (two edits per matching kernel):

* **warp-per-row** — ``row = global thread index / 32``, ``lane = threadIdx.x & 31``; every column
  loop ``for (int c = S; c < E; ++c)`` becomes ``for (int c = S + lane; c < E; c += 32)``; after a loop
  that accumulates into a scalar, a ``__shfl_xor_sync`` butterfly leaves the full result in every lane.
  The launch keeps its block expression (so ``tune`` still sees it) and gets
  ``((long long)(ROWS) * 32 + BLOCK - 1) / BLOCK`` blocks.
* **block-per-row** — ``row = blockIdx.x``, threads stride by the new tunable ``ROW_THREADS``; each
  reduction is a warp butterfly, per-warp partials in a ``__shared__`` array of 32, a barrier, and a
  second butterfly over the partials in every warp (a barrier before the array is reused). Launch:
  ``<<<ROWS, ROW_THREADS>>>``. Correct for any power of two 32..1024.

Preconditions (checked on the comment/string-blanked tokens; anything else yields no edit):

* the body starts ``T r = blockIdx.x * blockDim.x + threadIdx.x;`` (any operand order) followed by
  ``if (r >= B) return;`` or ``if (r < B) { ...rest of the body... }`` with ``B`` an expression of
  scalar parameters and constants, and every launch of the kernel is 1-D with a resolvable block size
  that is a multiple of 32, so ``B`` maps to the launch arguments;
* the rest is a straight sequence of declarations, scalar or memory assignments and top-level
  ``for`` loops with a ``c < E`` / ``c <= E`` bound and unit step, whose bodies hold only
  declarations and assignments (no nested control flow, no break/continue/return);
* a scalar declared outside a loop and written inside it is a recognised reduction (``v += e``,
  ``v -= e``, ``v = v + e``, ``v = e + v``, ``v = fmaxf/fmax/max(v, e)``, the min forms) of a
  float/double/int, updated by exactly one statement and never otherwise read in the loop;
* a memory write inside a loop indexes with the loop variable added exactly once (``P[k + c]``, so
  distinct iterations write distinct elements), and every access to that buffer in the loop is the
  same ``P[index]``; a buffer written anywhere is not touched by any other top-level statement (no
  cross-thread read-after-write or write-after-write without a barrier);
* at least one loop walks a row: it reads ``P[... + c]`` where the row index is multiplied by a
  stride (in the index or in the pointer setup) or the loop starts at a row offset read from memory
  (CSR) — so sliding windows (conv1d) and column walks (gemv_transposed) are left alone;
* no barriers, shared memory, warp intrinsics, atomics, 2-D/3-D indices or calls other than pure
  math (and ``__ldg``) anywhere in the kernel.

Why it is correct: a reduction is associative and commutative up to floating-point reassociation, so
partitioning the iterations over lanes and combining the partial results computes the same value;
lane partials start at the operator's identity and a non-identity value entering the loop is combined
once afterwards. Loop iterations without reductions are independent (each writes its own element), so
any distribution over threads is valid. After the all-reduce every thread holds identical values, so
straight-line code stays thread-local and uniform; its memory writes are done by one thread only. The
row guard is warp-uniform (row = global index / 32 with a block size that is a multiple of 32) or
block-uniform (row = blockIdx.x), so the full-mask shuffles and the barriers after it are safe.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veriforge.optiml.kernel_reader import (
    FULL_MASK,
    TokStmt,
    bracket_close,
    kernel_launches,
    kernel_params,
    parse_block,
)
from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import Function, Launch, SourceScan, scan
from veriforge.optiml.source_tokens import (
    ASSIGN_OPS,
    Refuse,
    Tok,
    apply_edits,
    fresh_name,
    line_indent,
    tokens,
    top_level,
    trim_span,
)

__all__ = ["rows_edits"]

OPERATOR = "rows"
BLOCK_TUNABLE = "ROW_THREADS"
BLOCK_DEFAULT = 256

_MOTIVES = {"uncoalesced_load", "uncoalesced_store", "small_grid", "low_occupancy", "memory_bound",
            "low_dram_throughput", "partial_warp"}

_FORBIDDEN = re.compile(
    r"__syncthreads|__syncwarp|__shared__|__shfl|\batomic|__ballot|__any_sync|__all_sync|__activemask|"
    r"__threadfence|cooperative_groups|\bgridDim\b|\bwarpSize\b|\b(?:threadIdx|blockIdx|blockDim)\s*\.\s*[yz]\b|"
    r"\basm\b|\bgoto\b|\bwhile\b|\bdo\b|\bswitch\b|\bvolatile\b|\bbreak\b|\bcontinue\b|\bnew\b|\bdelete\b"
)
_PURE_FUNCS = set("""
expf exp __expf exp2f exp2 exp10f expm1f expm1 logf log __logf log2f log2 log10f log10 log1pf log1p
sqrtf sqrt rsqrtf rsqrt cbrtf cbrt fabsf fabs abs fmaxf fminf fmax fmin max min powf pow __powf sinf cosf
tanf sin cos tan __sinf __cosf tanhf tanh sinhf coshf erff erf erfcf erfc floorf floor ceilf ceil roundf
round truncf trunc rintf rint fmaf fma __fdividef fdividef __frcp_rn __fsqrt_rn __fmul_rn __fadd_rn
__fmaf_rn copysignf copysign isnan isinf isfinite signbit __ldg __float2int_rn __int2float_rn hypotf
fmodf fmod
""".split())
_TYPE_WORDS = {"const", "unsigned", "signed", "float", "double", "int", "long", "short", "char", "size_t",
               "int64_t", "uint64_t", "int32_t", "uint32_t", "bool", "ptrdiff_t"}
_CAST_OK = {"static_cast", "sizeof"}
_INDEX_TYPES = {"int", "unsigned", "long", "size_t", "int64_t", "uint64_t", "int32_t", "uint32_t",
                "ptrdiff_t", "const", "signed", "short"}
_SUM_ZERO = re.compile(r"^\(?\s*[+]?(?:0+\.?0*|\.0+)[fFlLuU]*\s*\)?$")
_MAX_FUNCS = {"fmaxf": "max", "fmax": "max", "max": "max", "fminf": "min", "fmin": "min", "min": "min"}


@dataclass
class _Var:
    name: str
    type: str  # normalised base type (float, double, int, ...)
    pointer: bool
    roots: frozenset[str] = frozenset()
    row_strided: bool = False  # pointer set up as base + row * stride
    init: str = ""  # initialiser text of its declaration
    decl_stmt: int = -1  # index of the top-level statement that declares it


@dataclass
class _Reduction:
    var: str
    kind: str  # sum | max | min
    func: str  # the combining function for max/min (fmaxf, max, ...)
    ctype: str
    uses: int  # occurrences of the accumulator in its update statement


@dataclass
class _Loop:
    stmt: TokStmt
    var: str
    start: tuple[int, int]  # token range of S
    step: tuple[int, int]  # token range of the increment
    reductions: list[_Reduction]
    general: list[str]  # accumulators whose value entering the loop is not the identity


@dataclass
class _Plan:
    fn: Function
    name: str
    row: str
    index_init: tuple[int, int]  # source span of the index initialiser
    index_end: int  # source position after the index declaration's ';'
    guard_rewrite: tuple[int, int, str] | None  # `if (r < B) {` → `if (r >= B) return;`
    guard_close: tuple[int, int] | None  # the closing brace of that if
    bound: str  # B (source text)
    loops: list[_Loop]
    writes: list[TokStmt]  # straight-line statements that write memory
    types: dict[str, _Var]
    launches: list[tuple[Launch, str, str]]  # (launch, ROWS expression, block expression)
    toks: list[Tok]
    indent: str


# ---------------------------------------------------------------------------------------------
# Tokens and statements


def _split(toks: list[Tok], a: int, b: int, sep: str) -> list[tuple[int, int]]:
    spans, cur = [], a
    for k in top_level(toks, a, b):
        if toks[k].text == sep:
            spans.append((cur, k))
            cur = k + 1
    spans.append((cur, b))
    return spans


def _top_level_op(toks: list[Tok], a: int, b: int, ops: set[str]) -> str | None:
    """The first of ``ops`` outside every bracket pair of the range, if any."""
    return next((toks[k].text for k in top_level(toks, a, b) if toks[k].text in ops), None)


def _texts(toks: list[Tok], a: int, b: int) -> list[str]:
    return [t.text for t in toks[a:b]]


# ---------------------------------------------------------------------------------------------
# Expressions


def _is_operand_end(tok: Tok | None) -> bool:
    return tok is not None and (tok.kind in ("id", "num") or tok.text in (")", "]"))


def _check_pure(toks: list[Tok], a: int, b: int) -> None:
    """An expression with no side effects and nothing this operator does not understand."""
    for k in range(a, b):
        t = toks[k]
        prev = toks[k - 1] if k > a else None
        nxt = toks[k + 1] if k + 1 < b else None
        if t.kind == "pp":
            raise Refuse("preprocessor line inside an expression")
        if t.text in ASSIGN_OPS or t.text in ("++", "--", "->", "::", "{", "}", ";"):
            raise Refuse(f"side effect or unsupported operator {t.text!r} in an expression")
        if t.kind == "id":
            if t.text in ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "this"):
                raise Refuse(f"{t.text} outside the row index")
            if nxt is not None and nxt.text == "(" and not (
                    t.text in _PURE_FUNCS or t.text in _TYPE_WORDS or t.text in _CAST_OK):
                raise Refuse(f"call to {t.text}")
        if t.text == "*" and not _is_operand_end(prev):
            if prev is not None and (prev.kind == "id" and prev.text in _TYPE_WORDS):
                continue  # a pointer type inside a cast
            raise Refuse("pointer dereference")
        if t.text == "&" and not _is_operand_end(prev):
            if not (prev is not None and prev.text == "(" and k >= 2 and toks[k - 2].text == "__ldg"):
                raise Refuse("address-of outside __ldg")


def _subscripts(toks: list[Tok], a: int, b: int) -> list[tuple[str, int, int]]:
    """Every ``name[index]`` in the range: (name, index token range)."""
    out = []
    for k in range(a, b - 1):
        if toks[k].kind == "id" and toks[k + 1].text == "[":
            close = bracket_close(toks, k + 1)
            out.append((toks[k].text, k + 2, close))
    return out


def _mentions(toks: list[Tok], a: int, b: int, name: str) -> bool:
    return any(t.kind == "id" and t.text == name for t in toks[a:b])


def _ids(toks: list[Tok], a: int, b: int) -> set[str]:
    return {t.text for t in toks[a:b] if t.kind == "id"}


_CAST_RE = r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:long\s+long|long|int|size_t|unsigned|int64_t|" \
           r"uint64_t|ptrdiff_t)(?:\s+int)?\s*\)"


def _additive_terms(toks: list[Tok], a: int, b: int) -> list[tuple[str, int, int]]:
    """Top-level ``+``/``-`` terms of an expression: (sign, token range)."""
    terms, cur, sign = [], a, "+"
    for k in top_level(toks, a, b):
        x = toks[k].text
        if x in ("+", "-") and k > cur and _is_operand_end(toks[k - 1]):
            terms.append((sign, cur, k))
            sign, cur = x, k + 1
    terms.append((sign, cur, b))
    return terms


def _strip_cast(text: str) -> str:
    return re.sub(_CAST_RE, "", text).strip()


def _additive_in(toks: list[Tok], a: int, b: int, var: str) -> bool:
    """``var`` occurs exactly once in the index, as a top-level ``+ var`` term (distinct per iteration)."""
    hits = [(s, x, y) for s, x, y in _additive_terms(toks, a, b) if _mentions(toks, x, y, var)]
    if len(hits) != 1:
        return False
    sign, x, y = hits[0]
    inner = _strip_cast(" ".join(_texts(toks, x, y)))
    while inner.startswith("(") and inner.endswith(")"):
        inner = inner[1:-1].strip()
    return sign == "+" and inner == var


def _row_product(text: str, row: str) -> bool:
    """``row`` multiplied by something (a row stride) in ``text``."""
    t = _strip_cast(text)
    return bool(re.search(rf"(?<![\w.])\(?\s*{row}\s*\)?\s*\*(?!=)|\*\s*\(?\s*{row}\b(?!\s*\[)", t))


# ---------------------------------------------------------------------------------------------
# Kernel analysis


_DECL = re.compile(
    r"^(?P<type>(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:long\s+long|float|double|int|long|short|char|size_t|"
    r"int64_t|uint64_t|int32_t|uint32_t|bool|unsigned|ptrdiff_t)(?:\s+int)?(?:\s+const)?)\s*(?P<rest>[*\w].*)$",
    re.S,
)


def _base_type(type_text: str) -> str:
    words = [w for w in type_text.split() if w != "const"]
    t = " ".join(words)
    return {"unsigned int": "unsigned", "long int": "long", "long long int": "long long"}.get(t, t)


def _parse_decl(toks: list[Tok], st: TokStmt, text: str) -> list[tuple[str, str, bool, tuple[int, int] | None]]:
    """Declarators of a declaration statement: (name, base type, pointer, initialiser token range)."""
    first, last = toks[st.a], toks[st.b - 2]
    src = text[first.start:last.end]
    m = _DECL.match(src)
    if not m:
        return []
    base = _base_type(m.group("type"))
    # the token where the declarators begin
    rest_pos = first.start + m.start("rest")
    k = st.a
    while k < st.b and toks[k].start < rest_pos:
        k += 1
    out = []
    for x, y in _split(toks, k, st.b - 1, ","):
        pointer = False
        while x < y and toks[x].text in ("*", "const", "__restrict__"):
            pointer = pointer or toks[x].text == "*"
            x += 1
        if x >= y or toks[x].kind != "id" or toks[x].text in _TYPE_WORDS:
            raise Refuse("unsupported declarator")
        name = toks[x].text
        if x + 1 == y:
            out.append((name, base, pointer, None))
        elif toks[x + 1].text == "=" and x + 2 < y:
            out.append((name, base, pointer, (x + 2, y)))
        else:
            raise Refuse(f"unsupported declarator of {name}")
    return out


_INDEX_FORMS = {
    "blockIdx.x*blockDim.x+threadIdx.x", "blockDim.x*blockIdx.x+threadIdx.x",
    "threadIdx.x+blockIdx.x*blockDim.x", "threadIdx.x+blockDim.x*blockIdx.x",
}


def _analyse(sc: SourceScan, fn: Function) -> _Plan:
    text, source = sc.text, sc.source
    body = text[fn.body_start:fn.body_end]
    if _FORBIDDEN.search(body):
        raise Refuse("barriers, shared memory, warp intrinsics, atomics or 2-D indices")
    toks = tokens(text, fn.body_start, fn.body_end)
    stmts = parse_block(toks, 0, len(toks))
    params = kernel_params(sc, fn)
    scalars = {n for n, p in params if not p}
    types: dict[str, _Var] = {n: _Var(n, "", p, frozenset({n}) if p else frozenset()) for n, p in params}
    constants = sc.constants()

    # 1. The row index.
    if len(stmts) < 2 or stmts[0].kind != "other":
        raise Refuse("no row index declaration")
    decl = stmts[0]
    dd = _parse_decl(toks, decl, text)
    if len(dd) != 1 or dd[0][2] or dd[0][3] is None or decl.pragmas:
        raise Refuse("no row index declaration")
    row, row_type, _, (ia, ib) = dd[0]
    if row_type not in ("int", "unsigned", "long", "long long", "size_t", "int64_t", "uint64_t", "int32_t",
                        "uint32_t"):
        raise Refuse("row index type")
    if "".join(_texts(toks, ia, ib)) not in _INDEX_FORMS:
        raise Refuse("not a 1-D global thread index")
    index_init = (toks[ia].start, toks[ib - 1].end)
    types[row] = _Var(row, row_type, False, decl_stmt=0)

    # 2. The guard.
    guard = stmts[1]
    guard_rewrite = guard_close = None
    if guard.kind != "if" or guard.orelse is not None:
        raise Refuse("no row guard")
    ha, hb = guard.header
    cond = _texts(toks, ha, hb)
    assert guard.body is not None
    returns = (guard.body.kind == "return" and guard.body.b - guard.body.a == 2) or (
        guard.body.kind == "block" and len(guard.body.children) == 1 and guard.body.children[0].kind == "return"
        and guard.body.children[0].b - guard.body.children[0].a == 2)
    if len(cond) < 3:
        raise Refuse("no row guard")
    if cond[0] == row and cond[1] == ">=" and returns:
        ba, bb = ha + 2, hb
    elif cond[-1] == row and cond[-2] == "<=" and returns:
        ba, bb = ha, hb - 2
    elif cond[0] == row and cond[1] == "<" and guard.body.kind == "block" and len(stmts) == 2:
        ba, bb = ha + 2, hb
    elif cond[-1] == row and cond[-2] == ">" and guard.body.kind == "block" and len(stmts) == 2:
        ba, bb = ha, hb - 2
    else:
        raise Refuse("no row guard")
    _check_pure(toks, ba, bb)
    _check_low(toks, ba, bb)
    for ident in _ids(toks, ba, bb):
        if ident not in scalars and ident not in constants and ident not in _TYPE_WORDS:
            raise Refuse(f"row bound uses {ident}")
    bound = source[toks[ba].start:toks[bb - 1].end]
    if len(stmts) == 2:  # `if (r < B) { ... }`: the rest of the body is inside the if
        rest = guard.body.children
        guard_rewrite = (toks[guard.a].start, toks[guard.body.a].end, f"if ({row} >= {bound}) return;")
        close = toks[guard.body.b - 1]
        guard_close = (close.start, close.end)
    else:
        rest = stmts[2:]
    if not any(st.kind == "for" for st in rest):
        raise Refuse("no loop")

    # 3. The statements after the guard.
    loops: list[_Loop] = []
    writes: list[TokStmt] = []
    # (statement, roots accessed, roots written, done by one thread only)
    accesses: list[tuple[int, set[str], set[str], bool]] = []
    declared: dict[str, _Var] = dict(types)
    last_assign: dict[str, int] = {}  # accumulator → index of the last top-level statement assigning it
    row_walk = False
    for idx, st in enumerate(rest):
        if st.kind == "for":
            loop, acc, wr, walks = _analyse_loop(toks, st, text, source, declared, row, last_assign, idx)
            loops.append(loop)
            accesses.append((idx, acc, wr, False))
            row_walk = row_walk or walks
            for red in loop.reductions:
                last_assign[red.var] = idx
            continue
        if st.pragmas:
            raise Refuse("pragma on a straight-line statement")
        if st.kind == "empty":
            continue
        if st.kind != "other":
            raise Refuse(f"unsupported statement ({st.kind}) outside the loops")
        dd = _parse_decl(toks, st, text)
        if dd:
            for name, base, pointer, init in dd:
                if name in declared or name == row:
                    raise Refuse(f"redeclaration of {name}")
                var = _Var(name, base, pointer, decl_stmt=idx)
                if init is not None:
                    _check_pure(toks, *init)
                    var.init = source[toks[init[0]].start:toks[init[1] - 1].end]
                    if pointer:
                        ptrs = [declared[i] for i in _ids(toks, *init) if i in declared and declared[i].pointer]
                        if not ptrs:
                            raise Refuse(f"pointer {name} not derived from a parameter")
                        var.roots = frozenset().union(*(p.roots for p in ptrs))
                        var.row_strided = any(p.row_strided for p in ptrs) or _row_product(var.init, row)
                elif pointer:
                    raise Refuse(f"uninitialised pointer {name}")
                declared[name] = var
                last_assign[name] = idx
            roots: set[str] = set()
            for _, _, pointer, init in dd:
                if init is None:
                    continue
                roots |= {r for s, _, _ in _subscripts(toks, *init) for r in _roots_of(s, declared)}
                if not pointer:
                    roots |= _roots_mentioned(toks, *init, declared)
            accesses.append((idx, roots, set(), False))
            continue
        lhs, op, rhs = _assignment(toks, st)
        _check_pure(toks, *rhs)
        if lhs[1] - lhs[0] == 1:
            name = toks[lhs[0]].text
            var = declared.get(name)
            if var is None or name == row:
                raise Refuse(f"assignment to {name}")
            if var.pointer:
                if op not in ("+=", "-="):
                    raise Refuse(f"pointer {name} re-pointed")
                var.row_strided = var.row_strided or _row_product(source[toks[rhs[0]].start:toks[rhs[1] - 1].end],
                                                                  row)
            last_assign[name] = idx
            accesses.append((idx, _roots_mentioned(toks, *rhs, declared), set(), False))
        else:
            base, xa, xb = _lvalue_subscript(toks, lhs)
            _check_pure(toks, xa, xb)
            written = set(_roots_of(base, declared))
            accesses.append((idx, _roots_mentioned(toks, st.a, st.b, declared) | written, written, True))
            writes.append(st)
    if not row_walk:
        raise Refuse("no loop walks a row")
    # A buffer written by one statement is not touched by any other (no barrier orders them), except
    # by another straight-line write: both run, in program order, on the same single thread.
    for idx, _, wr, single in accesses:
        for jdx, acc, _, other_single in accesses:
            if jdx != idx and wr & acc and not (single and other_single):
                raise Refuse(f"{', '.join(sorted(wr & acc))} written and accessed by different statements")

    launches = kernel_launches(sc, fn, params, bound)
    indent = line_indent(source, toks[decl.a].start, text)
    return _Plan(fn, fn.name, row, index_init, toks[decl.b - 1].end, guard_rewrite, guard_close, bound, loops,
                 writes, declared, launches, toks, indent)


def _roots_of(name: str, declared: dict[str, _Var]) -> frozenset[str]:
    var = declared.get(name)
    return var.roots if var is not None and var.pointer else frozenset({name})


_LOW = {"<", ">", "<=", ">=", "==", "!=", "&&", "||", "&", "|", "^", "?", ":", ","}  # binds looser than + - * /


def _check_low(toks: list[Tok], a: int, b: int) -> None:
    """No top-level operator binding looser than arithmetic (a bound is one value, not a condition)."""
    x = _top_level_op(toks, a, b, _LOW)
    if x is not None:
        raise Refuse(f"operator {x} in a bound")


def _roots_mentioned(toks: list[Tok], a: int, b: int, declared: dict[str, _Var]) -> set[str]:
    out: set[str] = set()
    for t in toks[a:b]:
        if t.kind == "id" and t.text in declared and declared[t.text].pointer:
            out |= declared[t.text].roots
    for base, _, _ in _subscripts(toks, a, b):
        if base not in declared:
            out.add(base)
    return out


def _assignment(toks: list[Tok], st: TokStmt) -> tuple[tuple[int, int], str, tuple[int, int]]:
    """``lhs op rhs;`` (``x++``/``++x`` as ``x += 1``): token ranges and the operator."""
    a, b = st.a, st.b - 1
    if b - a == 2 and toks[a + 1].text in ("++", "--"):
        raise Refuse("increment statement")
    if b - a >= 2 and toks[a].text in ("++", "--"):
        raise Refuse("increment statement")
    k = next((k for k in top_level(toks, a, b) if toks[k].text in ASSIGN_OPS), None)
    if k is None or k == a or k + 1 >= b:
        raise Refuse("statement is not an assignment")
    return (a, k), toks[k].text, (k + 1, b)


def _lvalue_subscript(toks: list[Tok], lhs: tuple[int, int]) -> tuple[str, int, int]:
    a, b = lhs
    if b - a >= 4 and toks[a].kind == "id" and toks[a + 1].text == "[" and bracket_close(toks, a + 1) == b - 1:
        return toks[a].text, a + 2, b - 1
    raise Refuse("unsupported assignment target")


def _analyse_loop(toks: list[Tok], st: TokStmt, text: str, source: str, declared: dict[str, _Var], row: str,
                  last_assign: dict[str, int], idx: int) -> tuple[_Loop, set[str], set[str], bool]:
    ha, hb = st.header
    parts = _split(toks, ha, hb, ";")
    if len(parts) != 3:
        raise Refuse("unsupported for header")
    (ia, ib), (ca, cb), (sa, sb) = parts
    # init: `T c = S`
    k = ia
    while k < ib and toks[k].text in _INDEX_TYPES:
        k += 1
    if k == ia or k + 2 >= ib or toks[k].kind != "id" or toks[k + 1].text != "=":
        raise Refuse("loop variable not declared in the loop")
    var = toks[k].text
    if var in declared:
        raise Refuse(f"loop variable {var} shadows")
    start = (k + 2, ib)
    _check_pure(toks, *start)
    if _mentions(toks, *start, var) or _split(toks, *start, ",") != [start]:
        raise Refuse("loop start")
    # cond: `c < E` / `c <= E`
    if cb - ca < 3 or toks[ca].text != var or toks[ca + 1].text not in ("<", "<="):
        raise Refuse("loop condition")
    _check_pure(toks, ca + 2, cb)
    if _mentions(toks, ca + 2, cb, var) or _split(toks, ca + 2, cb, ",") != [(ca + 2, cb)]:
        raise Refuse("loop bound depends on the loop variable")
    _check_low(toks, ca + 2, cb)
    step = "".join(_texts(toks, sa, sb))
    if step not in (f"++{var}", f"{var}++", f"{var}+=1", f"{var}={var}+1"):
        raise Refuse("loop step is not +1")
    # body: simple statements only
    assert st.body is not None
    body = st.body.children if st.body.kind == "block" else [st.body]
    if st.body.kind == "block" and st.body.pragmas:
        raise Refuse("pragma in loop body")
    local: dict[str, _Var] = {}
    reductions: dict[str, _Reduction] = {}
    write_sites: list[tuple[str, str, str]] = []  # (root, base, index text)
    walks = False
    header_ids = _ids(toks, ha, hb)
    for s in body:
        if s.pragmas or s.kind not in ("other", "empty"):
            raise Refuse("control flow inside a loop body")
        if s.kind == "empty":
            continue
        dd = _parse_decl(toks, s, text)
        if dd:
            for name, base, pointer, init in dd:
                if name in declared or name in local or name == var:
                    raise Refuse(f"{name} shadows")
                if init is None:
                    raise Refuse("uninitialised local in a loop")
                _check_pure(toks, *init)
                v = _Var(name, base, pointer)
                if pointer:
                    ptrs = [declared[i] for i in _ids(toks, *init) if i in declared and declared[i].pointer]
                    if not ptrs:
                        raise Refuse(f"pointer {name}")
                    v.roots = frozenset().union(*(p.roots for p in ptrs))
                local[name] = v
            continue
        lhs, op, rhs = _assignment(toks, s)
        _check_pure(toks, *rhs)
        if lhs[1] - lhs[0] == 1:
            name = toks[lhs[0]].text
            if name in local:
                if local[name].pointer:
                    raise Refuse("pointer arithmetic in a loop")
                continue
            if name == var:
                raise Refuse("loop variable modified")
            acc = declared.get(name)
            if acc is None or acc.pointer or acc.decl_stmt < 0 or name == row:
                raise Refuse(f"{name} written in a loop")
            if acc.type not in ("float", "double", "int"):
                raise Refuse(f"reduction over {acc.type}")
            if name in reductions:
                raise Refuse(f"{name} updated twice in one loop")
            reductions[name] = _reduction(toks, lhs, op, rhs, acc)
            continue
        base, xa, xb = _lvalue_subscript(toks, lhs)
        _check_pure(toks, xa, xb)
        if not _additive_in(toks, xa, xb, var):
            raise Refuse("memory write whose index is not distinct per iteration")
        if base in local:
            raise Refuse("write through a loop-local pointer")
        roots = _roots_of(base, declared)
        idx_text = " ".join(_texts(toks, xa, xb))
        write_sites.extend((r, base, idx_text) for r in roots)
    # accumulators: not read anywhere else in the loop (including the header)
    for name, red in reductions.items():
        count = sum(1 for t in toks[st.body.a:st.body.b] if t.kind == "id" and t.text == name)
        if count != red.uses or name in header_ids:
            raise Refuse(f"accumulator {name} read inside its loop")
    # every access to a written buffer is the written element itself
    written_roots = {r for r, _, _ in write_sites}
    for r in written_roots:
        sites = {(b, i) for rr, b, i in write_sites if rr == r}
        if len(sites) != 1:
            raise Refuse("buffer written at two different places in a loop")
        base, index = next(iter(sites))
        for name, xa, xb in _subscripts(toks, st.a, st.b):
            broots = local[name].roots if name in local and local[name].pointer else _roots_of(name, declared)
            if r in broots and (name != base or " ".join(_texts(toks, xa, xb)) != index):
                raise Refuse("buffer read and written at different elements in a loop")
        pointers = {**declared, **local}
        for t in toks[st.a:st.b]:
            v = pointers.get(t.text) if t.kind == "id" else None
            if v is not None and v.pointer and r in v.roots and t.text != base:
                raise Refuse("buffer used through two pointers in a loop")
    # row walk: P[... + c] with a row-strided index or pointer, or a row range read from memory
    csr = any(_mentions(toks, xa, xb, row) for _, xa, xb in _subscripts(toks, *start))
    for name, xa, xb in _subscripts(toks, st.body.a, st.body.b):
        if not _additive_in(toks, xa, xb, var):
            continue
        strided = (declared[name].row_strided if name in declared else False) or _row_product(
            " ".join(_texts(toks, xa, xb)), row)
        walks = walks or strided or csr
    general = []
    for name, red in reductions.items():
        var_info = declared[name]
        identity = last_assign.get(name) == var_info.decl_stmt and _is_identity(var_info.init, red)
        if not identity:
            general.append(name)
    accessed = _roots_mentioned(toks, st.a, st.b, {**declared, **local})
    loop = _Loop(st, var, start, (sa, sb), list(reductions.values()), general)
    return loop, accessed | written_roots, written_roots, walks


def _reduction(toks: list[Tok], lhs: tuple[int, int], op: str, rhs: tuple[int, int], acc: _Var) -> _Reduction:
    name = acc.name
    ra, rb = rhs
    if op in ("+=", "-="):
        if _mentions(toks, ra, rb, name):
            raise Refuse(f"accumulator {name} read in its update")
        return _Reduction(name, "sum", "", acc.type, 1)
    if op != "=":
        raise Refuse(f"{op} is not a recognised reduction")
    rt = _texts(toks, ra, rb)
    # fmaxf(v, e) / fmaxf(e, v) / max / min forms
    if len(rt) >= 6 and rt[0] in _MAX_FUNCS and rt[1] == "(" and bracket_close(toks, ra + 1) == rb - 1:
        args = _split(toks, ra + 2, rb - 1, ",")
        if len(args) == 2:
            for mine, other in (args, args[::-1]):
                if _texts(toks, *mine) == [name] and not _mentions(toks, *other, name):
                    return _Reduction(name, _MAX_FUNCS[rt[0]], rt[0], acc.type, 2)
        raise Refuse(f"{rt[0]} is not a reduction of {name}")
    # v = v + e / v = e + v: the rest is an additive chain, so reassociation is exact in the reals
    if _top_level_op(toks, ra, rb, _LOW | {"<<", ">>"}) is not None:
        raise Refuse("update is not a plain sum")
    terms = _additive_terms(toks, ra, rb)
    mine = [t for t in terms if _mentions(toks, t[1], t[2], name)]
    if len(mine) == 1 and mine[0][0] == "+" and _texts(toks, mine[0][1], mine[0][2]) == [name] and len(terms) > 1:
        if mine[0] is terms[0] or mine[0] is terms[-1]:
            return _Reduction(name, "sum", "", acc.type, 2)
    raise Refuse(f"update of {name} is not a recognised reduction")


def _is_identity(init: str, red: _Reduction) -> bool:
    s = init.replace(" ", "")
    if red.kind == "sum":
        return bool(_SUM_ZERO.match(s))
    if red.ctype == "int":
        lowest = ("INT_MIN", "(-2147483647-1)", "-2147483647-1")
        return s in (lowest if red.kind == "max" else ("INT_MAX", "2147483647"))
    if red.kind == "max":
        return s in ("-INFINITY", "-HUGE_VALF", "-HUGE_VAL")
    return s in ("INFINITY", "HUGE_VALF", "HUGE_VAL")


def _identity(red: _Reduction) -> str:
    if red.kind == "sum":
        return {"float": "0.0f", "double": "0.0"}.get(red.ctype, "0")
    if red.ctype == "int":
        return "(-2147483647 - 1)" if red.kind == "max" else "2147483647"
    return "-INFINITY" if red.kind == "max" else "INFINITY"


# ---------------------------------------------------------------------------------------------
# Code generation


def _unwrap(source: str, opening: tuple[int, int, str], closing: tuple[int, int]
            ) -> tuple[int, list[tuple[int, int, str]]]:
    """Edits that dedent the body of ``if (r < B) { ... }`` by one level and drop its closing brace."""
    guard_indent = line_indent(source, opening[0])
    close_line = source.rfind("\n", 0, closing[0]) + 1
    brace_alone = not source[close_line:closing[0]].strip() and not source[closing[1]:].split("\n", 1)[0].strip()
    starts = [m.end() for m in re.finditer(r"\n", source[opening[1]:closing[0]])]
    starts = [opening[1] + k for k in starts]
    dedent = 0
    for ls in starts:
        line = source[ls:source.find("\n", ls) if source.find("\n", ls) >= 0 else len(source)]
        if line.strip():
            indent = line_indent(source, ls)
            if indent.startswith(guard_indent) and len(indent) > len(guard_indent):
                dedent = len(indent) - len(guard_indent)
            break
    edits: list[tuple[int, int, str]] = []
    for ls in starts:
        if brace_alone and ls == close_line:
            continue
        if dedent and ls + dedent <= closing[0] and source[ls:ls + dedent] in (" " * dedent, "\t" * dedent):
            edits.append((ls, ls + dedent, ""))
    if brace_alone:
        eol = source.find("\n", closing[1])
        edits.append((close_line, eol + 1 if eol >= 0 else len(source), ""))
    else:
        edits.append((*closing, ""))
    return dedent, edits


def _combine(red: _Reduction, v: str, other: str) -> str:
    if red.kind == "sum":
        return f"{v} += {other};"
    return f"{v} = {red.func}({v}, {other});"


def _generate(sc: SourceScan, plan: _Plan, variant: str) -> str:
    source, toks = sc.source, plan.toks
    names = sc.text  # fresh names are checked against code, not comments
    edits: list[tuple[int, int, str]] = []
    lane = fresh_name(names, "lane")
    off = fresh_name(names, "off")
    block = variant == "block"
    threads = fresh_name(names, BLOCK_TUNABLE) if block else ""
    tid = "threadIdx.x"
    lane_expr = "(threadIdx.x & 31)" if block else lane
    stride = threads if block else "32"
    first = tid if block else lane
    ind = plan.indent

    # row index and lane
    if block:
        edits.append((*plan.index_init, "blockIdx.x"))
    else:
        edits.append((*plan.index_init, "(blockIdx.x * blockDim.x + threadIdx.x) / 32"))
        edits.append((plan.index_end, plan.index_end, f"\n{ind}const int {lane} = threadIdx.x & 31;"))
    dedent = 0
    if plan.guard_rewrite:
        assert plan.guard_close is not None
        edits.append(plan.guard_rewrite)
        dedent, unwrap = _unwrap(source, plan.guard_rewrite, plan.guard_close)
        edits.extend(unwrap)

    shared: dict[str, str] = {}  # ctype → array name
    used: set[str] = set()
    taken: set[str] = set()
    for loop in plan.loops:
        st = loop.stmt
        s_text = source[toks[loop.start[0]].start:toks[loop.start[1] - 1].end]
        if s_text.strip() in ("0", "0u", "0U"):
            new_start = first
        elif len(_texts(toks, *loop.start)) == 1:
            new_start = f"{s_text} + {first}"
        else:
            new_start = f"({s_text}) + {first}"
        edits.append((toks[loop.start[0]].start, toks[loop.start[1] - 1].end, new_start))
        edits.append((toks[loop.step[0]].start, toks[loop.step[1] - 1].end, f"{loop.var} += {stride}"))
        begin = toks[st.pragmas[0]].start if st.pragmas else toks[st.a].start
        lind = line_indent(source, begin)[dedent:]
        before, after = [], []
        for red in loop.reductions:
            v = red.var
            ident = _identity(red)
            saved = fresh_name(names, f"{v}_in", taken) if v in loop.general else ""
            if saved:
                before.append(f"{red.ctype} {saved} = {v};\n{lind}{v} = {ident};\n{lind}")
            after.append(f"for (int {off} = 16; {off} > 0; {off} >>= 1) "
                         + _combine(red, v, f"__shfl_xor_sync({FULL_MASK}, {v}, {off})"))
            if block:
                arr = shared.get(red.ctype)
                if arr is None:
                    arr = fresh_name(names, f"row_partial_{red.ctype}", taken)
                    shared[red.ctype] = arr
                code = [f"if ({threads} > 32) {{"]
                if arr in used:
                    code.append(f"    __syncthreads();  // every warp has read {arr} of the previous reduction")
                used.add(arr)
                code += [
                    f"    if ({lane_expr} == 0) {arr}[threadIdx.x >> 5] = {v};",
                    "    __syncthreads();",
                    f"    {v} = {lane_expr} < {threads} / 32 ? {arr}[{lane_expr}] : {ident};",
                    f"    for (int {off} = 16; {off} > 0; {off} >>= 1) "
                    + _combine(red, v, f"__shfl_xor_sync({FULL_MASK}, {v}, {off})"),
                    "}",
                ]
                after.append(f"\n{lind}".join(code))
            if saved:
                if red.kind == "sum":
                    after.append(f"{v} = {saved} + {v};")
                else:
                    after.append(f"{v} = {red.func}({saved}, {v});")
        if before:
            edits.append((begin, begin, "".join(before)))
        if after:
            end = toks[st.b - 1].end
            edits.append((end, end, "".join(f"\n{lind}{a}" for a in after)))

    who = f"{tid} == 0" if block else f"{lane} == 0"
    for st in plan.writes:
        pos = toks[st.a].start
        edits.append((pos, pos, f"if ({who}) "))

    if block and shared:
        decls = "".join(f"\n{ind}__shared__ {ct} {arr}[32];" for ct, arr in shared.items())
        edits.append((plan.index_end, plan.index_end, decls))

    # launches
    for launch, rows, block_expr in plan.launches:
        if block:
            edits.append((*trim_span(sc.text, launch.grid), rows))
            edits.append((*trim_span(sc.text, launch.block), threads))
        else:
            if re.fullmatch(r"\d+", block_expr):
                n = int(block_expr)
                grid = f"((long long)({rows}) * 32 + {n - 1}) / {n}"
            else:
                b = block_expr if re.fullmatch(r"[A-Za-z_]\w*", block_expr) else f"({block_expr})"
                grid = f"((long long)({rows}) * 32 + {b} - 1) / {b}"
            edits.append((*trim_span(sc.text, launch.grid), grid))

    if block:
        header = sc.text[plan.fn.header_start:plan.fn.body_start]
        m = re.search(r"__launch_bounds__\s*\(\s*([^,)]*)", header)
        if m:
            edits.append((plan.fn.header_start + m.start(1), plan.fn.header_start + m.end(1), threads))
        line_start = source.rfind("\n", 0, plan.fn.header_start) + 1
        edits.append((line_start, line_start, f"#define {threads} {BLOCK_DEFAULT}\n"))

    return apply_edits(source, edits, stable=True)


# ---------------------------------------------------------------------------------------------
# The operator


@operator("rows", order=80, motives=_MOTIVES, restructuring=True)
def rows_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Warp-per-row and block-per-row versions of every thread-per-row kernel of ``source``."""
    sc = scan(source)
    motive = motivating_findings(findings, _MOTIVES)
    severity = sum(float(f["severity"] or 0) for f in motive)
    out = []
    for fn in sc.kernels():
        try:
            plan = _analyse(sc, fn)
        except (Refuse, IndexError, KeyError):
            continue
        loops = len(plan.loops)
        reds = [r.var for loop in plan.loops for r in loop.reductions]
        what = f"{loops} column loop{'s' if loops > 1 else ''}"
        if reds:
            what += f", all-reduce of {', '.join(reds)}"
        evidence = {"kernel": fn.name, "row": plan.row, "rows": plan.bound, "loops": loops, "reductions": reds,
                    "launches": len(plan.launches), "findings": motive}
        for variant in ("warp", "block"):
            try:
                new = _generate(sc, plan, variant)
            except (Refuse, IndexError, KeyError):
                continue
            if variant == "warp":
                desc = f"warp-per-row {fn.name}: lanes stride the {what} (shuffle butterfly)"
                prior = 2.0 + severity
            else:
                desc = (f"block-per-row {fn.name}: {BLOCK_TUNABLE}={BLOCK_DEFAULT} threads stride the {what} "
                        f"(warp shuffles + shared partials)")
                prior = 2.2 + severity  # the better of the two on every bundled row task
            out.append(EditProposal(OPERATOR, new, desc, {**evidence, "variant": variant}, prior))
    return out
