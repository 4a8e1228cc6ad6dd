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
  covered every i < N, the loop visits exactly the same indices, whatever the cap (the shape and its
  argument are shared with ``privatize_histogram``: :mod:`._grid`).

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

from veriforge.optiml.kernel_reader import FULL_MASK, TokStmt, kernel_params, parse_block
from veriforge.optiml.operators._atomics import ATOMIC, atomic_statement, called_device_bodies, pointer_type
from veriforge.optiml.operators._grid import StrideLoop, cap_grid_edit, stride_loop, written
from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import Function, SourceScan, scan
from veriforge.optiml.source_tokens import Refuse, Tok, apply_edits, fresh_name, line_indent, tokens

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
_FORBIDDEN = re.compile(r"\b(return|goto|asm|__shared__|__syncthreads\w*|__syncwarp|__shfl\w*|__ballot\w*|__any\w*|"
                        r"__all\w*|__activemask|__match\w*|__reduce\w*|cooperative_groups|__threadfence\w*|"
                        r"extern|template|while|do)\b")

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


def _analyse(sc: SourceScan, fn: Function) -> _Plan:
    body = sc.text[fn.body_start:fn.body_end]
    if _FORBIDDEN.search(body):
        raise Refuse("return, barrier, shared memory, warp intrinsic or unsupported statement in the kernel")
    for dev in called_device_bodies(sc, body):
        if ATOMIC.search(dev) or re.search(r"__syncthreads|__shfl|__shared__|__syncwarp|asm", dev):
            raise Refuse("a called device function synchronises or does atomics")
    atomics = list(ATOMIC.finditer(body))
    if len(atomics) != 1:
        raise Refuse("not exactly one atomic")
    toks = tokens(sc.text, fn.body_start, fn.body_end)
    stmts = parse_block(toks, 0, len(toks))
    k = next(i for i, t in enumerate(toks) if t.text == atomics[0].group(0))
    op = toks[k].text
    if op not in ("atomicAdd", "atomicMax", "atomicMin"):
        raise Refuse(f"{op} is not supported")
    close, args = atomic_statement(toks, k)
    (a0, a1), (v0, v1) = args
    ptr = _address_pointer(sc, fn, toks, a0, a1)
    ctype = pointer_type(sc, fn, ptr)
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
        if t.kind == "id" and written(toks, t.text):
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


def _grid_stride(sc: SourceScan, plan: _Plan) -> StrideLoop | None:
    """The guard shape ``int i = <global index>; if (i < N ...) ...`` as a grid-stride loop (:mod:`._grid`)."""
    loop = stride_loop(sc, plan.fn, plan.toks, plan.stmts)
    return loop if loop is not None and loop.form == "guard" else None


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
        if_stmt = plan.stmts[1]
        i0, i1 = toks[if_stmt.a].start, toks[if_stmt.b - 1].end
        inner = source[i0:s0] + combine + source[s1:i1]
        inner = inner.replace("\n", "\n    ")
        edits.append((toks[gs.first].start, i1, f"{gs.header()} {{\n{ind}    {inner}\n{ind}}}"))
        cap = fresh_name(names, "AGG_GRID_THREADS", taken)
        for launch, _, block_expr in gs.launches:
            b = block_expr if re.fullmatch(r"\w+", block_expr) else f"({block_expr})"
            edits.append(cap_grid_edit(sc, launch, f"{cap} / {b}"))
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
