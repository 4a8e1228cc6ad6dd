"""The ``swap_axes`` operator (layout; shared parts in :mod:`._layout`).

* **swap_axes** exchanges the x and y components of ``threadIdx``/``blockDim`` (and of ``blockIdx``/
  ``gridDim``) throughout a kernel body, and the x and y components of the block (and grid) at every
  launch site of that kernel: ``dim3 block(A, B)`` → ``dim3 block(B, A)``, ``dim3(...)`` written in the
  launch likewise, and every ``block.x``/``block.y`` member reference in the host function swapped too
  (``dim3 grid((N + block.x - 1) / block.x, ...)`` keeps its meaning).
  *Why it is correct:* the launch makes exactly the same (block, thread) index tuples exist, only with
  x and y exchanged, and the kernel reads the exchanged components, so every logical thread runs exactly
  the code it ran before. The only things that can tell the difference are the hardware's linear thread
  order (which threads form a warp) and the block scheduling order, which CUDA never guarantees. So the
  edit is refused when anything warp-level may depend on the order: warp intrinsics (``__shfl*``,
  ``__ballot*``, ``__any/__all``, ``__activemask``, ``__syncwarp``, ``__match*``, ``__reduce*_sync``),
  cooperative groups, ``warpSize``, identifiers naming lanes/warps, ``volatile`` (warp-synchronous
  shared memory code), inline ``asm``, and lane arithmetic (``% 32``, ``& 31``, ``>> 5``, ``/ 32``) —
  checked in the kernel and in every ``__device__`` function and macro of the file. Block-wide
  cooperation (``__shared__`` + ``__syncthreads``) is fine: it does not depend on thread order.
  Further preconditions: the kernel uses both ``threadIdx.x`` and ``threadIdx.y`` (a 2-D block); the
  builtins appear only as ``builtin.x/y/z`` and only inside ``__global__`` bodies (not in device
  helpers or macros, which would not be rewritten); the kernel's name appears only in its definition
  and its ``<<<>>>`` launches (``cudaFuncSetAttribute``/``cudaFuncGetAttributes`` are allowed); every
  launch's block is a ``dim3`` with an explicit y component, written inline or as a ``dim3`` variable
  declared once in the host function and used there only as this kernel's block (and through member
  reads/writes, which are swapped). The grid axes are swapped with the thread axes when the kernel uses
  ``blockIdx.y``/``gridDim.y`` and every launch's grid is a rewritable 2-D/3-D ``dim3``; otherwise only
  the thread axes are swapped (also correct by the same argument, and it never moves a large 1-D grid
  into ``gridDim.y``). *Hardware limit:* ``gridDim.y``/``gridDim.z`` are limited to 65535 (x: 2^31-1).
  When the new ``gridDim.y`` (the old x component) resolves to a literal value above 65535 the edit is
  refused; when it depends on runtime sizes it cannot be bounded here and the verifier decides (the CPU
  runtime, like a GPU, refuses such a launch with ``cudaErrorInvalidConfiguration``, so the kernel does
  not run and the candidate fails verification instead of passing silently).

Motivated by ``uncoalesced_load``/``uncoalesced_store`` findings (prior 2 + severities when the swap
lowers the number of accesses strided along the warp, 0.5 when it changes nothing, 0.25 when worse).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from veriforge.optiml.operators import _layout as layout
from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import Function, Launch, SourceScan, eval_int, scan

__all__ = ["swap_axes_edits"]

_SAFE_REFS = re.compile(r"cudaFunc(?:SetAttribute|GetAttributes|SetCacheConfig)\s*\(\s*(?:\(\s*void\s*\*\s*\)\s*)?$")


# ---------------------------------------------------------------------------------------------
# swap_axes


@operator("swap_axes", order=60, motives=layout.COALESCE, restructuring=True)
def swap_axes_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Exchange the x and y axes of each eligible 2-D kernel and of its launches (see the module docstring)."""
    sc = scan(source)
    if not layout.builtins_ok(sc):
        return []
    out = []
    for kernel in sc.kernels():
        edit = _swap_kernel(sc, kernel)
        if edit is None:
            continue
        new, swap_grid, sites = edit
        motive = motivating_findings(findings, layout.COALESCE)
        what = "thread and block axes" if swap_grid else "thread axes"
        strides = layout.axis_strides(sc, kernel)
        prior = layout.motivated_prior(motive, 0.8)
        if strides is not None:
            # After the swap, today's y behaviour is the warp's (x) behaviour.
            fixed = strides["x"]["strided"] - strides["y"]["strided"]
            prior = prior if fixed > 0 else 0.5 if fixed == 0 else 0.25
        out.append(EditProposal(
            "swap_axes", new, f"swap the x and y {what} of {kernel.name} and its {sites} launch(es)",
            {"kernel": kernel.name, "swap_grid": swap_grid, "launches": sites, "findings": motive,
             "strides": strides}, prior))
    return out


