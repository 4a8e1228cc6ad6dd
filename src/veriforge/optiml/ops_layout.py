"""Layout operators: which hardware axis a 2-D/3-D kernel's work runs along, and the block's shape.

Coalescing is decided by what ``threadIdx.x`` indexes: consecutive lanes of a warp differ in x first,
so a kernel whose x index walks rows (``r = blockIdx.x * T + threadIdx.x``) makes every warp access
touch 16-32 different rows. Two restructuring edits fix the common cases without a model:

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
* **block_shape** reshapes a multi-dimensional block to put a full warp (32, or 64) along x while
  keeping the thread count: (8, 8, 8) → (32, 4, 4), (32, 8, 2), (64, 4, 2); (16, 16) → (32, 8), (64, 4).
  When one constant sizes several axes (``#define B 8``, ``dim3 block(B, B, B)``,
  ``blockIdx.y * B + threadIdx.y`` in the kernel, ``(ny + B - 1) / B`` in the grid) it is replaced by
  per-axis constants ``B_X``, ``B_Y``, ``B_Z`` (``#define``/``const`` like the original; they set the
  block size, so :func:`veriforge.optiml.operators.find_tunables` keeps each one and ``tune`` can later
  move them independently). Every use of the constant is attributed to one axis: block component k and
  grid component k → axis k; in a kernel only the canonical global index ``blockIdx.a * B + threadIdx.a``
  (either operand order) → axis a, where the constant equals ``blockDim.a``. Any other use (a shared array
  size, ``__launch_bounds__``, other arithmetic, a host local) makes the edit refused. With literal blocks
  (``dim3 block(16, 16)``) the literals change and the grid follows where it is written as
  ``(n + 15) / 16`` or through ``block.x``.
  *Why it is correct:* after the rewrite each kernel reads the block size only as ``blockDim.a`` (or
  its constant, equal to it by construction) and each grid component is still the ceil-division of its
  extent by that axis's block size, so every index is still covered exactly once for any block shape —
  provided the kernel is generic in the block shape. That is checked conservatively: no ``__shared__``
  memory (tiles are sized for the old shape), none of the warp-level constructs above (warps regroup),
  no literal equal to an old block extent in the kernel body (``threadIdx.x < 8``), builtins only in
  ``__global__`` bodies, and every launch of a kernel that uses the constant has that constant as the
  block component of each axis it is used for. New shapes stay within 1024 threads, z ≤ 64, and (when it
  resolves) a grid y/z ≤ 65535.

Both are motivated by ``uncoalesced_load``/``uncoalesced_store`` findings, which raise their prior to
2 + severities (big structural edits the search should try early); without them the prior is low.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from veriforge.optiml.operators import EditProposal, motivating_findings
from veriforge.optiml.source_scan import Function, Launch, SourceScan, eval_int, grid_follow_spans, scan, split_top
from veriforge.optiml.source_tokens import apply_edits, close_of, trim_span

__all__ = ["block_shape_edits", "swap_axes_edits"]

_BUILTIN = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim)\b")
_MEMBER = re.compile(r"\s*\.\s*([xyz])\b")
_WARP = re.compile(
    r"__shfl|__ballot|__any|__all|__activemask|__syncwarp|__match_|__reduce_\w*_sync|__lane|\bwarpSize\b|"
    r"cooperative_groups|\bcg\s*::|this_thread_block|this_grid|tiled_partition|thread_block_tile|"
    r"coalesced_threads|\bvolatile\b|\basm\b|\w*(?:(?<![A-Za-z])[Ll]ane|(?<=[a-z0-9_])Lane|LANE|[Ww]arp|WARP)\w*|"
    r"%\s*32\b|&\s*31\b|&\s*0x1[fF]\b|>>\s*5\b|/\s*32\b"
)
_SIZE_LIMITS = (1024, 1024, 64)
_GRID_LIMITS = (2**31 - 1, 65535, 65535)
_COALESCE = {"uncoalesced_load", "uncoalesced_store"}
_SAFE_REFS = re.compile(r"cudaFunc(?:SetAttribute|GetAttributes|SetCacheConfig)\s*\(\s*(?:\(\s*void\s*\*\s*\)\s*)?$")


@dataclass(frozen=True)
class _Dim3:
    """How one launch's grid or block is written: its component spans (into the source)."""

    kind: str  # "var" (a dim3 variable of the host function), "inline" (dim3(...) in the launch), "scalar"
    comps: tuple[tuple[int, int], ...]
    var: str = ""
    decl: int = -1  # position of the variable's declaration (identifies it across launches)


