"""The ``privatize_histogram`` operator: a shared-memory sub-histogram per block, merged once.

Why: a naive histogram kernel sends one global ``atomicAdd(&hist[bin], 1)`` per element; with few bins
(or skewed data) every warp's atomics collide on a few L2 addresses and serialise there. Counting in a
per-block copy of the histogram in shared memory (shared atomics are resolved in the SM) and adding
each block's non-zero counts to the global histogram at the end leaves ``blocks x bins`` global
atomics in all — and a grid-stride loop over a grid capped at a few blocks per SM makes that small.
This is the bundled ``shared_private`` implementation of the histogram tasks.

What it matches (anything else is refused — no edit)::

    T i = <global index>; if (i < N) { ... atomicAdd(&hist[E], v); ... }        // or
    T i = <global index>; if (i >= N) return; ... atomicAdd(&hist[E], v); ...   // or
    for (T i = <global index>; i < N; i += blockDim.x * gridDim.x) { ... atomicAdd(hist + E, v); ... }

(the index shapes of :mod:`._grid`, whose conditions hold: a covering grid, no thread built-ins in the
body, ...) with

* exactly one atomic in the kernel, an ``atomicAdd`` statement of its own (old value unused) on a
  non-const pointer parameter ``hist`` of ``int``/``unsigned``/``unsigned long long``/``float``
  elements, the address ``&hist[E]`` or ``hist + E``; ``hist`` is mentioned nowhere else in the kernel
  (never read, written, offset or passed on), and every launch passes it as a plain variable (the start
  of a buffer, so an index below 0 would already be outside the histogram);
* a number of bins ``K`` that bounds ``E`` from the kernel text: ``E`` (or the variable ``E`` names,
  from its declaration ``T b = X;`` on, assigned nowhere else but by a clamp) is a byte
  (``P[..]`` with ``P`` an ``unsigned char``/``uint8_t`` pointer, or a ``(unsigned char)`` cast: 256),
  ``X % K``, ``X & M`` (``M = K - 1``, ``K`` a power of two) or ``min(X, K - 1)``; or the atomic is only
  reached under a condition with a top-level conjunct ``b < K`` / ``b <= K - 1``; or a clamp statement
  ``if (b > K - 1) b = K - 1;`` / ``if (b >= K) b = K - 1;`` stands between the declaration and the
  atomic in the same block. ``K`` is a literal or file-level constant (then a static ``__shared__``
  array, at most 48 KB, or no edit), or an expression of int parameters the kernel never assigns;
* no other atomics, barriers, shared memory, warp intrinsics, ``goto``, ``asm``, ``volatile`` or
  ``extern``, in the kernel or the device functions it calls; no third launch argument (dynamic shared
  memory or a stream) at any launch.

The transformation (``s_hist`` and the other names are fresh)::

    __shared__ T s_hist[K];                                 // extern ... [] when K is a parameter
    [if (K > 0 && K <= HIST_SMEM_BINS) {]                   // K a parameter: run-time size check
    for (int s = threadIdx.x; s < K; s += blockDim.x) s_hist[s] = 0;
    __syncthreads();
    for (T i = <global index>; i < N; i += blockDim.x * gridDim.x) {
        ...the original body, with the atomic now atomicAdd(&s_hist[E], v)...
    }
    __syncthreads();
    for (int s = threadIdx.x; s < K; s += blockDim.x) { T c = s_hist[s]; if (c != 0) atomicAdd(&hist[s], c); }
    [} else { for (...) { ...the original body, unchanged... } }]

and each launch grid ``G`` becomes ``min(G, HIST_GRID_BLOCKS)`` (two blocks per SM of the cost model's
GPU); with a parameter ``K`` the launch also passes ``(K > 0 && K <= HIST_SMEM_BINS ? K : 0) *
sizeof(T)`` bytes of dynamic shared memory (the same condition as the kernel's, in the launch's
arguments), so a histogram too large for shared memory takes the original global-atomic path.

Why it is correct: the grid-stride loop runs the body once for every element the original grid ran
(:mod:`._grid`); the body is kept token for token — the bin expression, any bounds check or clamp on
it, every other side effect — except that its one atomic adds ``v`` to ``s_hist[E]`` instead of
``hist[E]``. ``0 <= E < K`` wherever the atomic runs in a well-defined execution (the bound above; an
index below 0 addresses memory before the buffer that holds the histogram), so ``s_hist[E]`` exists.
Every ``s_hist`` word is zero before any thread adds to it (barrier), and every addition of the block
is in it before it is read (barrier; no ``return`` remains before either barrier: the early-return
shape became the loop's bound, and no other ``return`` is accepted). Integer addition is associative
and commutative, so ``hist[b]`` gets exactly the sum the per-element atomics would have added (skipping
a zero changes nothing); nothing read ``hist`` in between. Float counters change only the order of the
additions, which was unspecified anyway (concurrent atomics): counts of 1.0f stay exact up to 2^24,
other weights may round differently within the task's tolerance (the verifier compares floats with
``spec.tolerance``). The barriers are reached by every thread of the block: they stand outside the
loop, and the run-time size check depends only on a parameter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veriforge.optiml.kernel_reader import TokStmt, kernel_launches, kernel_params, parse_block
from veriforge.optiml.operators._atomics import ATOMIC, atomic_statement, called_device_bodies, pointer_type
from veriforge.optiml.operators._grid import StrideLoop, cap_grid_edit, stride_loop, written
from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import Function, SourceScan, eval_int, param_parts, scan, unparen
from veriforge.optiml.source_tokens import (
    ASSIGN_OPS,
    Refuse,
    Tok,
    apply_edits,
    dedented,
    fresh_name,
    indent_lines,
    line_indent,
    tokens,
)

__all__ = ["GRID_BLOCKS", "SMEM_BYTES", "privatize_histogram_edits"]

OPERATOR = "privatize_histogram"
SMEM_BYTES = 48 * 1024  # static shared memory a block may declare without opting in


def _grid_blocks() -> int:
    """Two blocks per SM of the GPU the cost model prices (a full wave, few merges)."""
    from veriforge.cuda.arch import get_gpu
    from veriforge.cuda.evaluate.estimate import DEFAULT_GPU

    return 2 * get_gpu(DEFAULT_GPU).sm_count


GRID_BLOCKS = _grid_blocks()
_MOTIVES = {"atomic_contention", "serialized_atomics", "memory_bound", "low_dram_throughput"}
_SIZES = {"int": 4, "unsigned int": 4, "float": 4, "unsigned long long": 8}
_FORBIDDEN = re.compile(r"\b(goto|asm|volatile|extern|template|__shared__|__syncthreads\w*|__syncwarp|__shfl\w*|"
                        r"__ballot\w*|__any\w*|__all\w*|__activemask|__match\w*|__reduce\w*|cooperative_groups|"
                        r"__threadfence\w*)\b")
_BYTE_TYPES = {"unsigned char", "uint8_t", "unsigned __int8"}


@dataclass
class _Plan:
    fn: Function
    toks: list[Tok]
    loop: StrideLoop
    hist: str  # the histogram pointer parameter
    ctype: str  # its element type
    ptr_tok: int  # token index of `hist` in the atomic's address
    bins: str  # K, kernel side
    static: bool  # K is a constant
    how: str  # what bounds the bin


# ---------------------------------------------------------------------------------------------
# Reading the kernel


def _norm(toks: list[Tok], a: int, b: int) -> str:
    return "".join(t.text for t in toks[a:b])


def _bins_expr(sc: SourceScan, fn: Function, toks: list[Tok], k_text: str) -> str | None:
    """``k_text`` if it is a bin count: a positive constant, or built from int parameters the kernel never
    assigns (and constants) with + - * / and parentheses."""
    consts = sc.constants()
    if re.fullmatch(r"[\w+\-*/()]+", k_text) is None:
        return None
    value = eval_int(k_text, consts)
    if isinstance(value, int):
        return k_text if value > 0 else None
    ints = {name for name, ptr in kernel_params(sc, fn) if not ptr and _is_int_param(sc, fn, name)}
    for name in re.findall(r"[A-Za-z_]\w*", k_text):
        if name not in consts and (name not in ints or written(toks, name)):
            return None
    return k_text


def _is_int_param(sc: SourceScan, fn: Function, name: str) -> bool:
    for part in param_parts(sc.text, fn, at_call=True) or []:
        m = re.fullmatch(r"\s*(.*?)\b([A-Za-z_]\w*)\s*", part, re.S)
        if m and m.group(2) == name:
            return " ".join(w for w in m.group(1).split() if w != "const") in ("int", "unsigned", "unsigned int")
    return False


def _byte_pointers(sc: SourceScan, fn: Function) -> set[str]:
    out = set()
    for part in param_parts(sc.text, fn, at_call=True) or []:
        m = re.fullmatch(r"\s*(.*?)\*\s*(?:__restrict__\s+)?([A-Za-z_]\w*)\s*", part, re.S)
        if m and " ".join(w for w in m.group(1).split() if w != "const") in _BYTE_TYPES:
            out.add(m.group(2))
    return out


def _bound_of(sc: SourceScan, fn: Function, toks: list[Tok], x: str) -> tuple[str, str] | None:
    """(K, how) when the expression ``x`` (tokens joined) is in ``[0, K)``, from its own form."""
    x = unparen(x)
    x = re.sub(r"^\((?:int|unsigned|unsignedint|size_t)\)", "", x)
    if re.fullmatch(r"\(unsignedchar\)\(.*\)|\(uint8_t\)\(.*\)", x):
        return "256", "a byte cast"
    m = re.fullmatch(r"([A-Za-z_]\w*)\[[^\[\]]*\]", x)
    if m and m.group(1) in _byte_pointers(sc, fn):
        return "256", f"a byte of {m.group(1)}"
    m = re.fullmatch(r"min\((.*),(.*)-1\)|min\((.*)-1,(.*)\)", x)
    if m:
        k = m.group(2) if m.group(2) is not None else m.group(3)
        other = m.group(1) if m.group(1) is not None else m.group(4)
        if _balanced(k) and _balanced(other) and (kk := _bins_expr(sc, fn, toks, k)):
            return kk, f"min(..., {kk} - 1)"
    # `X % K`: % the outermost operator (X has no top-level operator of lower precedence), K one operand
    m = re.fullmatch(r"(.+)%(\w+|\(.*\))", x)
    if m and _balanced(m.group(2)) and not re.search(r"[-+<>=!&|^?:,]", _top_level(m.group(1))):
        kk = _bins_expr(sc, fn, toks, unparen(m.group(2)))
        if kk:
            return kk, f"% {kk}"
    # `X & M`, M = 2^k - 1 a literal or constant: & outermost (X has no top-level ^ | && || ?: , =)
    m = re.fullmatch(r"(.+[^&])&(\w+)", x)
    top = _top_level(m.group(1)) if m else ""
    if m and not re.search(r"[|^?:,]|&&|(?<![=!<>])=(?!=)", top):
        mask = eval_int(re.sub(r"^(0[xX][0-9a-fA-F]+)[uUlL]+$", r"\1", m.group(2)), sc.constants())
        if isinstance(mask, int) and mask >= 0 and mask & (mask + 1) == 0:
            return str(mask + 1), f"& {m.group(2)}"
    return None


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += ch in "(["
        depth -= ch in ")]"
        if depth < 0:
            return False
    return depth == 0


def _top_level(x: str) -> str:
    """The characters of ``x`` outside every parenthesis and bracket."""
    out, depth = [], 0
    for ch in x:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _enclosing_ifs(stmts: list[TokStmt], k: int) -> list[TokStmt] | None:
    """The ``if`` statements whose then-branch holds token ``k`` (outermost first); None when ``k`` is
    in an else-branch."""
    for s in stmts:
        if not s.a <= k < s.b:
            continue
        if s.kind == "if":
            if s.orelse is not None and s.orelse.a <= k < s.orelse.b:
                return None
            inner = _enclosing_ifs([s.body], k) if s.body is not None else []
            return None if inner is None else [s, *inner]
        if s.kind == "for" and s.body is not None:
            return _enclosing_ifs([s.body], k)
        if s.kind == "block":
            return _enclosing_ifs(s.children, k)
        return []
    return []


def _bin_bound(sc: SourceScan, fn: Function, toks: list[Tok], stmts: list[TokStmt], k: int,
               e0: int, e1: int) -> tuple[str, str]:
    """(K, how): the bin count that bounds the atomic's index ``toks[e0:e1]`` (see the module doc)."""
    e = _norm(toks, e0, e1)
    own = _bound_of(sc, fn, toks, e)
    if own:
        return own
    # conditions the atomic is only reached under: a top-level conjunct `E < K` / `E <= K - 1`, when E
    # has the same value at the condition and at the atomic
    for s in (_enclosing_ifs(stmts, k) or []) if _stable(sc, fn, toks, e0, e1) else []:
        cond = _norm(toks, *s.header)
        for conj in _conjuncts(cond):
            m = re.fullmatch(rf"{re.escape(e)}<(.+)|(.+)>{re.escape(e)}", conj)
            m1 = re.fullmatch(rf"{re.escape(e)}<=(.+)-1|(.+)-1>={re.escape(e)}", conj)
            for mm in (m, m1):
                kk = mm and _bins_expr(sc, fn, toks, mm.group(1) or mm.group(2))
                if kk:
                    return kk, f"the condition {conj}"
    if e1 - e0 != 1 or toks[e0].kind != "id":
        raise Refuse("the bin count cannot be bounded")
    v = toks[e0].text
    decls = [j for j in range(1, k) if toks[j].text == v and toks[j - 1].kind == "id"
             and toks[j - 1].text not in ("return", "else") and j + 1 < len(toks) and toks[j + 1].text == "="]
    if len(decls) != 1:
        raise Refuse(f"the bin {v} is not a local declared once before the atomic")
    d = decls[0]
    end = next(j for j in range(d, len(toks)) if toks[j].text == ";")
    assigns = [j for j in range(len(toks)) if toks[j].text == v and j != d and (
        (j + 1 < len(toks) and toks[j + 1].text in ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=",
                                                    ">>=", "++", "--")) or toks[j - 1].text in ("++", "--", "&"))]
    found = _bound_of(sc, fn, toks, _norm(toks, d + 2, end))
    clamp = None
    for j in assigns:
        # `if ( v > K - 1 ) v = K - 1 ;` or `if ( v >= K ) v = K - 1 ;` at the top level of v's block
        c = j - 1
        while c >= 0 and toks[c].text != "if":
            c -= 1
        text = _norm(toks, c, j + 1)
        stop = next((t for t in range(j, len(toks)) if toks[t].text == ";"), len(toks) - 1)
        whole = _norm(toks, c, stop + 1)
        m = re.fullmatch(rf"if\({re.escape(v)}>(.+)-1\){re.escape(v)}=(.+)-1;|"
                         rf"if\({re.escape(v)}>=(.+)\){re.escape(v)}=(.+)-1;", whole)
        if (clamp is None and m and text.startswith("if(") and toks[c - 1].text in (";", "{", "}")
                and d < c and stop < k and _same_block(toks, d, c, k)):
            k1, k2 = (m.group(1), m.group(2)) if m.group(1) is not None else (m.group(3), m.group(4))
            if k1 == k2 and (kk := _bins_expr(sc, fn, toks, k1)):
                clamp = (kk, f"the clamp {whole}")
                continue
        raise Refuse(f"the bin {v} is assigned after its declaration")
    if clamp and (found is None or clamp[0] == found[0]):
        return clamp
    if found:
        return found
    raise Refuse("the bin count cannot be bounded")


