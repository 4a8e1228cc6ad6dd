"""The ``block_shape`` operator (layout; shared parts in :mod:`._layout`).

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

Motivated by ``uncoalesced_load``/``uncoalesced_store`` findings (a wider x gets the findings-driven
prior only when no access is strided along x; at most 0.4 otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from veriforge.optiml.operators import _layout as layout
from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import Function, Launch, SourceScan, eval_int, grid_follow_spans, scan

__all__ = ["block_shape_edits"]

_SIZE_LIMITS = (1024, 1024, 64)


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
    if "__shared__" in body or "extern" in body or layout.warp_level(sc, kernel):
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


@operator("block_shape", order=70, motives=layout.COALESCE, restructuring=True)
def block_shape_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Reshape multi-dimensional blocks to 32/64 threads along x (see the module docstring)."""
    sc = scan(source)
    if not layout.builtins_ok(sc):
        return []
    motive = motivating_findings(findings, layout.COALESCE)
    out: list[EditProposal] = []
    specs = {launch.start: layout.resolve(sc, launch, "block") for launch in sc.launches}
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
            strides = layout.axis_strides(sc, kernel)
            if strides is None:
                return proposal
            strided += strides["x"]["strided"]
    if strided == 0:
        return proposal
    return replace(proposal, prior=min(proposal.prior, 0.4),
                   evidence={**proposal.evidence, "strided_in_x": strided})


def _shape_constant(sc: SourceScan, const: str, info: tuple[int, int, int, str],
                    specs: dict[int, layout.Dim3 | None], motive: list[dict[str, Any]]) -> list[EditProposal]:
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
        grid = layout.resolve(sc, launch, "grid")
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
                if not layout.var_uses_ok(sc, host, var_spec.var, var_spec.decl, ok):
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
        new = layout.apply(sc.source, edits)
        if not _launch_limits_ok(new):
            continue
        desc = (f"block shape {const}: ({', '.join(map(str, current))}) → ({', '.join(map(str, shape))}) "
                f"as {', '.join(names['xyz'[a]] for a in axes)}")
        out.append(EditProposal(
            "block_shape", new, desc,
            {"constant": const, "old": list(current), "new": list(shape), "kernels": sorted(kernels),
             "findings": motive}, layout.motivated_prior(motive, 0.9 if shape[0] == 32 else 0.7)))
    return out


def _shape_literal(sc: SourceScan, launch: Launch, spec: layout.Dim3, specs: dict[int, layout.Dim3 | None],
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
        if not layout.var_uses_ok(sc, host, spec.var, spec.decl, lambda other, which: which == "block"):
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
            grid = layout.resolve(sc, la, "grid")
            if grid is None or grid.kind == "scalar" or len(grid.comps) <= axes[-1]:
                ok = False
                break
            if grid.kind == "var" and not layout.var_uses_ok(
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
        new = layout.apply(sc.source, edits)
        if not _launch_limits_ok(new):
            continue
        where = spec.var if spec.kind == "var" else f"<<<{launch.kernel}>>>"
        desc = f"block shape {where}: ({', '.join(map(str, current))}) → ({', '.join(map(str, shape))})"
        out.append(EditProposal(
            "block_shape", new, desc,
            {"block": where, "old": list(current), "new": list(shape),
             "kernels": sorted({la.kernel for la in group}), "findings": motive},
            layout.motivated_prior(motive, 0.9 if shape[0] == 32 else 0.7)))
    return out


def _launch_limits_ok(source: str) -> bool:
    """Resolvable block and grid dimensions of every launch inside the hardware limits."""
    sc = scan(source)
    for launch in sc.launches:
        env = sc.host_env(launch.host)
        for which, limits in (("block", _SIZE_LIMITS), ("grid", layout.GRID_LIMITS)):
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
