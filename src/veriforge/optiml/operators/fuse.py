"""The ``fuse`` operator: consecutive element-wise launches become one kernel, one pass over memory.

Why: a chain of 1-D element-wise kernels over the same elements (``scale``, then ``bias``, then
``clamp`` of ``y``) reads and writes every intermediate buffer through DRAM once per launch and pays
a launch overhead each time (the cost model charges a fixed overhead per launch). Running the steps
of one element one after the other in one thread keeps the intermediates in registers/L1 and leaves
one launch — what the hand-written ``fused_2d.cu`` of ``fused_scale_bias_clamp`` does.

What it matches (anything else is refused — no edit)::

    K1<<<G, B>>>(args1);          // statements of one host function, one after the other; between
    int unused = n / 2;           // them only declarations without calls whose names no launch uses
    K2<<<G, B>>>(args2);          // the same grid and block text; no shared-memory size, no stream

* Every ``Kk`` is the 1-D element-wise kernel shape that
  :func:`~veriforge.optiml.kernel_reader.match_elementwise` recognises and analyses
  (``int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < B) {...}`` or ``if (i >= B) return;
  ...``): no shared memory, barriers, warp intrinsics, atomics, grid-stride loops, other
  ``return``\\ s or thread built-ins in the body, written pointers only ever accessed as ``P[i]``,
  no scalar parameter or global assigned, device functions called write nothing. The index
  declarations agree (type; integer casts only when the expressions are identical).
* The bounds agree once each kernel's parameters are replaced by its launch arguments (typed: an
  ``int n`` and an ``unsigned n`` bound do not), so one guard ``if (i < B)`` covers every step.
* Launches are plain statements with a 1-D block (no ``dim3``/braces in grid or block). Pointer
  arguments are plain identifiers; a host local passed as a pointer is never assigned from another
  pointer (``float* z = y + 1`` would hide an offset alias). Scalar arguments call nothing and
  assign nothing (they are evaluated once instead of once per launch).
* Element-local dependences only: a buffer (pointer argument) that any fused kernel writes is
  accessed by every fused kernel only as ``P[i]`` — never ``y[i + 1]``, ``y[i % cols]`` or through a
  second, offset pointer. Read-only buffers may be read anywhere (``bias[i % cols]``).

The transformation: a new kernel ``<first>_fused`` (a fresh name) whose parameters are the distinct
launch arguments (deduplicated by argument text and type; a pointer passed both as ``const T*`` and
``T*`` becomes one ``T*``), named after the host argument where that name is free in every fused
kernel. Its body declares the index once, then under the shared guard runs each original body in
launch order as its own ``{ ... }`` block, with the kernel's parameter and index names renamed to
the fused ones (token-wise; member names after ``.``/``->`` untouched). The first launch becomes
``<first>_fused<<<G, B>>>(union of arguments)`` and the other launches are deleted. An original
kernel that nothing else names any more is removed; the fused kernel takes the place of the last
of the fused definitions (before the host function, after every device function the bodies call).
The block expression is untouched, so ``tune`` still finds it, and the result is correct for any
block size because the guard and the index are the originals'.

Why it is correct: with the same grid and block, thread ``t`` of the fused launch is thread ``t`` of
every original launch, with the same index ``i`` and the same guard outcome. Within one element
the steps run in the original order (block k sees what blocks < k wrote to ``P[i]``, as kernel k saw
what the earlier launches wrote). Across elements nothing changes: a written buffer is touched only
at the thread's own element by every step, so no thread reads or overwrites what another thread's
later (or earlier) step touches, and buffers read elsewhere are never written. Host code between the
launches only declares new names, so evaluating every argument at the first launch gives the same
values. Assumption (the verifier checks it): distinct pointer identifiers are distinct buffers or the
same one, never overlapping at an offset — the contract of the bundled tasks' entry points.

Prior: 2.0 + the severities of ``memory_bound``/``low_dram_throughput`` findings, else 1.2.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from veriforge.optiml.kernel_reader import (
    INT_CAST,
    ElemKernel,
    ElemParam,
    analyse_elementwise,
    file_level_names,
    match_elementwise,
)
from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import Function, Launch, SourceScan, identifiers, scan, split_top
from veriforge.optiml.source_tokens import Refuse, apply_edits, close_of, fresh_name, indent_lines, line_indent, tokens

__all__ = ["fuse_edits"]

OPERATOR = "fuse"
_MOTIVES = {"memory_bound", "low_dram_throughput"}
_RESTRICT = re.compile(r"\b(?:__restrict__|__restrict|restrict)\b")
_DECL_BETWEEN = re.compile(
    r"\s*(?:const\s+)?(?:unsigned\s+int|unsigned|int|long\s+long|long|size_t|float|double|auto)\s+"
    r"([A-Za-z_]\w*)\s*=\s*([^;{}]*);"
)
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")
_CAST_WORDS = {"int", "unsigned", "long", "size_t", "float", "double", "short", "char", "signed", "const"}
_NULL_WORDS = {"nullptr", "NULL"}
_RESERVED = {"nullptr", "NULL", "true", "false", "this", "new", "delete", "sizeof"}
_TYPE_KEYWORDS = {"int", "unsigned", "signed", "long", "short", "char", "float", "double", "bool", "auto", "size_t",
                  "const", "volatile"}


@dataclass
class _Site:
    """One launch statement of a matching kernel."""

    k: ElemKernel
    fn: Function  # the kernel's definition
    launch: Launch
    stmt: tuple[int, int]  # the statement in the source: kernel name .. ``;`` inclusive
    grid: str
    block: str
    args: list[str]  # normalised argument texts, one per parameter
    arg_src: list[str]  # the arguments as written
    bound_key: str  # the bound in host terms, typed
    written: set[str] = field(default_factory=set)  # buffers (pointer argument texts) written
    elsewhere: set[str] = field(default_factory=set)  # buffers accessed at another index than ``P[i]``
    exact: list[tuple[int, int, str]] = field(default_factory=list)  # ``P[i]`` spans and parameter names


@dataclass
class _FParam:
    """One parameter of the fused kernel."""

    name: str
    type_text: str
    arg: str  # normalised argument text
    arg_src: str
    key: tuple[str, str, bool]
    restrict: bool = True
    const_pointee: bool = True


def _norm(expr: str) -> str:
    return " ".join(expr.split())


def _pointer_type(p: ElemParam) -> tuple[str, bool] | None:
    """``(base, const pointee)`` of a ``T*`` parameter (cv and restrict dropped); None when exotic."""
    ty = _RESTRICT.sub(" ", p.type_text)
    if ty.count("*") != 1 or "&" in ty or "volatile" in ty:
        return None
    before = ty.split("*")[0]
    const = bool(re.search(r"\bconst\b", before))
    base = _norm(re.sub(r"\bconst\b", " ", before))
    if not base:
        return None
    return base, const


def _scalar_type(p: ElemParam) -> str | None:
    ty = p.type_text
    if "&" in ty or "*" in ty or "volatile" in ty or "[" in ty:
        return None
    return _norm(re.sub(r"\bconst\b", " ", ty))


# ---------------------------------------------------------------------------------------------
# Launch sites


def _statement(sc: SourceScan, la: Launch) -> tuple[tuple[int, int], list[tuple[int, int]]] | None:
    """The launch statement's span and its argument spans, when it is a plain ``K<<<g, b>>>(...);``."""
    text = sc.text
    m = re.compile(rf"{re.escape(la.kernel)}\s*<<<").match(text, la.start)
    if not m:
        return None  # template arguments between the name and <<<
    host = sc.host_function(la, containing=True)
    before = text[host.body_start:la.start].rstrip() if host is not None else "?"
    if before and before[-1] not in ";{}":
        return None  # not a statement of its own (if (...) K<<<...>>>, a label, an expression)
    end = text.find(">>>", la.block[1])
    if end < 0 or len(split_top(text, m.end(), end)) != 2:
        return None  # shared-memory size or stream
    call = sc.launch_call(la)
    if call is None:
        return None
    semi = re.compile(r"\s*;").match(text, call[2] + 1)
    if not semi:
        return None
    return (la.start, semi.end()), call[0]


