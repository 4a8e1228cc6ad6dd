"""The ``tile_shared`` operator: shared-memory tiling of a 2-D inner-product loop (naive matmul).

Why: in a naive matmul every thread walks one row of ``A`` and one column of ``B`` in global memory, so
each element is fetched once per thread that uses it (N resp. M times), and one operand is often read
with a stride across the warp (uncoalesced). Classic TILE x TILE tiling makes the block load one tile of
each operand per K step cooperatively (one element per thread, coalesced), and the inner product runs
from shared memory: every global element is read once per block instead of once per thread.

Recognised shape (anything else yields no edit): one ``__global__`` kernel with exactly one launch
site, read by :func:`~veriforge.optiml.operators._matmul.read_matmul` (shared with
:mod:`.register_block`; its docstring has the details):

* ``int`` locals, immutable and affine, among them the two thread coordinates ``row = blockIdx.y *
  blockDim.y + threadIdx.y`` and ``col = blockIdx.x * blockDim.x + threadIdx.x`` (any names, any
  order), with early returns in between (``if (row >= M || col >= N) return;``, or one per coordinate);
* a guard bounding both coordinates from above by affine expressions of int parameters: the early
  returns and/or a last ``if (row < M && col < N) { ... }`` (extent on either side, ``<= M - 1``,
  ``!(row >= M)``, an extent through an immutable local);
* ``T acc = <literal or a side-effect-free expression, e.g. b[o]>`` (``float``/``double``), the only
  loop ``for (int k = 0; k < K; ++k) <update>`` with the update ``acc += X[i] * Y[j]``, ``acc = acc +
  X*Y``, ``acc = X*Y + acc`` or ``acc = fmaf(X, Y, acc)`` (``__fmaf_rn``, ``fma``), operands in either
  order, then any statements without a loop (the epilogue: store, bias, activation, ``alpha * acc +
  beta * C[..]``), with no thread builtin in the guard, the initial value or the epilogue;
* ``X``/``Y`` pointer parameters of one type that are only ever read (``P[...]``), each index affine
  ``a * s + b * k + c`` with ``s`` exactly one coordinate, ``a``, ``b``, ``c`` over int
  parameters/constants, and ``b == 1`` ("sk": ``A[row * K + k]``) or ``a == 1`` ("ks": ``B[k * N + col]``).

The edit: ``#define TILE 16`` (tunable: correct for any TILE with TILE * TILE <= 1024), the launch becomes
``<<<dim3((N + TILE - 1) / TILE, (M + TILE - 1) / TILE), dim3(TILE, TILE)>>>`` with the launch's own
argument expressions for the guard's extents, and the kernel becomes: the int locals (their
declarations unchanged, the early returns dropped), the shared tiles, ``acc`` (a non-literal initial
value is read only under the guard: ``(guard) ? (init) : 0``), a loop over K in steps of TILE in which
each thread loads one element of each tile (0 outside ``[0, extent) x [0, K)``), ``__syncthreads()``,
``for kk < TILE`` applies the original update *as written* to the shared-memory values,
``__syncthreads()``; then the original post-loop statements under the original guard.
"sk" operands load ``tile[ty][tx] = X[a * (base + ty) + b * (t + tx) + c]`` (k along the warp:
coalesced) and are read ``tile[s_local][kk]``; "ks" operands load ``tile[ty][tx] = X[a * (base + tx) +
b * (t + ty) + c]`` and are read ``tile[kk][s_local]``. A tile read ``tile[threadIdx.x][kk]`` is padded
to ``[TILE][TILE + 1]`` so the warp's reads hit distinct banks.

Why it is correct: with ``blockDim == (TILE, TILE)`` the coordinates are ``blockIdx * TILE + threadIdx``,
so the tile entry a thread reads at ``(t, kk)`` is exactly ``X[i]`` with ``k = t + kk`` whenever the
thread is in range and ``k < K``; out-of-range entries are 0 on *both* operands' ``k`` side, so each
extra term adds ``0 * 0`` (``fmaf(0, 0, acc) == acc``); the update runs over the same ``k`` in the same
order and is the same expression (fused or not as written), so results are bit-identical (up to the
sign of a zero sum). Loads happen only at indices the original reads (coordinate below its extent,
``0 <= k < K``). The guard is only moved below the loop (no return before the barriers), and the
locals it and the epilogue use are immutable and still declared; the operands are never written, so
loading them in other threads changes nothing, and the epilogue's own reads and writes keep their order
in the thread (the original threads never synchronised, so any interleaving with other threads was
already possible).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from veriforge.optiml.operators._matmul import (
    MatmulPlan,
    affine_text,
    launch_args,
    poly_text,
    proposal,
    read_matmul,
    zero,
)
from veriforge.optiml.operators.registry import EditProposal, operator
from veriforge.optiml.source_scan import Function, SourceScan, scan
from veriforge.optiml.source_tokens import Refuse, fresh_name

__all__ = ["tile_shared_edits"]

OPERATOR = "tile_shared"
DEFAULT_TILE = 16
_MOTIVES = {"memory_bound", "uncoalesced_load", "low_dram_throughput", "compute_bound"}
_INDENT = "    "


def _kernel_edit(sc: SourceScan, fn: Function, findings: Sequence[Any]) -> EditProposal | None:
    try:
        plan = read_matmul(sc, fn)
    except Refuse:
        return None
    found = launch_args(sc, fn, plan)
    if found is None:
        return None
    return _render(sc, fn, found[0], found[1], plan, findings)


def _render(sc: SourceScan, fn: Function, launch: Any, arg_text: dict[str, str], plan: MatmulPlan,
            findings: Sequence[Any]) -> EditProposal | None:
    source = sc.source
    taken: set[str] = set()
    tile = fresh_name(source, "TILE", taken)
    kt = fresh_name(source, "kt", taken)
    kk = fresh_name(source, "kk", taken)
    tx = fresh_name(source, "tx", taken)
    ty = fresh_name(source, "ty", taken)
    ind, ind2 = _INDENT, _INDENT * 2
    k_bound = poly_text(plan.k_bound)
    lines = [f"{ind}{d}" for d in plan.decl_texts]
    lines += [f"{ind}const int {tx} = threadIdx.x;", f"{ind}const int {ty} = threadIdx.y;"]
    loads: list[str] = []
    reads: list[str] = []
    for op in (plan.first, plan.second):
        tname = fresh_name(source, f"{op.name}_tile", taken)
        pad = op.layout == "sk" and op.axis == "x"
        lines.append(f"{ind}__shared__ {op.elem} {tname}[{tile}][{tile}{' + 1' if pad else ''}];")
        mine = tx if op.axis == "x" else ty
        if op.layout == "sk":
            coord, kexpr, read = ty, tx, f"{tname}[{mine}][{kk}]"
        else:
            coord, kexpr, read = tx, ty, f"{tname}[{kk}][{mine}]"
        s_at = f"(int)blockIdx.{op.axis} * {tile} + {coord}"
        k_at = f"{kt} + {kexpr}"
        valid = f"{s_at} < {poly_text(plan.ext[op.axis])} && {k_at} < {k_bound}"
        loads.append(f"{ind2}{tname}[{ty}][{tx}] = ({valid}) ? "
                     f"{op.name}[{affine_text(op, s_at, k_at)}] : {zero(op.elem)};")
        reads.append(read)
    init = plan.init if plan.init_literal else f"({plan.guard}) ? ({plan.init}) : {zero(plan.acc_type)}"
    post_text = "".join(f"{ind2}{text}\n" for text in plan.post_text())
    new_body = (
        "\n" + "\n".join(lines) + "\n"
        f"{ind}{plan.acc_type} {plan.acc} = {init};\n"
        f"{ind}for (int {kt} = 0; {kt} < {k_bound}; {kt} += {tile}) {{\n"
        + "".join(load + "\n" for load in loads)
        + f"{ind2}__syncthreads();\n"
        "#pragma unroll\n"
        f"{ind2}for (int {kk} = 0; {kk} < {tile}; ++{kk}) {plan.update_text(reads[0], reads[1], plan.acc)};\n"
        f"{ind2}__syncthreads();\n"
        f"{ind}}}\n"
        f"{ind}if ({plan.guard}) {{\n{post_text}{ind}}}\n"
    )
    gx = f"({poly_text(plan.ext['x'], arg_text)} + {tile} - 1) / {tile}"
    gy = f"({poly_text(plan.ext['y'], arg_text)} + {tile} - 1) / {tile}"
    desc = (f"tile {fn.name}'s inner product over {k_bound} in shared memory "
            f"({plan.first.name}: {plan.first.layout}, {plan.second.name}: {plan.second.layout}), "
            f"{tile}x{tile} blocks")
    return proposal(sc, plan, launch, operator=OPERATOR, body=new_body, grid=f"dim3({gx}, {gy})",
                    block=f"dim3({tile}, {tile})", defines={tile: DEFAULT_TILE}, findings=findings,
                    motives=_MOTIVES, description=desc, evidence={"tile": tile})


@operator("tile_shared", order=120, motives=_MOTIVES, restructuring=True)
def tile_shared_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Tile each recognised naive inner-product kernel in shared memory (see the module docstring)."""
    sc = scan(source)
    return [edit for fn in sc.kernels() if (edit := _kernel_edit(sc, fn, findings)) is not None]