# ---------------------------------------------------------------------------------------------
# Shared reading helpers


def _dim3_decl(sc: SourceScan, host: Function, name: str) -> tuple[int, tuple[int, int]] | None:
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


def _resolve(sc: SourceScan, launch: Launch, which: str) -> _Dim3 | None:
    span = trim_span(sc.text, launch.grid if which == "grid" else launch.block)
    expr = sc.text[span[0]:span[1]]
    host = sc.host_function(launch, containing=True)
    if re.fullmatch(r"[A-Za-z_]\w*", expr) and host is not None and re.search(
            rf"\bdim3\s+{expr}\b", sc.text[host.header_start:host.body_end]):
        found = _dim3_decl(sc, host, expr)
        if found is None or found[0] > launch.start:
            return None
        comps = tuple(trim_span(sc.text, c) for c in split_top(sc.text, *found[1]))
        return _Dim3("var", comps, expr, found[0]) if 1 <= len(comps) <= 3 else None
    m = re.match(r"dim3\s*([({])", expr)
    if m:
        open_pos = span[0] + m.start(1)
        if close_of(sc.text, open_pos, "([{", typed=True) != span[1] - 1:
            return None
        comps = tuple(trim_span(sc.text, c) for c in split_top(sc.text, open_pos + 1, span[1] - 1))
        return _Dim3("inline", comps) if 1 <= len(comps) <= 3 else None
    return _Dim3("scalar", (span,))


def _in_kernels(sc: SourceScan, pos: int) -> Function | None:
    fn = sc.function_at(pos)
    return fn if fn is not None and fn.kernel and fn.body_start <= pos < fn.body_end else None


def _builtins_ok(sc: SourceScan) -> bool:
    """Builtins only as ``builtin.x/y/z`` and only inside ``__global__`` bodies."""
    for m in _BUILTIN.finditer(sc.text):
        if not _MEMBER.match(sc.text, m.end()) or _in_kernels(sc, m.start()) is None:
            return False
    return True


def _device_text(sc: SourceScan, kernel: Function) -> str:
    """The kernel's header and body, every ``__device__`` function and every macro (what runs on the GPU)."""
    parts = [sc.text[kernel.header_start:kernel.body_end]]
    parts += [sc.text[f.header_start:f.body_end] for f in sc.functions if f.device]
    parts += re.findall(r"^[ \t]*#[ \t]*define[^\n]*", sc.text, re.M)
    return "\n".join(parts)


def _warp_level(sc: SourceScan, kernel: Function) -> str | None:
    m = _WARP.search(_device_text(sc, kernel))
    return m.group(0) if m else None


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


def _var_uses_ok(sc: SourceScan, host: Function, var: str, decl: int, launch_ok: Any) -> bool:
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
        if _MEMBER.match(sc.text, pos + len(var)):
            continue
        if re.fullmatch(r"dim3\s+", sc.text[decl:pos]):
            continue
        if pos in config and launch_ok(*config[pos]):
            continue
        return False
    return True


def _members(sc: SourceScan, host: Function, var: str) -> list[tuple[int, str]]:
    """(position of the component letter, letter) of every ``var.x/y/z`` in ``host``."""
    out = []
    for m in re.finditer(rf"\b{re.escape(var)}\s*\.\s*([xyz])\b", sc.text[host.body_start:host.body_end]):
        out.append((host.body_start + m.start(1), m.group(1)))
    return out


def _apply(source: str, edits: dict[tuple[int, int], str]) -> str:
    return apply_edits(source, [(s, e, text) for (s, e), text in edits.items()], disjoint=True)


def _prior(motive: list[dict[str, Any]], base: float) -> float:
    return (2.0 + sum(float(f["severity"] or 0) for f in motive)) if motive else base


