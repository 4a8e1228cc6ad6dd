"""Helpers of the layout operators (:mod:`.swap_axes`, :mod:`.block_shape`): which hardware axis a
2-D/3-D kernel's work runs along, and how its launches write their grid and block.

Coalescing is decided by what ``threadIdx.x`` indexes: consecutive lanes of a warp differ in x first,
so a kernel whose x index walks rows (``r = blockIdx.x * T + threadIdx.x``) makes every warp access
touch 16-32 different rows. Two restructuring edits fix the common cases without a model. Both
refuse kernels whose code may depend on which threads form a warp (:func:`warp_level`), both need
every launch's grid and block written in a way they can rewrite (:func:`resolve`), and both rank
their edits with :func:`axis_strides`, a static prediction of which accesses are unit-stride along
the warp. Both are motivated by ``uncoalesced_load``/``uncoalesced_store`` findings, which raise their
prior to 2 + severities (big structural edits the search should try early); without them the prior
is low (:func:`motivated_prior`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from veriforge.optiml.source_scan import Function, Launch, SourceScan, split_top
from veriforge.optiml.source_tokens import apply_edits, close_of, trim_span

BUILTIN = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim)\b")
MEMBER = re.compile(r"\s*\.\s*([xyz])\b")
WARP = re.compile(
    r"__shfl|__ballot|__any|__all|__activemask|__syncwarp|__match_|__reduce_\w*_sync|__lane|\bwarpSize\b|"
    r"cooperative_groups|\bcg\s*::|this_thread_block|this_grid|tiled_partition|thread_block_tile|"
    r"coalesced_threads|\bvolatile\b|\basm\b|\w*(?:(?<![A-Za-z])[Ll]ane|(?<=[a-z0-9_])Lane|LANE|[Ww]arp|WARP)\w*|"
    r"%\s*32\b|&\s*31\b|&\s*0x1[fF]\b|>>\s*5\b|/\s*32\b"
)
GRID_LIMITS = (2**31 - 1, 65535, 65535)
COALESCE = {"uncoalesced_load", "uncoalesced_store"}


@dataclass(frozen=True)
class Dim3:
    """How one launch's grid or block is written: its component spans (into the source)."""

    kind: str  # "var" (a dim3 variable of the host function), "inline" (dim3(...) in the launch), "scalar"
    comps: tuple[tuple[int, int], ...]
    var: str = ""
    decl: int = -1  # position of the variable's declaration (identifies it across launches)


# ---------------------------------------------------------------------------------------------
# Shared reading helpers


def dim3_decl(sc: SourceScan, host: Function, name: str) -> tuple[int, tuple[int, int]] | None:
    """(declaration position, span inside the brackets) of the single ``dim3 name(...)`` in ``host``."""
    text = sc.text
    decls = list(re.finditer(rf"\bdim3\s+{re.escape(name)}\b", text[host.body_start:host.body_end]))
    if len(decls) != 1:
        return None
    k = host.body_start + decls[0].end()
    m = re.compile(r"\s*(?:=\s*dim3\s*)?([({])").match(text, k)
    if not m:
        return None
    close = close_of(text, m.start(1), "([{", typed=True)
    if close is None or not re.match(r"\s*;", text[close + 1:]):
        return None
    return host.body_start + decls[0].start(), (m.start(1) + 1, close)


def resolve(sc: SourceScan, launch: Launch, which: str) -> Dim3 | None:
    span = trim_span(sc.text, launch.grid if which == "grid" else launch.block)
    expr = sc.text[span[0]:span[1]]
    host = sc.host_function(launch, containing=True)
    if re.fullmatch(r"[A-Za-z_]\w*", expr) and host is not None and re.search(
            rf"\bdim3\s+{expr}\b", sc.text[host.header_start:host.body_end]):
        found = dim3_decl(sc, host, expr)
        if found is None or found[0] > launch.start:
            return None
        comps = tuple(trim_span(sc.text, c) for c in split_top(sc.text, *found[1]))
        return Dim3("var", comps, expr, found[0]) if 1 <= len(comps) <= 3 else None
    m = re.match(r"dim3\s*([({])", expr)
    if m:
        open_pos = span[0] + m.start(1)
        if close_of(sc.text, open_pos, "([{", typed=True) != span[1] - 1:
            return None
        comps = tuple(trim_span(sc.text, c) for c in split_top(sc.text, open_pos + 1, span[1] - 1))
        return Dim3("inline", comps) if 1 <= len(comps) <= 3 else None
    return Dim3("scalar", (span,))


def in_kernels(sc: SourceScan, pos: int) -> Function | None:
    fn = sc.function_at(pos)
    return fn if fn is not None and fn.kernel and fn.body_start <= pos < fn.body_end else None


