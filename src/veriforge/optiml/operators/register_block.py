"""The ``register_block`` operator: register blocking of a naive inner-product kernel (matmul).

Why: shared-memory tiling (:mod:`.tile_shared`) still makes every thread load two shared values per
multiply-add, so a tiled matmul is bound by shared-memory bandwidth. When each thread instead computes
a ``TM x TN`` micro-tile of outputs, every ``k`` step loads ``TM + TN`` shared values into registers and
does ``TM * TN`` multiply-adds on them (4x the arithmetic intensity at 4 x 4), and a block of
``THREADS_X x THREADS_Y`` threads covers ``(TM * THREADS_Y) x (TN * THREADS_X)`` outputs, so every
global element is loaded once per block of that size (16x fewer global loads than one output per
thread with 16 x 16 blocks).

Recognised shape: exactly what :mod:`._matmul` reads (:func:`~._matmul.read_matmul`: int prologue
with the two coordinates, early-return and/or if-block guard bounding both, ``acc`` with a literal or
read-only initial value, one loop ``acc += X[i] * Y[j]`` / ``acc = acc + ...`` / ``fmaf(X, Y, acc)``
over ``k < K``, an epilogue without loops), one launch site, and in addition: the two operands depend
on different coordinates, and the epilogue has no ``return``/``break``/``continue`` (it now runs inside
a loop over the micro-tile).

The edit: five ``#define``s, ``TM``/``TN`` (outputs per thread along y/x, default 2), ``BK`` (the K
slice staged per step, default 16) and ``THREADS_X``/``THREADS_Y`` (the block, default 16 x 16). The
block tile is ``(TM * THREADS_Y) x (TN * THREADS_X)``, written as those products wherever it is used,
so **each of the five is correct alone for any positive value**: ``tune`` can move any of them
independently (within its thread and shared-memory limits) and no move breaks the kernel; there are
no derived constants that would have to move with them. The launch becomes ``<<<dim3(ceil(Nx / (TN *
THREADS_X)), ceil(Ny / (TM * THREADS_Y))), dim3(THREADS_X, THREADS_Y)>>>`` with the launch's own
argument expressions for the guard's extents. The kernel:

1. ``acc_r[i][j]`` for every micro-tile element starts at the literal, or at the original initial
   value when the element's guard holds (0 otherwise; an out-of-range element is never stored);
2. for ``kt = 0, BK, 2 BK, ...``: the block loads each operand's ``BK x (block extent)`` slice into
   shared memory, ``tile[q][s] = X[index at coordinate base + s, k = kt + q]`` when that coordinate is
   below its extent and ``kt + q < K``, else 0 (a block-stride loop over the slice, so any block size
   covers any tile size; ``k`` fastest along the warp for "sk" operands, the coordinate fastest for
   "ks"; "sk" tiles padded by one column against bank conflicts on the store); barrier; for ``kk <
   BK`` each thread reads its ``TM`` (``TN``) values of each operand into registers and applies the
   original update, as written, to each ``acc_r[i][j]``; barrier;
3. for each micro-tile element ``(i, j)``: the prologue locals are declared again with the
   coordinates ``row = blockIdx.y * (TM * THREADS_Y) + threadIdx.y + i * THREADS_Y`` and ``col =
   blockIdx.x * (TN * THREADS_X) + threadIdx.x + j * THREADS_X`` (micro-tiles strided by the block's
   thread count: neighbouring lanes own neighbouring columns, so the epilogue's stores stay coalesced
   and the register loads hit distinct banks), and under the original guard ``acc`` is declared as
   ``acc_r[i][j]`` and the epilogue runs verbatim.

Why it is correct: the coordinates of element ``(i, j)`` enumerate each output exactly once over the
grid (``ty + i * THREADS_Y`` covers ``0 .. TM * THREADS_Y - 1`` once), so each output of the
original's guarded threads is produced by exactly one ``(thread, i, j)``, with the same prologue
values, the same guard and the same epilogue text. Its accumulator gets the same terms in the same
order: at step ``(kt, kk)`` the registers hold ``X``/``Y`` at ``k = kt + kk`` exactly (the tile entry
at ``(kk, s)`` is the original's read at that coordinate and ``k`` whenever both are in range), and
for ``k >= K`` both factors are 0, so the extra terms add ``0 * 0`` (``fmaf(0, 0, acc)``); coordinates
out of range only feed elements that are never stored. Loads happen only at indices the original
reads. The operands are never written, so loading them in other threads changes nothing; every
element's initial read and epilogue happen in the same order relative to each other as in the
original thread, which had no synchronisation with other threads (any interleaving of them was
already possible). No thread returns before a barrier.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from veriforge.optiml.kernel_reader import walk_stmts
from veriforge.optiml.operators import _matmul
from veriforge.optiml.operators._matmul import MatmulPlan, affine_text, poly_text, zero
from veriforge.optiml.operators.registry import EditProposal, operator
from veriforge.optiml.source_scan import Function, SourceScan, scan
from veriforge.optiml.source_tokens import Refuse, fresh_name

__all__ = ["DEFAULTS", "register_block_edits"]

OPERATOR = "register_block"
DEFAULTS = {"TM": 2, "TN": 2, "BK": 16, "THREADS_X": 16, "THREADS_Y": 16}
_MOTIVES = {"memory_bound", "uncoalesced_load", "low_dram_throughput", "compute_bound", "barrier_stall"}


def _kernel_edit(sc: SourceScan, fn: Function, findings: Sequence[Any]) -> EditProposal | None:
    try:
        plan = _matmul.read_matmul(sc, fn)
    except Refuse:
        return None
    if plan.first.axis == plan.second.axis:
        return None
    if any(x.kind in ("return", "jump") for s in plan.post for x in walk_stmts(s)):
        return None  # the epilogue runs inside the micro-tile loop: an exit would skip the other elements
    found = _matmul.launch_args(sc, fn, plan)
    if found is None:
        return None
    return _render(sc, fn, found[0], found[1], plan, findings)


class _Names:
    """Fresh names for everything the edit declares."""

    def __init__(self, source: str) -> None:
        taken: set[str] = set()
        self.d = {k: fresh_name(source, k, taken) for k in DEFAULTS}
        for k in ("tx", "ty", "tid", "kt", "kk", "e", "s", "q", "i", "j", "acc_r"):
            self.d[k] = fresh_name(source, k, taken)
        self.taken = taken
        self.source = source

    def __getattr__(self, key: str) -> str:
        return self.d[key]

    def fresh(self, want: str) -> str:
        return fresh_name(self.source, want, self.taken)


def _render(sc: SourceScan, fn: Function, launch: Any, arg_text: dict[str, str], plan: MatmulPlan,
            findings: Sequence[Any]) -> EditProposal | None:
    source = sc.source
    n = _Names(source)
    i1, i2, i3, i4 = ("    " * d for d in range(1, 5))
    threads = {"x": n.THREADS_X, "y": n.THREADS_Y}
    micro = {"x": n.TN, "y": n.TM}
    tid_of = {"x": n.tx, "y": n.ty}
    idx_of = {"x": n.j, "y": n.i}
    extent = {a: f"({micro[a]} * {threads[a]})" for a in "xy"}  # the block tile along each axis
    k_bound = poly_text(plan.k_bound)
    all_threads = f"{n.THREADS_X} * {n.THREADS_Y}"

    def each_element(body: list[str], depth: str, scoped: bool = True) -> list[str]:
        """``body`` for every micro-tile element, inside a scope where the prologue's locals (the
        coordinates of that element) are declared again when ``scoped``."""
        scope = []
        for loc in plan.locals if scoped else ():
            if loc.axis is not None:
                a = loc.axis
                value = f"(int)blockIdx.{a} * {extent[a]} + {tid_of[a]} + {idx_of[a]} * {threads[a]}"
            else:
                value = loc.init
            scope.append(f"{depth}{i2}const {loc.type} {loc.name} = {value};")
        return ["#pragma unroll", f"{depth}for (int {n.i} = 0; {n.i} < {n.TM}; ++{n.i}) {{",
                "#pragma unroll", f"{depth}{i1}for (int {n.j} = 0; {n.j} < {n.TN}; ++{n.j}) {{",
                *scope, *(f"{depth}{i2}{line}" for line in body), f"{depth}{i1}}}", f"{depth}}}"]

    acc_at = f"{n.acc_r}[{n.i}][{n.j}]"
    lines = [f"{i1}const int {n.tx} = threadIdx.x;", f"{i1}const int {n.ty} = threadIdx.y;",
             f"{i1}const int {n.tid} = {n.ty} * {n.THREADS_X} + {n.tx};"]
    loads: list[str] = []
    frags: list[tuple[str, str]] = []
    for op in (plan.first, plan.second):
        tile = n.fresh(f"{op.name}_tile")
        frag = n.fresh(f"{op.name}_reg")
        a = op.axis
        pad = " + 1" if op.layout == "sk" else ""
        lines.append(f"{i1}__shared__ {op.elem} {tile}[{n.BK}][{extent[a]}{pad}];")
        if op.layout == "sk":  # k has unit stride: k fastest along the warp
            split = f"const int {n.s} = {n.e} / {n.BK}, {n.q} = {n.e} % {n.BK};"
        else:
            split = f"const int {n.s} = {n.e} % {extent[a]}, {n.q} = {n.e} / {extent[a]};"
        s_at = f"(int)blockIdx.{a} * {extent[a]} + {n.s}"
        k_at = f"{n.kt} + {n.q}"
        valid = f"{s_at} < {poly_text(plan.ext[a])} && {k_at} < {k_bound}"
        loads += [f"{i2}for (int {n.e} = {n.tid}; {n.e} < {n.BK} * {extent[a]}; {n.e} += {all_threads}) {{",
                  f"{i3}{split}",
                  f"{i3}{tile}[{n.q}][{n.s}] = ({valid}) ? {op.name}[{affine_text(op, s_at, k_at)}] : {zero(op.elem)};",
                  f"{i2}}}"]
        frags.append((f"{frag}[{idx_of[a]}]",
                      f"{i3}{op.elem} {frag}[{micro[a]}];\n#pragma unroll\n"
                      f"{i3}for (int {idx_of[a]} = 0; {idx_of[a]} < {micro[a]}; ++{idx_of[a]}) "
                      f"{frag}[{idx_of[a]}] = {tile}[{n.kk}][{tid_of[a]} + {idx_of[a]} * {threads[a]}];"))
    init = plan.init if plan.init_literal else f"({plan.guard}) ? ({plan.init}) : {zero(plan.acc_type)}"
    update = plan.update_text(frags[0][0], frags[1][0], acc_at)
    lines.append(f"{i1}{plan.acc_type} {n.acc_r}[{n.TM}][{n.TN}];")
    lines += each_element([f"{acc_at} = {init};"], i1, scoped=not plan.init_literal)
    lines.append(f"{i1}for (int {n.kt} = 0; {n.kt} < {k_bound}; {n.kt} += {n.BK}) {{")
    lines += loads
    lines += [f"{i2}__syncthreads();", "#pragma unroll",
              f"{i2}for (int {n.kk} = 0; {n.kk} < {n.BK}; ++{n.kk}) {{", frags[0][1], frags[1][1],
              "#pragma unroll", f"{i3}for (int {n.i} = 0; {n.i} < {n.TM}; ++{n.i}) {{", "#pragma unroll",
              f"{i4}for (int {n.j} = 0; {n.j} < {n.TN}; ++{n.j}) {update};", f"{i3}}}", f"{i2}}}",
              f"{i2}__syncthreads();", f"{i1}}}"]
    epilogue = [f"if ({plan.guard}) {{", f"{i1}{plan.acc_type} {plan.acc} = {acc_at};",
                *(f"{i1}{text}" for text in plan.post_text()), "}"]
    lines += each_element(epilogue, i1)
    grid = ", ".join(f"({poly_text(plan.ext[a], arg_text)} + {extent[a]} - 1) / {extent[a]}" for a in "xy")
    defines = {n.d[k]: v for k, v in DEFAULTS.items()}
    desc = (f"register-block {fn.name}'s inner product over {k_bound}: {DEFAULTS['TM']}x{DEFAULTS['TN']} outputs "
            f"per thread, {DEFAULTS['THREADS_X']}x{DEFAULTS['THREADS_Y']} threads, K slices of {DEFAULTS['BK']} "
            f"in shared memory ({plan.first.name}: {plan.first.layout}, {plan.second.name}: {plan.second.layout})")
    return _matmul.proposal(sc, plan, launch, operator=OPERATOR, body="\n" + "\n".join(lines) + "\n",
                    grid=f"dim3({grid})", block=f"dim3({n.THREADS_X}, {n.THREADS_Y})", defines=defines,
                    findings=findings, motives=_MOTIVES, description=desc,
                    evidence={"defines": {n.d[k]: v for k, v in DEFAULTS.items()}})


@operator("register_block", order=125, motives=_MOTIVES, restructuring=True)
def register_block_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Register-block each recognised naive inner-product kernel (see the module docstring)."""
    sc = scan(source)
    return [edit for fn in sc.kernels() if (edit := _kernel_edit(sc, fn, findings)) is not None]