def axis_strides(sc: SourceScan, kernel: Function) -> dict[str, dict[str, int]] | None:
    """How each global access of ``kernel`` moves along ``threadIdx.x`` and ``threadIdx.y``.

    Per axis, the number of accesses whose index has coefficient 1 in that thread index (``unit``:
    neighbouring threads touch neighbouring elements, coalesced when the axis is x), 0
    (``broadcast``) or anything else (``strided``: a row stride, a symbolic factor). Indices are
    resolved through immutable locals by the affine reader of :mod:`~veriforge.optiml.ops_stage`.
    None when the kernel cannot be read. This is what lets the layout operators *predict* whether an
    edit fixes an uncoalesced access or moves it elsewhere (the naive ``A·Bᵀ`` kernel is strided in
    x through B; swapping the axes would make A and C strided instead), so the prior follows the
    prediction and the search does not spend its first evaluations on a likely regression.
    """
    from veriforge.optiml.ops_stage import Analyzer, Poly
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


# ---------------------------------------------------------------------------------------------
# swap_axes


def swap_axes_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Exchange the x and y axes of each eligible 2-D kernel and of its launches (see the module docstring)."""
    sc = scan(source)
    if not _builtins_ok(sc):
        return []
    out = []
    for kernel in sc.kernels():
        edit = _swap_kernel(sc, kernel)
        if edit is None:
            continue
        new, swap_grid, sites = edit
        motive = motivating_findings(findings, _COALESCE)
        what = "thread and block axes" if swap_grid else "thread axes"
        strides = axis_strides(sc, kernel)
        prior = _prior(motive, 0.8)
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
    for m in _BUILTIN.finditer(text, kernel.body_start, kernel.body_end):
        mm = _MEMBER.match(text, m.end())
        assert mm is not None  # _builtins_ok
        uses.append((mm.start(1), m.group(1), mm.group(1)))
    used = {(b, a) for _, b, a in uses}
    if not {("threadIdx", "x"), ("threadIdx", "y")} <= used:
        return None
    if _warp_level(sc, kernel):
        return None
    launches = sc.launches_of(kernel.name)
    if not launches or not _name_refs_ok(sc, kernel, launches):
        return None
    blocks, grids = [], []
    for launch in launches:
        block, grid = _resolve(sc, launch, "block"), _resolve(sc, launch, "grid")
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
                if isinstance(v, int) and v > _GRID_LIMITS[1]:
                    return None  # the old gridDim.x would become gridDim.y
            if spec.kind == "var":
                if spec.decl in seen_vars:
                    continue
                seen_vars.add(spec.decl)

                def ok(other: Launch, role: str, which: str = which) -> bool:
                    return other.kernel == kernel.name and role == which

                if not _var_uses_ok(sc, host, spec.var, spec.decl, ok):
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
        return _apply(sc.source[span[0]:span[1]], {(s - span[0], e - span[0]): t for (s, e), t in inner.items()})

    for target, src in comp_edits.items():
        edits[target] = render(src)
    for pos, letter in small.items():
        if not any(s <= pos < e for s, e in comp_edits):
            edits[(pos, pos + 1)] = letter
    try:
        new = _apply(sc.source, edits)
    except ValueError:
        return None
    if new == sc.source:
        return None
    return new, swap_grid, len(launches)


# ---------------------------------------------------------------------------------------------
# block_shape


def _shapes(current: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Same thread count, 32 or 64 threads along x, the rest split as evenly as powers of two allow."""
    total = 1
    for d in current:
        total *= d
    n = len(current)
    out: list[tuple[int, ...]] = []
    for x in (32, 64):
        if total % x or x > total:
            continue
        rest = total // x
        if n == 2:
            cands = [(x, rest)]
        else:
            y = 1 << ((rest.bit_length()) // 2)  # y >= z, y * z == rest (rest a power of two)
            if y * (rest // y) != rest:
                continue
            cands = [(x, y, rest // y)]
            if rest // y >= 4:
                cands.append((x, 2 * y, rest // (2 * y)))
            cands = [c for c in cands if c[2] >= 2] or cands[:1]
        for c in cands:
            if c != current and all(d <= lim for d, lim in zip(c, _SIZE_LIMITS, strict=False)) and c not in out:
                out.append(c)
    return out


def _generic_kernel(sc: SourceScan, kernel: Function, old_values: set[int]) -> bool:
    """A kernel whose correctness does not depend on its block's shape (conservatively)."""
    body = sc.text[kernel.body_start:kernel.body_end]
    if "__shared__" in body or "extern" in body or _warp_level(sc, kernel):
        return False
    for v in old_values:
        if v > 1 and re.search(rf"(?<![\w.]){v}(?![\w.])", body):
            return False
    return True


def _canonical_uses(sc: SourceScan, kernel: Function, const: str) -> dict[int, int] | None:
    """Position -> axis of every ``blockIdx.a * K + threadIdx.a`` use of ``const`` in the kernel; None if another."""
    text = sc.text
    k = re.escape(const)
    pats = [
        rf"blockIdx\s*\.\s*(?P<a>[xyz])\s*\*\s*(?P<k>{k})\s*\+\s*threadIdx\s*\.\s*(?P=a)\b",
        rf"(?P<k>{k})\s*\*\s*blockIdx\s*\.\s*(?P<a>[xyz])\s*\+\s*threadIdx\s*\.\s*(?P=a)\b",
        rf"threadIdx\s*\.\s*(?P<a>[xyz])\s*\+\s*blockIdx\s*\.\s*(?P=a)\s*\*\s*(?P<k>{k})\b",
        rf"threadIdx\s*\.\s*(?P<a>[xyz])\s*\+\s*(?P<k>{k})\s*\*\s*blockIdx\s*\.\s*(?P=a)\b",
    ]
    found: dict[int, int] = {}
    for pat in pats:
        for m in re.finditer(pat, text[kernel.body_start:kernel.body_end]):
            s, e = kernel.body_start + m.start(), kernel.body_start + m.end()
            before = text[:s].rstrip()[-1:]
            after = text[e:].lstrip()[:1]
            if before not in ("=", "(", ",", "+", "[", "?", ":", ";", "{") or after in ("*", "/", "%", "."):
                continue
            found[kernel.body_start + m.start("k")] = "xyz".index(m.group("a"))
    for m in re.finditer(rf"\b{k}\b", text[kernel.body_start:kernel.body_end]):
        if kernel.body_start + m.start() not in found:
            return None
    return found


def block_shape_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Reshape multi-dimensional blocks to 32/64 threads along x (see the module docstring)."""
    sc = scan(source)
    if not _builtins_ok(sc):
        return []
    motive = motivating_findings(findings, _COALESCE)
    out: list[EditProposal] = []
    specs = {launch.start: _resolve(sc, launch, "block") for launch in sc.launches}
    consts = sc.constant_decls()
    done_consts: set[str] = set()
    done_literals: set[tuple[str, int]] = set()
    for launch in sc.launches:
        spec = specs[launch.start]
        if spec is None or spec.kind == "scalar" or len(spec.comps) < 2:
            continue
        comp_text = [sc.text[s:e] for s, e in spec.comps]
        named = [c for c in comp_text if c in consts]
        if len(named) >= 2 and len(set(named)) == 1 and named[0] not in done_consts:
            done_consts.add(named[0])
            out.extend(_shape_constant(sc, named[0], consts[named[0]], specs, motive))
        elif all(re.fullmatch(r"\d+", c) for c in comp_text):
            key = (spec.kind, spec.decl if spec.kind == "var" else launch.start)
            if key not in done_literals:
                done_literals.add(key)
                out.extend(_shape_literal(sc, launch, spec, specs, motive))
    return [_shape_prior(sc, p) for p in out]


def _shape_prior(sc: SourceScan, proposal: EditProposal) -> EditProposal:
    """A wider x only helps when no access is strided along x (it spreads a strided one over more rows)."""
    strided = 0
    for kernel in sc.kernels():
        if kernel.name in proposal.evidence.get("kernels", ()):
            strides = axis_strides(sc, kernel)
            if strides is None:
                return proposal
            strided += strides["x"]["strided"]
    if strided == 0:
        return proposal
    return replace(proposal, prior=min(proposal.prior, 0.4),
                   evidence={**proposal.evidence, "strided_in_x": strided})


def _shape_constant(sc: SourceScan, const: str, info: tuple[int, int, int, str],
                    specs: dict[int, _Dim3 | None], motive: list[dict[str, Any]]) -> list[EditProposal]:
    value, d0, d1, kind = info
    text = sc.text
    names = {a: f"{const}_{a.upper()}" for a in "xyz"}
    if any(re.search(rf"\b{n}\b", text) for n in names.values()):
        return []
    site: dict[int, int] = {}  # position of a use of the constant -> axis
    axes_set: set[tuple[int, ...]] = set()
    launches = []
    for launch in sc.launches:
        spec = specs[launch.start]
        if spec is None or spec.kind == "scalar":
            continue
        comps = [text[s:e] for s, e in spec.comps]
        if const not in comps:
            continue
        if any(c not in (const, "1") for c in comps):
            return []
        axes_set.add(tuple(i for i, c in enumerate(comps) if c == const))
        launches.append((launch, spec))
    if len(axes_set) != 1:
        return []
    axes = axes_set.pop()
    if len(axes) < 2 or axes[0] != 0:
        return []
    kernels = {launch.kernel for launch, _ in launches}
    for launch, spec in launches:
        host = sc.host_function(launch, containing=True)
        grid = _resolve(sc, launch, "grid")
        if host is None or grid is None or grid.kind == "scalar" or len(grid.comps) <= axes[-1]:
            return []
        for i, (s, _) in enumerate(spec.comps):
            if i in axes:
                site[s] = i
        for i, (s, e) in enumerate(grid.comps):
            comp = text[s:e]
            uses = [s + m.start() for m in re.finditer(rf"\b{re.escape(const)}\b", comp)]
            follows = bool(uses) or (spec.kind == "var" and re.search(
                rf"\b{re.escape(spec.var)}\s*\.\s*{'xyz'[i]}\b", comp))
            if (i in axes) != bool(uses) and not (i in axes and follows):
                return []
            for p in uses:
                site[p] = i
        for var_spec, role in ((spec, "block"), (grid, "grid")):
            if var_spec.kind == "var":
                def ok(other: Launch, which: str, role: str = role) -> bool:
                    return other.kernel in kernels and which == role
                if not _var_uses_ok(sc, host, var_spec.var, var_spec.decl, ok):
                    return []
    for fn in sc.kernels():
        body_uses = re.search(rf"\b{re.escape(const)}\b", text[fn.body_start:fn.body_end])
        if fn.name not in kernels and not body_uses:
            continue
        if fn.name not in kernels:
            return []  # uses the constant but is launched with another block
        if any(launch.kernel == fn.name and launch not in [la for la, _ in launches] for launch in sc.launches):
            return []  # also launched with a block that is not written with the constant
        if not _generic_kernel(sc, fn, {value}):
            return []
        uses = _canonical_uses(sc, fn, const)
        if uses is None or any(a not in axes for a in uses.values()):
            return []
        site.update(uses)
    for m in re.finditer(rf"\b{re.escape(const)}\b", text):
        if m.start() not in site and not (d0 <= m.start() < d1):
            return []  # a use that belongs to no axis (shared array size, other arithmetic, ...)
    current = tuple(value for _ in axes)
    out = []
    for shape in _shapes(current):
        per_axis = dict(zip(axes, shape, strict=True))
        if kind == "define":
            decl = "\n".join(f"#define {names['xyz'[a]]} {v}" for a, v in per_axis.items())
        else:
            stmt = sc.source[d0:d1]
            prefix = stmt[:re.search(rf"\b{re.escape(const)}\b", stmt).start()]  # type: ignore[union-attr]
            decl = " ".join(f"{prefix}{names['xyz'[a]]} = {v};" for a, v in per_axis.items())
        edits = {(d0, d1): decl}
        for pos, a in site.items():
            edits[(pos, pos + len(const))] = names["xyz"[a]]
        new = _apply(sc.source, edits)
        if not _launch_limits_ok(new):
            continue
        desc = (f"block shape {const}: ({', '.join(map(str, current))}) → ({', '.join(map(str, shape))}) "
                f"as {', '.join(names['xyz'[a]] for a in axes)}")
        out.append(EditProposal(
            "block_shape", new, desc,
            {"constant": const, "old": list(current), "new": list(shape), "kernels": sorted(kernels),
             "findings": motive}, _prior(motive, 0.9 if shape[0] == 32 else 0.7)))
    return out


def _shape_literal(sc: SourceScan, launch: Launch, spec: _Dim3, specs: dict[int, _Dim3 | None],
                   motive: list[dict[str, Any]]) -> list[EditProposal]:
    text = sc.text
    values = [int(text[s:e]) for s, e in spec.comps]
    axes = tuple(i for i, v in enumerate(values) if v > 1)
    if len(axes) < 2 or axes[0] != 0 or axes != tuple(range(len(axes))):
        return []
    host = sc.host_function(launch, containing=True)
    if host is None:
        return []
    if spec.kind == "var":
        group = [la for la in sc.launches if (s := specs[la.start]) is not None and s.kind == "var"
                 and s.decl == spec.decl]
        if not _var_uses_ok(sc, host, spec.var, spec.decl, lambda other, which: which == "block"):
            return []
    else:
        group = [launch]
    current = tuple(values[a] for a in axes)
    for la in group:
        fn = next((f for f in sc.kernels() if f.name == la.kernel), None)
        if fn is None or not _generic_kernel(sc, fn, set(current)):
            return []
    out = []
    for shape in _shapes(current):
        edits: dict[tuple[int, int], str] = {}
        for a, v in zip(axes, shape, strict=True):
            edits[spec.comps[a]] = str(v)
        ok = True
        for la in group:
            grid = _resolve(sc, la, "grid")
            if grid is None or grid.kind == "scalar" or len(grid.comps) <= axes[-1]:
                ok = False
                break
            if grid.kind == "var" and not _var_uses_ok(
                    sc, host, grid.var, grid.decl,
                    lambda other, which: which == "grid" and other in group):
                ok = False
                break
            for a, v in zip(axes, shape, strict=True):
                old = current[a]
                span = grid.comps[a]
                comp = text[span[0]:span[1]]
                follow = grid_follow_spans(text, *span, old)
                refs = spec.kind == "var" and re.search(rf"\b{re.escape(spec.var)}\s*\.", comp)
                if refs and re.search(rf"\b{re.escape(spec.var)}\s*\.\s*(?!{'xyz'[a]}\b)", comp):
                    ok = False  # refers to another axis of the block
                literal_left = len(re.findall(rf"(?<![\w.]){old}(?![\w.])", comp)) + len(
                    re.findall(rf"(?<![\w.]){old - 1}(?![\w.])", comp))
                if not (follow or refs) or literal_left != len(follow):
                    ok = False
                if old == v:
                    continue
                for s, e, off in follow:
                    edits[(s, e)] = str(v + off)
        if not ok:
            return []
        new = _apply(sc.source, edits)
        if not _launch_limits_ok(new):
            continue
        where = spec.var if spec.kind == "var" else f"<<<{launch.kernel}>>>"
        desc = f"block shape {where}: ({', '.join(map(str, current))}) → ({', '.join(map(str, shape))})"
        out.append(EditProposal(
            "block_shape", new, desc,
            {"block": where, "old": list(current), "new": list(shape),
             "kernels": sorted({la.kernel for la in group}), "findings": motive},
            _prior(motive, 0.9 if shape[0] == 32 else 0.7)))
    return out


def _launch_limits_ok(source: str) -> bool:
    """Resolvable block and grid dimensions of every launch inside the hardware limits."""
    sc = scan(source)
    for launch in sc.launches:
        env = sc.host_env(launch.host)
        for which, limits in (("block", _SIZE_LIMITS), ("grid", _GRID_LIMITS)):
            v = eval_int(sc.expr(launch.block if which == "block" else launch.grid), env)
            if v is None:
                continue
            dims = list(v) if isinstance(v, tuple) else [v]
            if any(d > lim for d, lim in zip(dims, limits, strict=False)):
                return False
            padded = [*dims, 1, 1]
            if which == "block" and padded[0] * padded[1] * padded[2] > 1024:
                return False
    return True