def builtins_ok(sc: SourceScan) -> bool:
    """Builtins only as ``builtin.x/y/z`` and only inside ``__global__`` bodies."""
    for m in BUILTIN.finditer(sc.text):
        if not MEMBER.match(sc.text, m.end()) or in_kernels(sc, m.start()) is None:
            return False
    return True


def device_text(sc: SourceScan, kernel: Function) -> str:
    """The kernel's header and body, every ``__device__`` function and every macro (what runs on the GPU)."""
    parts = [sc.text[kernel.header_start:kernel.body_end]]
    parts += [sc.text[f.header_start:f.body_end] for f in sc.functions if f.device]
    parts += re.findall(r"^[ \t]*#[ \t]*define[^\n]*", sc.text, re.M)
    return "\n".join(parts)


def warp_level(sc: SourceScan, kernel: Function) -> str | None:
    m = WARP.search(device_text(sc, kernel))
    return m.group(0) if m else None


def var_uses_ok(sc: SourceScan, host: Function, var: str, decl: int, launch_ok: Any) -> bool:
    """Every use of dim3 ``var`` in ``host``: its declaration, member accesses, or launches ``launch_ok`` accepts."""
    body = sc.text[host.body_start:host.body_end]
    config = {}
    for launch in sc.launches:
        if launch.host != host.name:
            continue
        for which, span in (("grid", launch.grid), ("block", launch.block)):
            s, e = trim_span(sc.text, span)
            if sc.text[s:e] == var:
                config[s] = (launch, which)
    for m in re.finditer(rf"\b{re.escape(var)}\b", body):
        pos = host.body_start + m.start()
        if MEMBER.match(sc.text, pos + len(var)):
            continue
        if re.fullmatch(r"dim3\s+", sc.text[decl:pos]):
            continue
        if pos in config and launch_ok(*config[pos]):
            continue
        return False
    return True


def apply(source: str, edits: dict[tuple[int, int], str]) -> str:
    return apply_edits(source, [(s, e, text) for (s, e), text in edits.items()], disjoint=True)


def motivated_prior(motive: list[dict[str, Any]], base: float) -> float:
    return (2.0 + sum(float(f["severity"] or 0) for f in motive)) if motive else base


def axis_strides(sc: SourceScan, kernel: Function) -> dict[str, dict[str, int]] | None:
    """How each global access of ``kernel`` moves along ``threadIdx.x`` and ``threadIdx.y``.

    Per axis, the number of accesses whose index has coefficient 1 in that thread index (``unit``:
    neighbouring threads touch neighbouring elements, coalesced when the axis is x), 0
    (``broadcast``) or anything else (``strided``: a row stride, a symbolic factor). Indices are
    resolved through immutable locals by the affine reader of :mod:`~veriforge.optiml.kernel_reader`.
    None when the kernel cannot be read. This is what lets the layout operators *predict* whether an
    edit fixes an uncoalesced access or moves it elsewhere (the naive ``A·Bᵀ`` kernel is strided in
    x through B; swapping the axes would make A and C strided instead), so the prior follows the
    prediction and the search does not spend its first evaluations on a likely regression.
    """
    from veriforge.optiml.kernel_reader import Analyzer, Poly
    from veriforge.optiml.source_tokens import Refuse

    class StrideReader(Analyzer):
        """Loops with a run-time trip count keep their variable as ``start + an opaque iteration term``
        (the stage analysis drops such variables: it needs bounds, this only needs thread dependence)."""

        def for_loop(self, s: Any, ctx: Any) -> None:
            init = s.kids[1] if len(s.kids) > 1 else None
            if init is None or init.kind != "decl" or len(init.names) != 1 or \
                    self._loop_range(init, *s.exprs) is not None:
                super().for_loop(s, ctx)
                return
            name, start = init.names[0]
            inner = ctx.copy()
            base = self.poly(start, ctx.env) if start is not None else None
            if base is not None:
                inner.env[name] = base + Poly.sym(f"{name}#iteration")
            for e in s.exprs:
                if e is not None:
                    self.expr(e, inner)
            self.stmt_scoped(s.kids[0], inner)

    try:
        an = StrideReader(sc, kernel)
        an.run()
    except (Refuse, ValueError, KeyError, IndexError):
        return None
    out = {a: {"unit": 0, "broadcast": 0, "strided": 0} for a in "xy"}
    for accesses in an.accesses.values():
        for acc in accesses:
            for a in "xy":
                split = acc.poly.split_by(f"threadIdx.{a}")
                coeff = None if split is None else split[0]
                kind = ("broadcast" if coeff == Poly() else "unit" if coeff == Poly.const(1) else "strided")
                out[a][kind] += 1
    return out
