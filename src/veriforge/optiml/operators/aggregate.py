"""The ``aggregate`` operator: warp- and block-aggregated atomics for reductions into one global address.

Why: a naive reduction kernel lets every thread do ``atomicAdd(out, v)`` (or ``atomicMax``/``atomicMin``)
on the same word, so all its atomics serialise at one L2 slice. Combining the contributions of a warp
with register shuffles first (or of a whole block, through a 32-entry shared array) leaves one atomic per
warp (per block), and turning the one-thread-per-element kernel into a grid-stride loop over a capped
grid leaves a few hundred atomics in all while each thread streams many elements.

Transformation (edits of the kernel text, nothing else moves):

* a local ``agg`` initialised to the identity of the operation (0 for ``atomicAdd``, the type's lowest
  value for ``atomicMax``, its highest for ``atomicMin``) is declared at the top of the kernel;
* the atomic statement becomes ``agg = combine(agg, (T)(v))`` under the very same conditions (and in
  the same loops) as before, so each thread's ``agg`` is the combination of what it would have sent;
* at the end of the kernel every lane of the warp takes part in a butterfly of ``__shfl_xor_sync``;
  variant ``warp``: lane 0 does one atomic with the warp's total; variant ``block``: lane 0 of each
  warp writes its total to ``__shared__ T part[32]``, ``__syncthreads()``, warp 0 combines those of
  the ``blockDim.x / 32`` warps and thread 0 does one atomic per block;
* variant ``grid_stride`` (block aggregation too) applies when the kernel is exactly
  ``int i = <global thread index>; if (i < N [&& rest]) ...atomic...``: the ``if`` runs inside
  ``for (int i = <index>; i < N; i += blockDim.x * gridDim.x)`` and every launch grid ``G`` that is the
  ceil-division ``(N + B - 1) / B`` of the same N (the launch's argument for it) by the launch's block
  size B becomes ``min(G, AGG_GRID_THREADS / B)`` (about one full wave of the GPU, so each thread
  streams several elements on large inputs and the block size stays tunable); since the original grid
  covered every i < N, the loop visits exactly the same indices, whatever the cap.

Preconditions (otherwise no edit): exactly one atomic in the kernel, a statement of its own (its value
unused) of a supported kind (``atomicAdd`` on int / unsigned / unsigned long long / float,
``atomicMax``/``atomicMin`` on int / unsigned / unsigned long long) whose address is a non-const
pointer parameter ``p`` (or ``p + E`` / ``&p[E]``, E built from unmodified scalar parameters and
literals only), ``p`` mentioned nowhere else; no ``return``, ``goto``, ``asm``, shared memory, barriers,
warp intrinsics or other atomics in the kernel or the device functions it calls (so every lane of
every warp reaches the shuffles and the barrier); every launch 1-D with a block size that resolves to
a multiple of 32 (the ``tune`` operator keeps block sizes powers of two in 32..1024, and the generated
code reads ``blockDim.x``, so the result stays correct after tuning).

Why it is correct: sum (of integers), max and min are associative and commutative and the identity
changes nothing, so the one atomic per warp/block writes the same combined value the individual
atomics would have; float sums change only their rounding order (the tasks' tolerances allow it). A
thread whose conditions fail contributes the identity. An atomic of the identity is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veriforge.optiml.kernel_reader import FULL_MASK, TokStmt, kernel_launches, kernel_params, parse_block
from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import Function, SourceScan, param_parts, scan
from veriforge.optiml.source_tokens import ASSIGN_OPS, Refuse, Tok, apply_edits, fresh_name, line_indent, tokens

__all__ = ["GRID_CAP", "aggregate_edits"]

GRID_CAP = 262144  # AGG_GRID_THREADS: threads of the grid-stride variant's grid (~ what an H100 holds at once)
_MOTIVES = {"memory_bound", "compute_bound", "low_warp_efficiency", "atomic_contention", "serialized_atomics",
            "low_dram_throughput", "small_grid", "low_occupancy"}

# (atomic, type) -> identity literal
_IDENTITY = {
    ("atomicAdd", "int"): "0", ("atomicAdd", "unsigned int"): "0u", ("atomicAdd", "unsigned long long"): "0ull",
    ("atomicAdd", "float"): "0.0f",
    ("atomicMax", "int"): "(-2147483647 - 1)", ("atomicMax", "unsigned int"): "0u",
    ("atomicMax", "unsigned long long"): "0ull",
    ("atomicMin", "int"): "2147483647", ("atomicMin", "unsigned int"): "0xffffffffu",
    ("atomicMin", "unsigned long long"): "0xffffffffffffffffull",
}
_TYPES = {"float": "float", "int": "int", "signed int": "int", "unsigned": "unsigned int",
          "unsigned int": "unsigned int", "unsigned long long": "unsigned long long",
          "unsigned long long int": "unsigned long long"}
_FORBIDDEN = re.compile(r"\b(return|goto|asm|__shared__|__syncthreads\w*|__syncwarp|__shfl\w*|__ballot\w*|__any\w*|"
                        r"__all\w*|__activemask|__match\w*|__reduce\w*|cooperative_groups|__threadfence\w*|"
                        r"extern|template|while|do)\b")
_ATOMIC = re.compile(r"\batomic\w*\b")
_INDEX_FORMS = {"blockIdx.x*blockDim.x+threadIdx.x", "blockDim.x*blockIdx.x+threadIdx.x",
                "threadIdx.x+blockIdx.x*blockDim.x", "threadIdx.x+blockDim.x*blockIdx.x"}


@dataclass
class _Plan:
    fn: Function
    toks: list[Tok]
    stmts: list[TokStmt]
    op: str  # atomicAdd | atomicMax | atomicMin
    ctype: str
    stmt: tuple[int, int]  # token range of the atomic statement (``atomicX(addr, v);``)
    addr: str  # source text of the address
    value: str  # source text of the value
    indent: str


def _called_device_bodies(sc: SourceScan, body: str) -> list[str]:
    called = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", body))
    return [sc.text[f.body_start:f.body_end] for f in sc.functions if f.device and f.name in called]


def _pointer_param(sc: SourceScan, fn: Function, name: str) -> str:
    parts = param_parts(sc.text, fn, at_call=True)
    if parts is None:
        raise Refuse("kernel header")
    for part in parts:
        m = re.fullmatch(r"\s*(.*?)\*\s*(?:__restrict__\s+)?([A-Za-z_]\w*)\s*", part, re.S)
        if m and m.group(2) == name:
            words = m.group(1).split()
            if "const" in words or "*" in m.group(1):
                raise Refuse("address is a const or multi-level pointer")
            ctype = _TYPES.get(" ".join(words))
            if ctype is None:
                raise Refuse(f"unsupported atomic type {' '.join(words)!r}")
            return ctype
    raise Refuse("atomic address is not a pointer parameter")


def _written(toks: list[Tok], name: str) -> bool:
    for k, t in enumerate(toks):
        if t.text != name:
            continue
        nxt = toks[k + 1].text if k + 1 < len(toks) else ""
        prev = toks[k - 1].text if k else ""
        if nxt in ASSIGN_OPS or nxt in ("++", "--") or prev in ("++", "--", "&"):
            return True
    return False


def _analyse(sc: SourceScan, fn: Function) -> _Plan:
    body = sc.text[fn.body_start:fn.body_end]
    if _FORBIDDEN.search(body):
        raise Refuse("return, barrier, shared memory, warp intrinsic or unsupported statement in the kernel")
    for dev in _called_device_bodies(sc, body):
        if _ATOMIC.search(dev) or re.search(r"__syncthreads|__shfl|__shared__|__syncwarp|asm", dev):
            raise Refuse("a called device function synchronises or does atomics")
    atomics = list(_ATOMIC.finditer(body))
    if len(atomics) != 1:
        raise Refuse("not exactly one atomic")
    toks = tokens(sc.text, fn.body_start, fn.body_end)
    stmts = parse_block(toks, 0, len(toks))
    k = next(i for i, t in enumerate(toks) if t.text == atomics[0].group(0))
    op = toks[k].text
    if op not in ("atomicAdd", "atomicMax", "atomicMin"):
        raise Refuse(f"{op} is not supported")
    # a statement of its own: preceded by ; { } ) (an if/for header or a previous statement) or else
    prev = toks[k - 1].text if k else "{"
    if prev not in (";", "{", "}", ")", "else") or (prev == ")" and not _closes_header(toks, k - 1)):
        raise Refuse("the atomic's value is used")
    if k + 1 >= len(toks) or toks[k + 1].text != "(":
        raise Refuse("malformed atomic")
    close = _close(toks, k + 1)
    if close + 1 >= len(toks) or toks[close + 1].text != ";":
        raise Refuse("the atomic's value is used")
    args = _split_args(toks, k + 2, close)
    if len(args) != 2:
        raise Refuse("atomic with other than two arguments")
    (a0, a1), (v0, v1) = args
    ptr = _address_pointer(sc, fn, toks, a0, a1)
    ctype = _pointer_param(sc, fn, ptr)
    if (op, ctype) not in _IDENTITY:
        raise Refuse(f"{op} on {ctype} is not supported")
    if sum(1 for t in toks if t.text == ptr) != 1:
        raise Refuse("the atomic's pointer is used elsewhere in the kernel")
    if v0 >= v1:
        raise Refuse("empty value")
    addr = sc.source[toks[a0].start:toks[a1 - 1].end]
    value = sc.source[toks[v0].start:toks[v1 - 1].end]
    first = toks[stmts[0].a].start if stmts else fn.body_end
    return _Plan(fn, toks, stmts, op, ctype, (k, close + 2), addr, value,
                 line_indent(sc.source, first, sc.text) if stmts else "    ")


def _closes_header(toks: list[Tok], k: int) -> bool:
    """``toks[k]`` is a ``)`` closing an ``if``/``for`` header."""
    depth = 0
    for j in range(k, -1, -1):
        if toks[j].text == ")":
            depth += 1
        elif toks[j].text == "(":
            depth -= 1
            if depth == 0:
                return j > 0 and toks[j - 1].text in ("if", "for")
    return False


def _close(toks: list[Tok], i: int) -> int:
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text in "([{" and len(toks[j].text) == 1:
            depth += 1
        elif toks[j].text in ")]}" and len(toks[j].text) == 1:
            depth -= 1
            if depth == 0:
                return j
    raise Refuse("unbalanced brackets")


def _split_args(toks: list[Tok], a: int, b: int) -> list[tuple[int, int]]:
    out, cur, depth = [], a, 0
    for j in range(a, b):
        t = toks[j].text
        if t in ("(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
        elif t == "," and depth == 0:
            out.append((cur, j))
            cur = j + 1
    out.append((cur, b))
    return out


def _address_pointer(sc: SourceScan, fn: Function, toks: list[Tok], a: int, b: int) -> str:
    """The pointer parameter of an address ``p``, ``p + E`` or ``&p[E]`` with a thread-independent E."""
    texts = [t.text for t in toks[a:b]]
    if len(texts) == 1 and toks[a].kind == "id":
        return texts[0]
    if len(texts) >= 4 and texts[0] == "&" and toks[a + 1].kind == "id" and texts[2] == "[" and texts[-1] == "]":
        name, e = texts[1], (a + 3, b - 1)
    elif len(texts) >= 3 and toks[a].kind == "id" and texts[1] == "+":
        name, e = texts[0], (a + 2, b)
    else:
        raise Refuse("address form")
    scalars = {n for n, ptr in kernel_params(sc, fn) if not ptr}
    consts = set(sc.constants())
    for t in toks[e[0]:e[1]]:
        if t.kind == "id" and t.text not in scalars and t.text not in consts:
            raise Refuse("the atomic's address may depend on the thread or the data")
        if t.kind == "op" and t.text not in ("+", "-", "*", "/", "%", "(", ")", "<<", ">>"):
            raise Refuse("address expression")
        if t.kind == "id" and _written(toks, t.text):
            raise Refuse("the address offset is modified in the kernel")
    return name


def _combine(op: str, agg: str, value: str, ctype: str, tmp: str) -> str:
    if op == "atomicAdd":
        return f"{agg} += ({ctype})({value});"
    cmp = ">" if op == "atomicMax" else "<"
    return f"{{ {ctype} {tmp} = ({ctype})({value}); if ({tmp} {cmp} {agg}) {agg} = {tmp}; }}"


def _warp_reduce(op: str, agg: str, ctype: str, off: str, tmp: str) -> str:
    shfl = f"__shfl_xor_sync({FULL_MASK}, {agg}, {off})"
    if op == "atomicAdd":
        return f"for (int {off} = 16; {off} > 0; {off} >>= 1) {agg} += {shfl};"
    cmp = ">" if op == "atomicMax" else "<"
    return (f"for (int {off} = 16; {off} > 0; {off} >>= 1) {{ {ctype} {tmp} = {shfl}; "
            f"if ({tmp} {cmp} {agg}) {agg} = {tmp}; }}")


def _grid_stride(sc: SourceScan, plan: _Plan) -> tuple[tuple[int, int], str, str, str, list[Any]] | None:
    """``int i = <global index>; if (i < N ...) ...``: (index decl token range, decl type, var, N, launches)."""
    toks, stmts = plan.toks, plan.stmts
    if len(stmts) != 2 or stmts[1].kind != "if" or stmts[1].orelse is not None:
        return None
    decl = [t.text for t in toks[stmts[0].a:stmts[0].b]]
    try:
        eq = decl.index("=")
    except ValueError:
        return None
    type_words, var = decl[:eq - 1], decl[eq - 1]
    if not type_words or any(w not in ("int", "unsigned", "long", "size_t", "const") for w in type_words):
        return None
    if "".join(decl[eq + 1:-1]) not in _INDEX_FORMS:
        return None
    type_text = " ".join(w for w in type_words if w != "const")
    h0, h1 = stmts[1].header
    cond = [t.text for t in toks[h0:h1]]
    if len(cond) < 3 or cond[0] != var or cond[1] != "<":
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
    params = kernel_params(sc, plan.fn)
    scalars = {n for n, ptr in params if not ptr}
    if not bound_toks or any(t.kind == "id" and (t.text not in scalars or _written(toks, t.text)) for t in bound_toks):
        return None
    if any(t.kind == "op" and t.text not in ("+", "-", "*", "/", "(", ")") for t in bound_toks):
        return None
    if _written(toks[stmts[1].a:], var):
        return None
    bound = sc.source[bound_toks[0].start:bound_toks[-1].end]
    try:
        launches = kernel_launches(sc, plan.fn, params, bound)
    except Refuse:
        return None
    for launch, rows, block in launches:
        if not _covers(sc.expr(launch.grid), rows, block):
            return None
    return (stmts[0].a, stmts[0].b), type_text, var, bound, launches


def _covers(grid: str, rows: str, block: str) -> bool:
    """``grid`` is the ceil-division of ``rows`` by ``block`` (so the original grid covers every index)."""
    g, r, b = (re.sub(r"\s+", "", x) for x in (grid, rows, block))
    forms = {f"({r}+{b}-1)/{b}", f"({r}+({b}-1))/{b}", f"({r}+{b}-1)/({b})"}
    if b.isdigit():
        forms.add(f"({r}+{int(b) - 1})/{b}")
    return g in forms


def _generate(sc: SourceScan, plan: _Plan, variant: str) -> str:
    source, toks, names = sc.source, plan.toks, sc.text
    taken: set[str] = set()
    agg = fresh_name(names, "agg", taken)
    tmp = fresh_name(names, "agg_v", taken)
    off = fresh_name(names, "agg_off", taken)
    ident = _IDENTITY[(plan.op, plan.ctype)]
    ind = plan.indent
    block = variant in ("block", "grid_stride")
    edits: list[tuple[int, int, str]] = []

    s0, s1 = toks[plan.stmt[0]].start, toks[plan.stmt[1] - 1].end
    combine = _combine(plan.op, agg, plan.value, plan.ctype, tmp)
    if variant == "grid_stride":
        gs = _grid_stride(sc, plan)
        assert gs is not None
        (d0, d1), itype, var, bound, launches = gs
        init = source[toks[d0].start:toks[d1 - 1].end]
        init = init[init.index("=") + 1:].rstrip(";").strip()
        if_stmt = plan.stmts[1]
        i0, i1 = toks[if_stmt.a].start, toks[if_stmt.b - 1].end
        inner = source[i0:s0] + combine + source[s1:i1]
        inner = inner.replace("\n", "\n    ")
        loop = (f"for ({itype} {var} = {init}; {var} < {bound}; {var} += blockDim.x * gridDim.x) {{\n"
                f"{ind}    {inner}\n{ind}}}")
        edits.append((toks[d0].start, i1, loop))
        cap = fresh_name(names, "AGG_GRID_THREADS", taken)
        for launch, _, block_expr in launches:
            g = sc.source[launch.grid[0]:launch.grid[1]].strip()
            g0 = launch.grid[0] + sc.source[launch.grid[0]:launch.grid[1]].index(g)
            b = block_expr if re.fullmatch(r"\w+", block_expr) else f"({block_expr})"
            edits.append((g0, g0 + len(g), f"(({g}) < {cap} / {b} ? ({g}) : {cap} / {b})"))
        line_start = source.rfind("\n", 0, plan.fn.header_start) + 1
        edits.append((line_start, line_start, f"#define {cap} {GRID_CAP}\n"))
    else:
        edits.append((s0, s1, combine))

    edits.append((toks[plan.stmts[0].a].start if plan.stmts else plan.fn.body_end, toks[plan.stmts[0].a].start
                  if plan.stmts else plan.fn.body_end, f"{plan.ctype} {agg} = {ident};\n{ind}"))
    lines = ["// every lane reaches this point: combine the warp's contributions, then one atomic",
             _warp_reduce(plan.op, agg, plan.ctype, off, tmp)]
    if block:
        part = fresh_name(names, "agg_part", taken)
        lines += [
            f"__shared__ {plan.ctype} {part}[32];",
            f"if ((threadIdx.x & 31) == 0) {part}[threadIdx.x >> 5] = {agg};",
            "__syncthreads();",
            "if (threadIdx.x < 32) {",
            f"    {agg} = threadIdx.x < (blockDim.x >> 5) ? {part}[threadIdx.x] : {ident};",
            "    " + _warp_reduce(plan.op, agg, plan.ctype, off, tmp),
            f"    if (threadIdx.x == 0 && {agg} != {ident}) {plan.op}({plan.addr}, {agg});",
            "}",
        ]
    else:
        lines.append(f"if ((threadIdx.x & 31) == 0 && {agg} != {ident}) {plan.op}({plan.addr}, {agg});")
    end = toks[plan.stmts[-1].b - 1].end
    edits.append((end, end, "".join(f"\n{ind}{line}" for line in lines)))
    return apply_edits(source, edits, stable=True)


def _check_launches(sc: SourceScan, fn: Function) -> None:
    sites = sc.launches_of(fn.name)
    if not sites:
        raise Refuse("kernel is never launched")
    for launch in sites:
        if "dim3" in sc.expr(launch.block):
            raise Refuse("dim3 block")
        dims = sc.block_dims(launch)
        if dims is None or dims[1] != 1 or dims[2] != 1 or dims[0] % 32 or dims[0] > 1024:
            raise Refuse("block size not a resolvable 1-D multiple of 32")


@operator("aggregate", order=100, motives=_MOTIVES, restructuring=True)
def aggregate_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Warp-, block- and grid-stride-aggregated versions of every single-address atomic reduction kernel."""
    sc = scan(source)
    motive = motivating_findings(findings, _MOTIVES)
    base = 2.0 + sum(float(f["severity"] or 0) for f in motive) if motive else 1.5
    out = []
    for fn in sc.kernels():
        try:
            plan = _analyse(sc, fn)
            _check_launches(sc, fn)
            variants = ["block", "warp"]  # the most aggregation first
            if _grid_stride(sc, plan) is not None:
                variants.insert(0, "grid_stride")
        except (Refuse, IndexError, KeyError, ValueError):
            continue
        for rank, variant in enumerate(variants):
            new = _generate(sc, plan, variant)
            what = {"warp": "warp-aggregated (shuffle, one atomic per warp)",
                    "block": "block-aggregated (shuffle + shared, one atomic per block)",
                    "grid_stride": "grid-stride loop over a capped grid, block-aggregated"}[variant]
            out.append(EditProposal(
                "aggregate", new, f"{plan.op} of {fn.name}: {what}",
                {"kernel": fn.name, "atomic": plan.op, "type": plan.ctype, "variant": variant,
                 "findings": motive},
                round(base - 0.1 * rank, 3)))
    return out