def _pure_arg(arg: str) -> bool:
    """No call (casts allowed), no assignment, no increment: evaluating it once or twice is the same."""
    if re.search(r"(?<![=!<>])=(?!=)|\+\+|--|<<<", arg):
        return False
    return all(m.group(1) in _CAST_WORDS for m in _CALL.finditer(arg))


def _accesses(sc: SourceScan, k: ElemKernel, pointers: set[str]) -> tuple[set[str], set[str],
                                                                      list[tuple[int, int, str]]] | None:
    """Pointer parameters written, those accessed at another index than ``P[ivar]``, and the spans
    (into the source) of the ``P[ivar]`` accesses with the parameter's name."""
    text = sc.text
    s0, s1 = k.body
    body = text[s0:s1]
    written, elsewhere = set(), set()
    exact: list[tuple[int, int, str]] = []
    for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)\s*\[", body):
        name = m.group(1)
        if name not in pointers:
            continue
        close = close_of(body, m.end() - 1, "[(")
        if close is None or body[close] != "]":
            return None
        if body[m.end():close].strip() != k.ivar:
            elsewhere.add(name)
        else:
            exact.append((s0 + m.start(), s0 + close + 1, name))
        rest, lead = body[close + 1:], body[:m.start()].rstrip()
        if re.match(r"\s*(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--)", rest) or lead.endswith(("++", "--")):
            written.add(name)
    return written, elsewhere, exact


def _host_pointer_ok(sc: SourceScan, host: Function, name: str) -> bool:
    """A pointer argument that is not an offset view of another one (as far as the host shows)."""
    body = sc.text[host.body_start:host.body_end]
    for m in re.finditer(rf"(?<![\w.>])\*?\s*\b{re.escape(name)}\s*=(?!=)\s*([^;,]*)", body):
        rhs = identifiers(m.group(1)) - _NULL_WORDS - _CAST_WORDS
        if rhs:
            return False
    return not re.search(rf"(?:\+\+|--)\s*{re.escape(name)}\b|\b{re.escape(name)}\s*(?:\+\+|--|[-+]=)", body)


def _site(sc: SourceScan, la: Launch, matched: dict[str, tuple[Function, ElemKernel]]) -> _Site | None:
    if la.kernel not in matched:
        return None
    fn, k = matched[la.kernel]
    host = sc.host_function(la, containing=True)
    if host is None or host.kernel or host.device or fn.body_end > host.header_start:
        return None
    got = _statement(sc, la)
    if got is None:
        return None
    stmt, arg_spans = got
    if len(arg_spans) != len(k.params):
        return None
    grid, block = _norm(sc.expr(la.grid)), _norm(sc.expr(la.block))
    if any(c in grid + block for c in "{}") or "dim3" in grid + block or "<<<" in grid + block:
        return None
    dims = sc.block_dims(la)
    if dims is not None and dims[1] * dims[2] != 1:
        return None
    args = [_norm(sc.text[a:b]) for a, b in arg_spans]
    arg_src = [_norm(sc.source[a:b]) for a, b in arg_spans]
    for p, a in zip(k.params, args, strict=True):
        if p.pointer:
            if _pointer_type(p) is None or not re.fullmatch(r"[A-Za-z_]\w*", a):
                return None
            if not _host_pointer_ok(sc, host, a):
                return None
        elif _scalar_type(p) is None or not _pure_arg(a):
            return None
    by_name = {p.name: (p, a) for p, a in zip(k.params, args, strict=True)}

    def typed(m: re.Match[str]) -> str:
        name = m.group(0)
        if name not in by_name:
            return f"@{name}"  # a file-level name: the same thing in every kernel
        p, a = by_name[name]
        if p.pointer:
            raise Refuse("pointer in the bound")
        return f"(({_scalar_type(p)})({a}))"

    try:
        bound_key = re.sub(r"(?<![\w.])[A-Za-z_]\w*\b", typed, k.bound)
    except Refuse:
        return None
    got_acc = _accesses(sc, k, {p.name for p in k.params if p.pointer})
    if got_acc is None:
        return None
    w, e, exact = got_acc
    return _Site(k, fn, la, stmt, grid, block, args, arg_src, bound_key,
                 {by_name[n][1] for n in w}, {by_name[n][1] for n in e}, exact)


# ---------------------------------------------------------------------------------------------
# Chains of launches


def _index_key(k: ElemKernel) -> tuple[str, str]:
    itype = _norm(re.sub(r"\bconst\b", " ", k.itype))
    init = re.sub(r"\s+", "", k.init)
    return itype, init if INT_CAST.search(k.init) else "plain"


def _gap_names(sc: SourceScan, start: int, end: int) -> set[str] | None:
    """Names declared by the host code between two launches; None unless it is only such declarations."""
    text, pos, names = sc.text, start, set()
    while text[pos:end].strip():
        m = _DECL_BETWEEN.match(text, pos, end)
        if not m or not _pure_arg(m.group(2)) or "<<<" in m.group(2):
            return None
        names.add(m.group(1))
        pos = m.end()
    return names


def _compatible(chain: list[_Site], gaps: set[str], cur: _Site) -> bool:
    first = chain[0]
    if (cur.grid, cur.block, cur.bound_key) != (first.grid, first.block, first.bound_key):
        return False
    if _index_key(cur.k) != _index_key(first.k):
        return False
    written = set().union(*(s.written for s in chain), cur.written)
    elsewhere = set().union(*(s.elsewhere for s in chain), cur.elsewhere)
    if written & elsewhere:
        return False  # a neighbour (or strided) access of a buffer some step writes
    used: set[str] = set()
    for s in [*chain, cur]:
        used |= identifiers(" ".join([s.grid, s.block, *s.args]))
    return not gaps & used


def _chains(sc: SourceScan, sites: list[_Site]) -> list[list[_Site]]:
    out: list[list[_Site]] = []
    chain: list[_Site] = []
    gaps: set[str] = set()
    for cur in sites:
        if chain:
            prev = chain[-1]
            gap = None
            if prev.launch.host == cur.launch.host and prev.stmt[1] <= cur.stmt[0]:
                gap = _gap_names(sc, prev.stmt[1], cur.stmt[0])
            if gap is not None and _compatible(chain, gaps | gap, cur):
                chain.append(cur)
                gaps |= gap
                continue
            if len(chain) > 1:
                out.append(chain)
        chain, gaps = [cur], set()
    if len(chain) > 1:
        out.append(chain)
    return out


# ---------------------------------------------------------------------------------------------
# Code generation


def _kernel_names(sc: SourceScan, fn: Function) -> set[str]:
    """The identifiers of a kernel's definition, member names (after ``.``/``->``) left out."""
    toks = tokens(sc.text, fn.header_start, fn.body_end)
    return {t.text for j, t in enumerate(toks)
            if t.kind == "id" and not (j and toks[j - 1].text in (".", "->"))}


def _declares(sc: SourceScan, k: ElemKernel, name: str) -> bool:
    """Whether BODY (re)declares ``name`` (a type word, ``*`` or ``,`` after one, before it)."""
    toks = tokens(sc.text, *k.body)
    for j, t in enumerate(toks):
        if t.text != name or j == 0:
            continue
        prev = toks[j - 1].text
        if prev in _TYPE_KEYWORDS or (prev in "*&" and j > 1 and toks[j - 2].text in _TYPE_KEYWORDS):
            return True
    return False


def _fused_params(sc: SourceScan, chain: list[_Site]) -> tuple[list[_FParam], list[dict[str, _FParam]]] | None:
    """The fused kernel's parameters and, per site, kernel parameter name -> fused parameter."""
    params: list[_FParam] = []
    by_key: dict[tuple[str, str, bool], _FParam] = {}
    maps: list[dict[str, _FParam]] = []
    for s in chain:
        mapping: dict[str, _FParam] = {}
        for p, a, a_src in zip(s.k.params, s.args, s.arg_src, strict=True):
            pt = _pointer_type(p) if p.pointer else None
            key = (a, pt[0] if pt else (_scalar_type(p) or ""), p.pointer)
            fp = by_key.get(key)
            if fp is None:
                fp = _FParam("", "", a, a_src, key)
                by_key[key] = fp
                params.append(fp)
            if pt is not None:
                fp.const_pointee &= pt[1]
            fp.restrict &= bool(_RESTRICT.search(p.type_text))
            if not p.pointer:
                fp.type_text = _norm(re.sub(r"\bconst\b", " ", p.type_text))
            mapping[p.name] = fp
        maps.append(mapping)
    for fp in params:
        if fp.key[2]:
            shared = sum(1 for q in params if q.key[2] and q.arg == fp.arg) > 1
            fp.type_text = f"{'const ' if fp.const_pointee else ''}{fp.key[1]}*"
            if fp.restrict and not shared:
                fp.type_text += " __restrict__"
    # Names: the host argument where that name is free (no fused kernel uses it for something else, not
    # a file-level name), else a kernel's parameter name under the same rule, else a fresh ``fz_`` name.
    taken: set[str] = set()
    file_names = _file_names(sc)
    for fp in params:
        wants = [fp.arg] if re.fullmatch(r"[A-Za-z_]\w*", fp.arg) else []
        wants += [n for m in maps for n, q in m.items() if q is fp]

        def free(want: str, fp: _FParam = fp) -> bool:
            return want not in taken and want not in file_names and want not in _RESERVED and all(
                want not in _kernel_names(sc, s.fn) or m.get(want) is fp for s, m in zip(chain, maps, strict=True))

        fp.name = next((w for w in wants if free(w)), "") or fresh_name(sc.source, f"fz_{wants[-1]}", taken)
        taken.add(fp.name)
    # Two parameters of one kernel merged into one fused name: a redeclaration in the body would capture both.
    for s, m in zip(chain, maps, strict=True):
        for n, fp in m.items():
            if sum(1 for q in m.values() if q is fp) > 1 and _declares(sc, s.k, n):
                return None
    return params, maps


def _file_names(sc: SourceScan) -> set[str]:
    """Names a kernel body may mean at file level: macros, globals, functions."""
    return file_level_names(sc) | {f.name for f in sc.functions}


def _renamed_body(sc: SourceScan, s: _Site, rename: dict[str, str], regs: dict[str, str]) -> str:
    """BODY of ``s`` with the identifiers in ``rename`` replaced (not after ``.``/``->``/``::``) and the
    ``P[i]`` accesses of the parameters in ``regs`` replaced by their registers, dedented."""
    s0, s1 = s.k.body
    edits = [(a - s0, b - s0, regs[n]) for a, b, n in s.exact if n in regs]
    inside = [(a, b) for a, b, n in s.exact if n in regs]
    toks = tokens(sc.text, s0, s1)
    for j, t in enumerate(toks):
        if any(a <= t.start < b for a, b in inside):
            continue
        if t.kind == "id" and t.text in rename and rename[t.text] != t.text:
            if j and toks[j - 1].text in (".", "->", "::"):
                continue
            edits.append((t.start - s0, t.end - s0, rename[t.text]))
    out = apply_edits(sc.source[s0:s1], edits)
    lines = [line.rstrip() for line in out.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    first = lines[0] if lines else ""
    if lines and not first.startswith((" ", "\t")) and len(lines) > 1:
        lines[0] = line_indent(sc.source, s0, sc.text) + first  # a statement after ``{`` on its line
    return textwrap.dedent("\n".join(lines))


def _forwarded(chain: list[_Site], maps: list[dict[str, _FParam]], params: list[_FParam]) -> list[_FParam]:
    """Written buffers kept in a register across the steps: the first step that touches the buffer
    stores it only by unconditional top-level ``P[i] = ...`` (vectorize's "wo" mode), so every guarded
    element is written (the final store writes nothing the original did not) and no load is needed;
    every step accesses it only as ``P[i]`` through one fused parameter; at least two steps touch it."""
    out = []
    for fp in params:
        if not fp.key[2] or fp.const_pointee or sum(1 for q in params if q.key[2] and q.arg == fp.arg) > 1:
            continue
        if any(fp.arg in s.elsewhere for s in chain):
            continue
        touching = [(s, [n for n, q in m.items() if q is fp]) for s, m in zip(chain, maps, strict=True)]
        touching = [(s, ns) for s, ns in touching if any(n == e[2] for n in ns for e in s.exact)]
        if len(touching) < 2:
            continue  # one step only: its own store is already the only one
        s, ns = touching[0]
        if all(s.k.mode.get(n) == "wo" for n in ns) and any(fp.arg in t.written for t, _ in touching):
            out.append(fp)
    return out


def _macros_ok(sc: SourceScan, s: _Site, renamed: set[str]) -> bool:
    """No macro used in BODY names a parameter or index that the fusion renames."""
    body = sc.text[s.k.body[0]:s.k.body[1]]
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(.*)$", sc.text, re.M):
        if re.search(rf"\b{re.escape(m.group(1))}\b", body) and identifiers(m.group(2)) & renamed:
            return False
    return True


def _fuse(sc: SourceScan, chain: list[_Site]) -> tuple[str, str, dict[str, Any]] | None:
    source, text = sc.source, sc.text
    first = chain[0]
    try:
        got = _fused_params(sc, chain)
    except Refuse:
        return None
    if got is None:
        return None
    params, maps = got
    pnames = {fp.name for fp in params}
    # The index: the first kernel's name when no fused kernel uses it otherwise.
    ivar = first.k.ivar
    if ivar in pnames or ivar in _file_names(sc) or any(
            ivar in _kernel_names(sc, s.fn) and s.k.ivar != ivar for s in chain):
        ivar = fresh_name(source, "fz_i", set(pnames))
    name = fresh_name(source, f"{first.k.name}_fused", {*pnames, ivar})
    indent, step = "    ", "    "
    forwarded = _forwarded(chain, maps, params)
    regs = {fp.name: fresh_name(source, f"fz_{fp.name}", {*pnames, ivar, name}) for fp in forwarded}
    blocks = [f"{indent + step}{fp.key[1]} {regs[fp.name]};  // {fp.name}[{ivar}], stored once below"
              for fp in forwarded]
    for s, m in zip(chain, maps, strict=True):
        rename = {n: fp.name for n, fp in m.items()}
        rename[s.k.ivar] = ivar
        changed = {n for n, v in rename.items() if n != v}
        if not _macros_ok(sc, s, changed):
            return None
        try:
            body = _renamed_body(sc, s, rename, {n: regs[fp.name] for n, fp in m.items() if fp.name in regs})
        except Refuse:
            return None
        blocks.append(f"{indent + step}{{  // {s.k.name}\n{indent_lines(body, indent + step * 2)}\n{indent + step}}}")
    blocks += [f"{indent + step}{fp.name}[{ivar}] = {regs[fp.name]};" for fp in forwarded]
    # The guard: the first kernel's bound in fused names.
    bound_map = {n: fp.name for n, fp in maps[0].items()}
    bound = re.sub(r"(?<![\w.])[A-Za-z_]\w*\b", lambda mm: bound_map.get(mm.group(0), mm.group(0)), first.k.bound)
    head = f"__global__ void {name}("
    plist = [f"{fp.type_text} {fp.name}" for fp in params]
    lines_p, cur = [], head
    for j, p in enumerate(plist):
        piece = p + (", " if j < len(plist) - 1 else ") {")
        if len(cur) + len(piece.rstrip()) > 118 and cur.strip() != head.strip():
            lines_p.append(cur.rstrip())
            cur = " " * len(head)
        cur += piece
    lines_p.append(cur)
    names = ", ".join(s.k.name for s in chain)
    kernel = "\n".join([
        f"// fuse: {names} in one pass (each element's steps run in launch order).",
        *lines_p,
        f"{indent}{first.k.itype} {ivar} = {first.k.init};",
        f"{indent}if ({ivar} < {bound}) {{",
        *blocks,
        f"{indent}}}",
        "}",
    ])
    # Host: the first launch becomes the fused one, the others go.
    grid_src = _norm(source[first.launch.grid[0]:first.launch.grid[1]])
    block_src = _norm(source[first.launch.block[0]:first.launch.block[1]])
    call = f"{name}<<<{grid_src}, {block_src}>>>({', '.join(fp.arg_src for fp in params)});"
    edits: list[tuple[int, int, str]] = [(first.stmt[0], first.stmt[1], call)]
    for s in chain[1:]:
        a, b = s.stmt
        line_start = text.rfind("\n", 0, a) + 1
        eol = text.find("\n", b)
        eol = len(text) if eol < 0 else eol
        if not text[line_start:a].strip() and not text[b:eol].strip():
            a, b = line_start, min(eol + 1, len(text))
        edits.append((a, b, ""))
    # Kernels: remove those nothing else names; the fused one goes where the last definition was.
    fns = {s.fn.name: s.fn for s in chain}
    launches = {s.k.name: 0 for s in chain}
    for s in chain:
        launches[s.k.name] += 1
    removed = []
    for kname, fn in fns.items():
        uses = len(re.findall(rf"(?<![\w.]){re.escape(kname)}\b", text))
        if uses == 1 + launches[kname]:
            removed.append(fn)
    last = max(fns.values(), key=lambda f: f.body_end)
    for fn in removed:
        a, b = fn.header_start, fn.body_end + 1
        if fn is last:
            edits.append((a, b, kernel))
            continue
        eol = text.find("\n", b)
        if eol >= 0 and not text[b:eol].strip():
            b = eol + 1
            while text.startswith("\n", b) and text[a - 2:a] == "\n\n":
                b += 1
        edits.append((a, b, ""))
    if last not in removed:
        edits.append((last.body_end + 1, last.body_end + 1, "\n\n" + kernel))
    try:
        new = apply_edits(source, edits, disjoint=True)
    except ValueError:
        return None
    evidence = {"kernels": [s.k.name for s in chain], "fused": name, "params": [fp.name for fp in params],
                "registers": [fp.name for fp in forwarded],
                "removed": sorted(fn.name for fn in removed), "host": first.launch.host}
    return new, name, evidence


# ---------------------------------------------------------------------------------------------
# The operator


@operator("fuse", order=110, motives=_MOTIVES, restructuring=True)
def fuse_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """One edit per maximal chain of fusable consecutive launches of ``source`` (see module doc)."""
    sc = scan(source)
    matched: dict[str, tuple[Function, ElemKernel]] = {}
    counts: dict[str, int] = {}
    for fn in sc.kernels():
        counts[fn.name] = counts.get(fn.name, 0) + 1
    for fn in sc.kernels():
        if counts[fn.name] != 1 or "template" in sc.text[fn.header_start:fn.body_start]:
            continue  # overloads and templates: which definition a launch calls is not read here
        k = match_elementwise(sc, fn)
        if k is None or not analyse_elementwise(sc, k):
            continue
        matched[fn.name] = (fn, k)
    if len(sc.launches) < 2 or not matched:
        return []
    sites = [s for la in sorted(sc.launches, key=lambda la: la.start) if (s := _site(sc, la, matched))]
    motive = motivating_findings(findings, _MOTIVES)
    severity = sum(float(f["severity"] or 0) for f in motive)
    prior = 2.0 + severity if motive else 1.2
    out = []
    for chain in _chains(sc, sites):  # a launch between two others breaks their chain (see _gap_names)
        got = _fuse(sc, chain)
        if got is None:
            continue
        new, name, evidence = got
        evidence["findings"] = motive
        out.append(EditProposal(
            OPERATOR, new, f"fuse {len(chain)} launches ({', '.join(evidence['kernels'])}) into {name}",
            evidence, prior))
    return out
