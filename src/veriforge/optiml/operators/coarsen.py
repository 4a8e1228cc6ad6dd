"""The ``coarsen`` operator: several elements per thread for 1-D element-wise kernels.

Why: a one-thread-per-element kernel pays the index arithmetic, the bounds check and the block
scheduling once per element; on large inputs a thread that handles several elements amortises them,
keeps more independent loads in flight and leaves a grid the GPU runs in one or two waves. Two forms:

* ``grid_stride`` — ``for (T i = <global index>; i < B; i += blockDim.x * gridDim.x) { BODY }`` with
  every launch grid ``G`` capped to ``min(G, COARSEN_GRID_BLOCKS)`` (four blocks per SM of the cost
  model's GPU);
* ``factor`` — each thread handles ``COARSEN_FACTOR`` (a ``#define``, 2 or 4, tunable) elements
  ``blockIdx.x * blockDim.x * COARSEN_FACTOR + threadIdx.x + c * blockDim.x`` (consecutive threads stay
  on consecutive elements, so every access stays coalesced), the grid divided by the factor::

      T cf_base = (T)blockIdx.x * blockDim.x * COARSEN_FACTOR + threadIdx.x;
      #pragma unroll
      for (int cf_c = 0; cf_c < COARSEN_FACTOR; ++cf_c) {
          T i = cf_base + (T)cf_c * blockDim.x;
          if (i < B) { BODY }                                   // the tail: each element checked
      }

  with every grid ``((B + COARSEN_FACTOR - 1) / COARSEN_FACTOR + block - 1) / block`` in the
  launch's arguments (the block expression unchanged, so ``tune`` still moves the block size).

What it matches: the 1-D element-wise kernels of :func:`~veriforge.optiml.kernel_reader.match_elementwise`
(``T i = <global index>;`` then ``if (i < B) { BODY }``, ``if (i < B) STATEMENT;`` or ``if (i >= B)
return; BODY``) whose elements are independent by
:func:`~veriforge.optiml.kernel_reader.analyse_elementwise` (``vector=False``): a written pointer is
only ever accessed at ``[i]`` (no other element of a written array is read), nothing else is written
(no scatter, no writes through local pointers), no atomics, barriers, shared memory, warp
intrinsics, thread built-ins, ``return`` or ``goto`` in BODY, ``i`` never modified, no parameter or
file-level scalar assigned, called device functions pure — the checks ``vectorize`` relies on. The
early return is the only ``return`` handled (it becomes the loop's bound / the per-element check);
any other is refused. Every launch must also pass :mod:`._grid`'s check (the grid is the
ceil-division of B by the block size: the original ran exactly the elements ``i < B``) and
:func:`~._elementwise.elementwise_launch_edits`' (distinct buffers for written pointers, the bound
in the launch's arguments, 1-D blocks, the kernel used by ``<<<>>>`` launches only).

Why it is correct: in both forms every ``i`` in ``[0, B)`` is handled exactly once (grid-stride:
:mod:`._grid`; factor: the grid covers ``ceil(B / factor)`` threads' worth of ``factor``-element
groups and each element is checked against B) with its own ``i`` declared and BODY unchanged. Because
elements are independent (no element reads what another writes), running several of them one after
the other in one thread gives the results the one-thread-per-element kernel gave.

Prior: 1.0 for factor 2, 0.95 for the grid-stride form, 0.9 for factor 4 (plus the severities of the
motivating findings). On the cost model a streaming kernel is bound by DRAM bandwidth either way, so
these edits mostly tie on the bundled tasks (vector_add: factor 2 -1.4 %, grid-stride -0.4 %, factor 4
+14 %: a quarter of the threads hide less latency on the small sizes); they are the step before
vectorisation or a per-thread reduction, and the grid-stride form is what makes per-block work
(``aggregate``, ``privatize_histogram``) cheap. ``aggregate`` and ``privatize_histogram`` produce their
own grid-stride loops for atomics; this operator takes only kernels without atomics.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from veriforge.optiml.kernel_reader import ElemKernel, analyse_elementwise, match_elementwise, parse_block
from veriforge.optiml.operators._elementwise import elementwise_launch_edits, paren
from veriforge.optiml.operators._grid import StrideLoop, cap_grid_edit, stride_loop
from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import SourceScan, scan
from veriforge.optiml.source_tokens import Refuse, apply_edits, dedented, fresh_name, indent_lines, tokens

__all__ = ["FACTORS", "coarsen_edits"]

OPERATOR = "coarsen"
FACTORS = (2, 4)
_MOTIVES = {"memory_bound", "low_dram_throughput", "small_grid", "tail_effect", "launch_overhead"}


def _grid_blocks() -> int:
    """Four blocks per SM of the GPU the cost model prices."""
    from veriforge.cuda.arch import get_gpu
    from veriforge.cuda.evaluate.estimate import DEFAULT_GPU

    return 4 * get_gpu(DEFAULT_GPU).sm_count


GRID_BLOCKS = _grid_blocks()


def _body(source: str, k: ElemKernel, prefix: str) -> str:
    """BODY, dedented and indented by ``prefix``."""
    return indent_lines(dedented(source, k.body), prefix)


def _match(sc: SourceScan, fn: Any) -> tuple[ElemKernel, StrideLoop] | None:
    k = match_elementwise(sc, fn)
    if k is None or not analyse_elementwise(sc, k, vector=False):
        return None
    toks = tokens(sc.text, fn.body_start, fn.body_end)
    try:
        loop = stride_loop(sc, fn, toks, parse_block(toks, 0, len(toks)))
    except Refuse:
        return None
    if loop is None or loop.form == "loop" or loop.var != k.ivar:
        return None
    return k, loop


def _grid_stride(sc: SourceScan, k: ElemKernel, loop: StrideLoop, cap: str) -> list[tuple[int, int, str]]:
    ind = k.indent
    text = (f"// coarsen: a grid-stride loop over a capped grid\n{ind}{loop.header()} {{\n"
            f"{_body(sc.source, k, ind + '    ')}\n{ind}}}\n")
    return [(k.span[0], k.span[1], text)] + [cap_grid_edit(sc, la, cap) for la, _, _ in loop.launches]


def _factor(sc: SourceScan, k: ElemKernel, name: str) -> list[tuple[int, int, str]] | None:
    launch = elementwise_launch_edits(sc, k, name)
    if launch is None:
        return None
    ind, step = k.indent, "    "
    itype = re.sub(r"\bconst\s+", "", k.itype)
    taken: set[str] = set()
    base = fresh_name(sc.text, "cf_base", taken)
    c = fresh_name(sc.text, "cf_c", taken)
    text = "\n".join([
        f"// coarsen: {name} elements per thread, blockDim.x apart (coalesced), each checked against the bound",
        f"{ind}{itype} {base} = ({itype})blockIdx.x * blockDim.x * {name} + threadIdx.x;",
        f"{ind}#pragma unroll",
        f"{ind}for (int {c} = 0; {c} < {name}; ++{c}) {{",
        f"{ind}{step}{itype} {k.ivar} = {base} + ({itype}){c} * blockDim.x;",
        f"{ind}{step}if ({k.ivar} < {paren(k.bound)}) {{",
        _body(sc.source, k, ind + step * 2),
        f"{ind}{step}}}",
        f"{ind}}}",
    ]) + "\n"
    return [(k.span[0], k.span[1], text), *launch]


@operator(OPERATOR, order=55, motives=_MOTIVES, restructuring=True)
def coarsen_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Grid-stride and COARSEN_FACTOR-per-thread versions of every independent 1-D element-wise kernel."""
    sc = scan(source)
    motive = motivating_findings(findings, _MOTIVES)
    prior = 1.0 + sum(float(f["severity"] or 0) for f in motive)
    out = []
    for fn in sc.kernels():
        matched = _match(sc, fn)
        if matched is None:
            continue
        k, loop = matched
        line_start = source.rfind("\n", 0, fn.header_start) + 1
        mine = []
        name = fresh_name(sc.text, "COARSEN_FACTOR")
        for rank, factor in enumerate(FACTORS):
            edits_f = _factor(sc, k, name)
            if edits_f is None:
                break
            edits_f.append((line_start, line_start, f"#define {name} {factor}\n"))
            mine.append(EditProposal(
                OPERATOR, apply_edits(source, edits_f), f"{fn.name}: {factor} elements per thread (coarsened)",
                {"kernel": fn.name, "form": "factor", "factor": factor, "findings": motive},
                round(prior - 0.1 * rank, 3)))
        cap = fresh_name(sc.text, "COARSEN_GRID_BLOCKS")
        edits = [*_grid_stride(sc, k, loop, cap), (line_start, line_start, f"#define {cap} {GRID_BLOCKS}\n")]
        mine.append(EditProposal(OPERATOR, apply_edits(source, edits), f"{fn.name}: grid-stride loop, grid capped",
                                 {"kernel": fn.name, "form": "grid_stride", "findings": motive},
                                 round(prior - 0.05, 3)))
        out.extend(sorted(mine, key=lambda e: -e.prior))
    return out