def _swap_kernel(sc: SourceScan, kernel: Function) -> tuple[str, bool, int] | None:
    text = sc.text
    uses: list[tuple[int, str, str]] = []  # (letter position, builtin, letter)
    for m in layout.BUILTIN.finditer(text, kernel.body_start, kernel.body_end):
        mm = layout.MEMBER.match(text, m.end())
        assert mm is not None  # layout.builtins_ok
        uses.append((mm.start(1), m.group(1), mm.group(1)))
    used = {(b, a) for _, b, a in uses}
    if not {("threadIdx", "x"), ("threadIdx", "y")} <= used:
        return None
    if layout.warp_level(sc, kernel):
        return None
    launches = sc.launches_of(kernel.name)
    if not launches or not _name_refs_ok(sc, kernel, launches):
        return None
    blocks, grids = [], []
    for launch in launches:
        block, grid = layout.resolve(sc, launch, "block"), layout.resolve(sc, launch, "grid")
        if block is None or block.kind == "scalar" or len(block.comps) < 2:
            return None
        blocks.append(block)
        grids.append(grid)
    grid_y = bool({("blockIdx", "y"), ("gridDim", "y")} & used)
    swap_grid = grid_y and all(g is not None and g.kind != "scalar" and len(g.comps) >= 2 for g in grids)

    swapped = {"threadIdx", "blockDim"} | ({"blockIdx", "gridDim"} if swap_grid else set())
    small: dict[int, str] = {}  # position of a component letter -> new letter
    for pos, builtin, axis in uses:
        if builtin in swapped and axis in "xy":
            small[pos] = "y" if axis == "x" else "x"
    comp_edits: dict[tuple[int, int], tuple[int, int]] = {}  # component span -> span whose text goes there
    seen_vars: set[int] = set()
    for launch, block, grid in zip(launches, blocks, grids, strict=True):
        specs = [("block", block)] + ([("grid", grid)] if swap_grid else [])
        host = sc.host_function(launch, containing=True)
        if host is None:
            return None
        for which, spec in specs:
            assert spec is not None
            if which == "grid":
                env = sc.host_env(host.name)
                v = eval_int(text[spec.comps[0][0]:spec.comps[0][1]], env)
                if isinstance(v, int) and v > layout.GRID_LIMITS[1]:
                    return None  # the old gridDim.x would become gridDim.y
            if spec.kind == "var":
                if spec.decl in seen_vars:
                    continue
                seen_vars.add(spec.decl)

                def ok(other: Launch, role: str, which: str = which) -> bool:
                    return other.kernel == kernel.name and role == which

                if not layout.var_uses_ok(sc, host, spec.var, spec.decl, ok):
                    return None
                for pos, axis in _members(sc, host, spec.var):
                    if axis in "xy":
                        small[pos] = "y" if axis == "x" else "x"
            c0, c1 = spec.comps[0], spec.comps[1]
            comp_edits[c0] = c1
            comp_edits[c1] = c0
    edits: dict[tuple[int, int], str] = {}

    def render(span: tuple[int, int]) -> str:
        inner = {(p, p + 1): letter for p, letter in small.items() if span[0] <= p < span[1]}
        return layout.apply(sc.source[span[0]:span[1]], {(s - span[0], e - span[0]): t for (s, e), t in inner.items()})

    for target, src in comp_edits.items():
        edits[target] = render(src)
    for pos, letter in small.items():
        if not any(s <= pos < e for s, e in comp_edits):
            edits[(pos, pos + 1)] = letter
    try:
        new = layout.apply(sc.source, edits)
    except ValueError:
        return None
    if new == sc.source:
        return None
    return new, swap_grid, len(launches)



def _members(sc: SourceScan, host: Function, var: str) -> list[tuple[int, str]]:
    """(position of the component letter, letter) of every ``var.x/y/z`` in ``host``."""
    out = []
    for m in re.finditer(rf"\b{re.escape(var)}\s*\.\s*([xyz])\b", sc.text[host.body_start:host.body_end]):
        out.append((host.body_start + m.start(1), m.group(1)))
    return out



def _name_refs_ok(sc: SourceScan, kernel: Function, launches: list[Launch]) -> bool:
    """The kernel's name appears only in its definition, its launches and harmless attribute calls."""
    allowed = {launch.start for launch in launches}
    for m in re.finditer(rf"\b{re.escape(kernel.name)}\b", sc.text):
        if m.start() in allowed or kernel.header_start <= m.start() < kernel.body_start:
            continue
        if _SAFE_REFS.search(sc.text[max(0, m.start() - 60):m.start()]):
            continue
        return False
    return True