def _stable(sc: SourceScan, fn: Function, toks: list[Tok], e0: int, e1: int) -> bool:
    """``toks[e0:e1]`` has one value in the whole kernel: no assignment, increment or call in it, its
    names are scalars never assigned after their declaration or const pointer parameters, constants
    or literals."""
    consts = set(sc.constants())
    const_ptrs = set()
    for part in param_parts(sc.text, fn, at_call=True) or []:
        m = re.fullmatch(r"\s*(.*?)\*\s*(?:__restrict__\s+)?([A-Za-z_]\w*)\s*", part, re.S)
        if m and "const" in m.group(1).split():
            const_ptrs.add(m.group(2))
    for j in range(e0, e1):
        t = toks[j]
        if t.kind == "op" and (t.text in ("++", "--", "=") or (t.text.endswith("=") and t.text not in
                               ("==", "!=", "<=", ">="))):
            return False
        if t.kind != "id" or t.text in consts:
            continue
        if j + 1 < e1 and toks[j + 1].text == "(":
            return False
        if j + 1 < e1 and toks[j + 1].text == "[":
            if t.text not in const_ptrs:
                return False
            continue
        uses = [q for q, u in enumerate(toks) if u.text == t.text]
        decls = [q for q in uses if q and toks[q - 1].kind == "id" and q + 1 < len(toks) and toks[q + 1].text == "="]
        if len(decls) > 1:
            return False
        for q in uses:
            nxt = toks[q + 1].text if q + 1 < len(toks) else ""
            prev = toks[q - 1].text if q else ""
            if q not in decls and (nxt in ASSIGN_OPS or nxt in ("++", "--") or prev in ("++", "--", "&")):
                return False
    return True


