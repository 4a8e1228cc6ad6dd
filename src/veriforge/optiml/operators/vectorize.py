"""The ``vectorize`` operator: VEC consecutive elements per thread through float4/int4 (or float2/int2).

Why: a 1-D element-wise kernel (one thread per element, ``P[i]`` loads and stores) is bound by DRAM
bandwidth and by the number of memory instructions. Moving 16 bytes per instruction instead of 4 —
what every hand-written ``vectorized.cu`` of the bundled tasks does — cuts the load/store
instructions four-fold and lets each thread keep several independent loads in flight.

What it matches (anything else is refused — no edit — because an operator that proposes wrong code
only wastes the search's budget)::

    int i = blockIdx.x * blockDim.x + threadIdx.x;   // any order of the product/sum, integer casts
    if (i < B) { BODY }          or     if (i < B) STATEMENT;     or     if (i >= B) return; BODY

* ``B`` is an expression of the kernel's scalar parameters and constants (``n``, ``rows * cols``).
* Every global access that uses ``i`` as its index is exactly ``P[i]`` for a pointer parameter ``P``
  (other indices — ``w[k]``, ``x[idx[i]]``, ``in[i - off]`` — are allowed for *read-only* pointers
  and stay scalar per element). A pointer that is written is only ever accessed as ``P[i]``; no
  other memory is written (no scatters, no writes through local pointers or ``*p``). The vectorised
  pointers have 4-byte elements (float, int, unsigned). Pointers appear only subscripted (never
  passed on, offset or dereferenced), so the operator sees every access.
* No shared memory, barriers, warp or cooperative-group intrinsics, atomics, printf, ``return`` or
  ``goto`` in BODY, no thread/block/grid built-ins in BODY (they differ per element); ``i`` is never
  modified or addressed, neither it nor a parameter is redeclared, no scalar parameter or file-level
  variable is assigned (the VEC bodies of one thread would see each other's updates); device
  functions BODY calls write no memory and take no references; no macro used in BODY hides an
  access or an assignment.
* No loop per element over memory: a loop with a run-time trip count may read only the vectorised
  ``P[i]`` (a row per thread — ``A[i * N + j]`` — or a coefficient walk — ``coef[k]`` up to
  ``degree`` — would run VEC times in a row in one thread with a quarter of the warps: 3-4x slower
  in the cost model for polynomial_eval and scatter_add), and no loop may read at an
  ``i``-dependent scalar address (a stencil's ``x[i + k]``: VEC per thread spreads each warp's
  loads over VEC times more sectors; 2x slower for stencil_1d_radius3).
* Every launch of the kernel passes distinct arguments to the pointers it writes and to any other
  pointer (an aliased in/out pair would break the load-all-then-store order), its block is 1-D and
  its grid is a plain expression that depends on the bound's arguments; the kernel is used by
  ``<<<>>>`` launches only.

The transformation (each thread owns elements ``base .. base+VEC-1`` with ``base = i_old * VEC``)::

    int vf_base = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (vf_base + 3 < (B) && ((addr(a) | addr(c)) & 15) == 0) {
        const float4 vf_a = *reinterpret_cast<const float4*>(a + vf_base);   // each P[i] read once
        float4 vf_c;                                                          // written: one store
        { int i = vf_base;     BODY[a[i] -> vf_a.x, c[i] -> vf_c.x] }
        { int i = vf_base + 1; BODY[a[i] -> vf_a.y, c[i] -> vf_c.y] }  ...
        *reinterpret_cast<float4*>(c + vf_base) = vf_c;
    } else {                                  // tail of the array or a misaligned (offset) view
        for (int i = vf_base; i < vf_base + 4 && i < (B); ++i) { BODY }
    }

Why it is correct: each element's BODY runs exactly once (fast path: the vector is entirely in range;
slow path: the guarded scalar loop), with its own ``i`` declared, so ``i`` used as a value is the
element's index. Elements are independent because a written pointer is only touched at its own
element (``P[i]``) and read-only pointers are never written, so evaluating the VEC bodies one after
the other in one thread is one of the interleavings the original allowed. A pointer that is read
and written (in place, ``x[i] = f(x[i])``, or written only under a condition) is loaded into its
vector first, its components are read and written as the scalar was, and the vector is stored back:
the element's final value is what the scalar code left in memory. A pointer written only by
unconditional top-level ``P[i] = …`` statements is stored without a load. Alignment is checked at run
time (buffers may be offset views), so misaligned pointers take the scalar path. The grid becomes
``((B + VEC-1) / VEC + block - 1) / block`` with ``B`` written in the launch's arguments and the block
expression unchanged, so ``tune`` still finds and changes the block size (any size stays correct).

Prior: 2.0 + the severities of ``memory_bound``/``low_dram_throughput`` findings (1.0 without), 0.5
less for VEC=2, halved when ``i``-dependent scalar loads stay next to the vectors (``in[i - off]``,
``bias[i % cols]``): their warp accesses get VEC times wider, which the cost model charges. On the
bundled tasks' sizes the cost model rates a streaming kernel at DRAM bandwidth either way (fewer,
wider requests from a quarter of the warps), so this edit mostly ties there — as the hand-written
``vectorized.cu`` versions do (vector_add 3.43 vs 3.42 us naive); the gain it models is real-GPU
instruction count, which the estimate does not see.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import Any

from veriforge.cuda.source_reader import blank
from veriforge.optiml.kernel_reader import ElemKernel, analyse_elementwise, match_elementwise
from veriforge.optiml.operators._elementwise import elementwise_launch_edits, paren
from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import scan
from veriforge.optiml.source_tokens import apply_edits, indent_lines

__all__ = ["vectorize_edits"]

OPERATOR = "vectorize"
WIDTHS = (4, 2)
_VECTOR_TYPES = {"float": "float", "int": "int", "uint": "uint"}
_LANES = "xyzw"
_MOTIVES = {"memory_bound", "low_dram_throughput"}


# ---------------------------------------------------------------------------------------------
# Code generation


def _body_text(source: str, k: ElemKernel, lane: str | None) -> str:
    """BODY with its ``P[i]`` accesses replaced by ``vf_P.<lane>`` (unchanged for ``lane=None``), dedented."""
    s0, s1 = k.body
    out = source[s0:s1]
    if lane is not None:
        for a in sorted(k.accesses, key=lambda a: a.start, reverse=True):
            out = out[:a.start - s0] + f"vf_{a.name}.{lane}" + out[a.end - s0:]
    lines = out.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return textwrap.dedent("\n".join(line.rstrip() for line in lines))


def _kernel_body(source: str, k: ElemKernel, vec: int) -> str:
    ind, step = k.indent, "    "
    itype = re.sub(r"\bconst\s+", "", k.itype)
    bound = paren(k.bound)
    ptrs = [p.name for p in k.params if p.name in k.vec]
    hang = " " * len("bool vf_aligned = ((")
    addrs = f" |\n{ind}{hang}".join(f"reinterpret_cast<unsigned long long>({p})" for p in ptrs)
    lines = [
        f"// vectorize: {vec} consecutive elements per thread (vector loads/stores when the whole",
        f"{ind}// vector is in range and the pointers are {vec * 4}-byte aligned, else element by element).",
        f"{ind}{itype} vf_base = ({itype})({k.init}) * {vec};",
        f"{ind}bool vf_aligned = (({addrs}) & {vec * 4 - 1}) == 0;",
        f"{ind}if (vf_aligned && vf_base + {vec - 1} < {bound}) {{",
    ]
    inner = ind + step
    for p in ptrs:
        vt = f"{_VECTOR_TYPES[k.vec[p]]}{vec}"
        mode = k.mode[p]
        if mode == "ro":
            lines.append(f"{inner}const {vt} vf_{p} = *reinterpret_cast<const {vt}*>({p} + vf_base);")
        elif mode == "rw":
            lines.append(f"{inner}{vt} vf_{p} = *reinterpret_cast<const {vt}*>({p} + vf_base);")
        else:
            lines.append(f"{inner}{vt} vf_{p};")
    for lane_no in range(vec):
        text = _body_text(source, k, _LANES[lane_no])
        lines.append(f"{inner}{{")
        if re.search(rf"\b{re.escape(k.ivar)}\b", blank(text, splice=True)):
            offset = f" + {lane_no}" if lane_no else ""
            lines.append(f"{inner}{step}{itype} {k.ivar} = vf_base{offset};")
        lines.append(indent_lines(text, inner + step))
        lines.append(f"{inner}}}")
    for p in ptrs:
        if k.mode[p] != "ro":
            vt = f"{_VECTOR_TYPES[k.vec[p]]}{vec}"
            lines.append(f"{inner}*reinterpret_cast<{vt}*>({p} + vf_base) = vf_{p};")
    lines.append(f"{ind}}} else {{")
    lines.append(f"{inner}for ({itype} {k.ivar} = vf_base; {k.ivar} < vf_base + {vec} && {k.ivar} < {bound}; "
                 f"++{k.ivar}) {{")
    lines.append(indent_lines(_body_text(source, k, None), inner + step))
    lines.append(f"{inner}}}")
    lines.append(f"{ind}}}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The operator


@operator("vectorize", order=50, motives=_MOTIVES, restructuring=True)
def vectorize_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """VEC=4 and VEC=2 versions of every matching 1-D element-wise kernel of ``source`` (see module doc)."""
    sc = scan(source)
    kernels: list[ElemKernel] = []
    for fn in sc.kernels():
        k = match_elementwise(sc, fn)
        if k is None or not analyse_elementwise(sc, k):
            continue
        kernels.append(k)
    if not kernels:
        return []
    motive = motivating_findings(findings, _MOTIVES)
    severity = sum(float(f["severity"] or 0) for f in motive)
    out = []
    for vec in WIDTHS:
        edits: list[tuple[int, int, str]] = []
        done: list[ElemKernel] = []
        for k in kernels:
            launch = elementwise_launch_edits(sc, k, vec)
            if launch is None:
                continue
            edits.extend(launch)
            edits.append((k.span[0], k.span[1], _kernel_body(source, k, vec)))
            done.append(k)
        if not done:
            return []
        new = apply_edits(source, edits)
        names = ", ".join(k.name for k in done)
        vt = "/".join(sorted({f"{_VECTOR_TYPES[t]}{vec}" for k in done for t in k.vec.values()}))
        scalar = sorted({r for k in done for r in k.scalar_reads})
        prior = (2.0 + severity if motive else 1.0) - (0.5 if vec == 2 else 0.0)
        if scalar:
            prior *= 0.5  # strided scalar loads next to the vectors: rarely a win (see module doc)
        out.append(EditProposal(
            OPERATOR, new, f"{vec} elements per thread with {vt} loads/stores in {names}",
            {"vec": vec, "kernels": [k.name for k in done],
             "pointers": {k.name: dict(k.mode) for k in done}, "scalar_reads": scalar, "findings": motive},
            prior))
    return out