def _conjuncts(cond: str) -> list[str]:
    cond = unparen(cond)
    out, depth, cur = [], 0, 0
    for j, ch in enumerate(cond):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and cond.startswith("&&", j):
            out.append(cond[cur:j])
            cur = j + 2
        elif depth == 0 and cond.startswith("||", j):
            return []
    out.append(cond[cur:])
    return [unparen(c) for c in out]


def _same_block(toks: list[Tok], d: int, c: int, k: int) -> bool:
    """Tokens ``d`` and ``c`` are at the same brace depth with no block boundary between them, and ``k``
    is after ``c`` inside that block."""
    depth = 0
    for j in range(d, c):
        depth += toks[j].text == "{"
        depth -= toks[j].text == "}"
        if depth < 0:
            return False
    if depth != 0:
        return False
    for j in range(c, k):
        depth += toks[j].text == "{"
        depth -= toks[j].text == "}"
        if depth < 0:
            return False
    return True


def _analyse(sc: SourceScan, fn: Function) -> _Plan:
    body = sc.text[fn.body_start:fn.body_end]
    if _FORBIDDEN.search(body):
        raise Refuse("goto, barrier, shared memory, warp intrinsic or unsupported statement in the kernel")
    for dev in called_device_bodies(sc, body):
        if ATOMIC.search(dev) or _FORBIDDEN.search(dev):
            raise Refuse("a called device function synchronises or does atomics")
    atomics = list(ATOMIC.finditer(body))
    if len(atomics) != 1 or atomics[0].group(0) != "atomicAdd":
        raise Refuse("not exactly one atomic, an atomicAdd")
    toks = tokens(sc.text, fn.body_start, fn.body_end)
    stmts = parse_block(toks, 0, len(toks))
    loop = stride_loop(sc, fn, toks, stmts)
    if loop is None:
        raise Refuse("not a 1-D one-element-per-index kernel (see _grid)")
    k = next(i for i, t in enumerate(toks) if t.text == "atomicAdd")
    _, ((a0, a1), _value) = atomic_statement(toks, k)
    addr = [t.text for t in toks[a0:a1]]
    if len(addr) >= 5 and addr[0] == "&" and toks[a0 + 1].kind == "id" and addr[2] == "[" and addr[-1] == "]":
        ptr_tok, e0, e1 = a0 + 1, a0 + 3, a1 - 1
    elif len(addr) >= 3 and toks[a0].kind == "id" and addr[1] == "+":
        ptr_tok, e0, e1 = a0, a0 + 2, a1
    else:
        raise Refuse("address is not &hist[E] or hist + E")
    hist = toks[ptr_tok].text
    ctype = pointer_type(sc, fn, hist)
    if sum(1 for t in toks if t.text == hist) != 1:
        raise Refuse("the histogram pointer is used other than by its atomic")
    bins, how = _bin_bound(sc, fn, toks, stmts, k, e0, e1)
    value = eval_int(bins, sc.constants())
    static = isinstance(value, int)
    if static and value * _SIZES[ctype] > SMEM_BYTES:
        raise Refuse(f"{value} bins do not fit in {SMEM_BYTES} bytes of shared memory")
    params = [name for name, _ in kernel_params(sc, fn)]
    for launch, _, _ in loop.launches:
        end = sc.text.find(">>>", launch.block[1])
        if sc.text[launch.block[1]:end].strip():
            raise Refuse("a launch passes dynamic shared memory or a stream")
        call = sc.launch_call(launch)
        if call is None:
            raise Refuse("launch arguments")
        arg = sc.expr(call[0][params.index(hist)])
        if not re.fullmatch(r"[A-Za-z_]\w*", arg):
            raise Refuse("the histogram argument is not a plain pointer variable")
    return _Plan(fn, toks, loop, hist, ctype, ptr_tok, bins, static, how)


# ---------------------------------------------------------------------------------------------
# Code generation


def _generate(sc: SourceScan, plan: _Plan) -> str:
    source, toks, loop = sc.source, plan.toks, plan.loop
    taken: set[str] = set()
    s_hist = fresh_name(sc.text, "s_hist", taken)
    sb = fresh_name(sc.text, "hist_b", taken)
    cnt = fresh_name(sc.text, "hist_c", taken)
    cap = fresh_name(sc.text, "HIST_GRID_BLOCKS", taken)
    limit = fresh_name(sc.text, "HIST_SMEM_BINS", taken)
    first = toks[loop.first].start
    ind = line_indent(source, first, sc.text)
    step = "    "
    b0, b1 = loop.body
    p0, p1 = toks[plan.ptr_tok].start, toks[plan.ptr_tok].end
    k = plan.bins if re.fullmatch(r"\w+", plan.bins) else f"({plan.bins})"

    body = indent_lines(dedented(source, loop.body, source[b0:p0] + s_hist + source[p1:b1]), step)
    fill = f"for (int {sb} = threadIdx.x; {sb} < {k}; {sb} += blockDim.x)"
    lines = ["// privatize_histogram: a sub-histogram per block in shared memory, merged once per block"]
    private = [f"{fill} {s_hist}[{sb}] = 0;",
               "__syncthreads();",
               f"{loop.header()} {{", body, "}",
               "__syncthreads();",
               f"{fill} {{",
               f"{step}{plan.ctype} {cnt} = {s_hist}[{sb}];",
               f"{step}if ({cnt} != 0) atomicAdd(&{plan.hist}[{sb}], {cnt});",
               "}"]
    if plan.static:
        lines.append(f"__shared__ {plan.ctype} {s_hist}[{plan.bins}];")
        lines += private
    else:
        original = indent_lines(dedented(source, loop.body, source[b0:b1]), step)
        lines.append(f"extern __shared__ {plan.ctype} {s_hist}[];")
        lines.append(f"if ({k} > 0 && {k} <= {limit}) {{")
        lines += [indent_lines(x, step) for x in private]
        lines.append("} else {  // too many bins for shared memory: the original global atomics")
        lines += [indent_lines(f"{loop.header()} {{\n{original}\n}}", step)]
        lines.append("}")
    text = indent_lines("\n".join(lines), ind)[len(ind):]
    edits = [(first, toks[loop.last - 1].end, text)]
    for launch, _, _ in loop.launches:
        edits.append(cap_grid_edit(sc, launch, cap))
    if not plan.static:
        for launch, kh, _ in kernel_launches(sc, plan.fn, kernel_params(sc, plan.fn), plan.bins):
            kh = kh if re.fullmatch(r"\w+", kh) else f"({kh})"
            edits.append((launch.block[1], launch.block[1],
                          f", ({kh} > 0 && {kh} <= {limit} ? {kh} : 0) * sizeof({plan.ctype})"))
    line_start = source.rfind("\n", 0, plan.fn.header_start) + 1
    defines = f"#define {cap} {GRID_BLOCKS}\n"
    if not plan.static:
        defines += f"#define {limit} {SMEM_BYTES // _SIZES[plan.ctype]}\n"
    edits.append((line_start, line_start, defines))
    return apply_edits(source, edits, stable=True)


@operator(OPERATOR, order=105, motives=_MOTIVES, restructuring=True)
def privatize_histogram_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """A shared-memory sub-histogram per block for every one-atomic-per-element histogram kernel."""
    sc = scan(source)
    motive = motivating_findings(findings, _MOTIVES)
    prior = 2.0 + sum(float(f["severity"] or 0) for f in motive) if motive else 1.5
    out = []
    for fn in sc.kernels():
        try:
            plan = _analyse(sc, fn)
            new = _generate(sc, plan)
        except (Refuse, IndexError, KeyError, ValueError, StopIteration):
            continue
        size = "static" if plan.static else "dynamic, run-time fallback"
        out.append(EditProposal(
            OPERATOR, new, f"{fn.name}: {plan.bins}-bin shared sub-histogram per block ({size}), grid-stride",
            {"kernel": fn.name, "bins": plan.bins, "static": plan.static, "bound": plan.how,
             "type": plan.ctype, "shape": plan.loop.form, "findings": motive}, prior))
    return out
