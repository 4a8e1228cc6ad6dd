"""The ``tune`` operator: launch configuration and tile sizes.

:func:`find_tunables` detects integer constants that shape the launch or the work decomposition:
``#define NAME v``, ``const``/``constexpr int NAME = v`` and host locals (``int threads = 256;``) used
in a ``<<<grid, block>>>``, literal ``dim3 block(16, 16)`` components, and literal block sizes in
``<<<(n + 127) / 128, 128>>>`` (the grid's ``128`` and ``127`` follow). A constant is kept when it sets
the block size, or when its name says it is a tuning knob (BLOCK, TILE, THREADS, TPB, ITEMS,
BM/BN/BK, …) and it sizes a shared array, bounds a loop, or enters a launch. Values move to
power-of-two neighbours inside the hardware limits (32..1024 threads per block, 48 KiB of static
shared memory); a literal 2-D block is also reshaped at equal thread count.

**Coupled constants.** A kernel written for one tile per block (``__shared__ float As[TILE][TILE]``
filled at ``As[threadIdx.y][threadIdx.x]``, rows at ``blockIdx.y * TILE + threadIdx.y``) is only
correct while the tile equals the block size: moving ``TILE`` and ``BLOCK`` independently breaks it,
and every such edit costs an evaluation. :func:`couplings` finds the constants a kernel ties to its
thread indices — the extent of a shared-array dimension indexed by ``threadIdx`` (directly or
through a local; not through the variable of a block-stride loop ``for (b = threadIdx.x; b < N;
b += blockDim.x)``, which is correct for any block size), the stride of ``blockIdx.a * C +
threadIdx.a``, a modulus or divisor of ``threadIdx`` (a tile that divides the block) — and couples
each with the block-size tunables of that kernel's launches whose value equals it (or, for a
modulus/divisor, that it divides). Coupled tunables move together by the same factor (which keeps
every equality and divisibility); a group that includes a constant ``tune`` cannot move (a literal
extent, a constant without a tuning name) does not move at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.source_scan import (
    CONST_DECL,
    DEFINE,
    DIM3_DECL,
    EXPR_DECL,
    LOCAL_DECL,
    SourceScan,
    eval_int,
    grid_follow_spans,
    identifiers,
    scan,
)

__all__ = ["Tunable", "apply_tunable", "apply_tunables", "couplings", "find_tunables", "tune_edits"]

TUNING_NAME = re.compile(
    r"(?i)(block|tile|thread|tpb|warps_?per|items|per_?thread|unroll|chunk|coarsen|work|"
    r"^b[mnk]$|^t[mnk]$|^w[mn]$|^nt$|^nb$|^bs$)"
)
HARDWARE_NAME = re.compile(r"(?i)warp_?size|full_?mask")
MAX_THREADS = 1024
MIN_THREADS = 32
MAX_STATIC_SMEM = 48 * 1024
MAX_TILE = 256
_TYPE_BYTES = {"double": 8, "long": 8, "int64_t": 8, "uint64_t": 8, "size_t": 8, "half": 2, "__half": 2,
               "short": 2, "char": 1, "bool": 1, "uint8_t": 1, "int8_t": 1, "float4": 16, "float2": 8,
               "int4": 16, "int2": 8}


@dataclass(frozen=True)
class Tunable:
    """One integer knob of the kernel and where its value is written.

    ``spans`` are ``(start, end, offset)``: the text ``source[start:end]`` is replaced by
    ``str(new_value + offset)`` (offset -1 rewrites the ``127`` of ``(n + 127) / 128``).
    ``roles`` name what it controls: ``block`` (threads per block), ``grid``, ``shared`` (a shared
    array size), ``loop`` (a loop bound), ``kernel`` (used in kernel code otherwise).
    """

    name: str
    value: int
    kind: str  # define | const | local | dim3 | launch
    line: int
    roles: tuple[str, ...]
    spans: tuple[tuple[int, int, int], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "kind": self.kind, "line": self.line,
                "roles": list(self.roles)}


# ---------------------------------------------------------------------------------------------
# Tunable detection


def _roles(sc: SourceScan, name: str, block_ids: set[str], grid_ids: set[str]) -> tuple[str, ...]:
    pat = re.compile(rf"\b{re.escape(name)}\b")
    roles: list[str] = []
    if name in block_ids:
        roles.append("block")
    if name in grid_ids:
        roles.append("grid")
    text = sc.text
    for m in re.finditer(r"__shared__[^;]*?\[([^;]*)\]\s*;", text):
        if pat.search(m.group(1)):
            roles.append("shared")
            break
    for fn in sc.functions:
        if not (fn.kernel or fn.device):
            continue
        body = text[fn.body_start:fn.body_end]
        for m in re.finditer(r"\bfor\s*\(([^;]*);([^;]*);", body):
            if pat.search(m.group(2)):
                roles.append("loop")
                break
        if pat.search(body) and "kernel" not in roles:
            roles.append("kernel")
    return tuple(dict.fromkeys(roles))


def _launch_ids(sc: SourceScan, kernel: str | None = None) -> tuple[set[str], set[str]]:
    """Identifiers the block / grid expressions depend on, through host locals and dim3s (of the
    launches of ``kernel``, or of every launch)."""
    block_ids: set[str] = set()
    grid_ids: set[str] = set()
    for launch in sc.launches:
        if kernel is not None and launch.kernel != kernel:
            continue
        block_ids |= identifiers(sc.expr(launch.block))
        grid_ids |= identifiers(sc.expr(launch.grid))
    definitions: dict[str, str] = {}
    for fn in sc.functions:
        if fn.kernel or fn.device:
            continue
        body = sc.text[fn.body_start:fn.body_end]
        for m in EXPR_DECL.finditer(body):
            definitions.setdefault(m.group(1), m.group(2))
        for m in DIM3_DECL.finditer(body):
            definitions.setdefault(m.group(1), m.group(2) or m.group(3) or m.group(4) or "")
    for ids in (block_ids, grid_ids):
        todo = list(ids)
        while todo:
            name = todo.pop()
            for dep in identifiers(definitions.get(name, "")):
                if dep not in ids:
                    ids.add(dep)
                    todo.append(dep)
    return block_ids, grid_ids


def find_tunables(source: str) -> list[Tunable]:
    """The kernel's tunable integer parameters (see the module docstring for the rules)."""
    sc = scan(source)
    block_ids, grid_ids = _launch_ids(sc)
    found: list[Tunable] = []
    seen: set[str] = set()

    def keep(name: str, roles: tuple[str, ...]) -> bool:
        if HARDWARE_NAME.search(name) or name in seen:
            return False
        if "block" in roles:
            return True
        return bool(TUNING_NAME.search(name)) and bool(set(roles) & {"shared", "loop", "grid", "kernel"})

    for pattern, kind in ((DEFINE, "define"), (CONST_DECL, "const")):
        for m in pattern.finditer(sc.text):
            name = m.group(1)
            roles = _roles(sc, name, block_ids, grid_ids)
            if keep(name, roles):
                seen.add(name)
                found.append(Tunable(name, int(m.group(2)), kind, sc.line(m.start()), roles,
                                     ((m.start(2), m.end(2), 0),)))
    for fn in sc.functions:
        if fn.kernel or fn.device:
            continue
        body = sc.text[fn.body_start:fn.body_end]
        for m in LOCAL_DECL.finditer(body):
            name = m.group(1)
            if name in seen or name not in (block_ids | grid_ids):
                continue
            roles = _roles(sc, name, block_ids, grid_ids)
            if keep(name, roles):
                seen.add(name)
                off = fn.body_start
                found.append(Tunable(name, int(m.group(2)), "local", sc.line(off + m.start()), roles,
                                     ((off + m.start(2), off + m.end(2), 0),)))
        for m in DIM3_DECL.finditer(body):
            name = m.group(1)
            if name not in block_ids:
                continue
            group = 2 if m.group(2) is not None else 3 if m.group(3) is not None else 4
            start = fn.body_start + m.start(group)
            args = sc.text[start:fn.body_start + m.end(group)]
            pos = 0
            grid_parts = _grid_components(sc, fn, name)
            for i, (axis, part) in enumerate(zip("xyz", args.split(","), strict=False)):
                lit = re.fullmatch(r"\s*(\d+)[uU]?\s*", part)
                if lit:
                    s = start + pos + lit.start(1)
                    value = int(lit.group(1))
                    spans = [(s, s + len(lit.group(1)), 0)]
                    if i < len(grid_parts):
                        # `dim3 grid((N + 15) / 16, ...)` written with literals: they follow the block.
                        g0, g1 = grid_parts[i]
                        spans.extend(grid_follow_spans(sc.text, g0, g1, value))
                    found.append(Tunable(f"{name}.{axis}", value, "dim3", sc.line(s), ("block",), tuple(spans)))
                pos += len(part) + 1
    for launch in sc.launches:
        b0, b1 = launch.block
        lit = re.fullmatch(r"\s*(\d+)[uU]?\s*", sc.text[b0:b1])
        if not lit:
            continue
        value = int(lit.group(1))
        spans = [(b0 + lit.start(1), b0 + lit.end(1), 0)]
        g0, g1 = launch.grid
        spans.extend(grid_follow_spans(sc.text, g0, g1, value))
        found.append(Tunable(f"<<<{launch.kernel}>>> block", value, "launch", sc.line(b0), ("block",),
                             tuple(spans)))
    return found


def _grid_components(sc: SourceScan, fn: Any, block_name: str) -> list[tuple[int, int]]:
    """Spans of the components of the dim3 grid launched with block ``block_name`` in ``fn``."""
    from veriforge.optiml.source_scan import split_top

    for launch in sc.launches:
        if launch.host != fn.name or sc.expr(launch.block) != block_name:
            continue
        grid = sc.expr(launch.grid)
        body = sc.text[fn.body_start:fn.body_end]
        for m in DIM3_DECL.finditer(body):
            if m.group(1) == grid:
                group = 2 if m.group(2) is not None else 3 if m.group(3) is not None else 4
                return split_top(sc.text, fn.body_start + m.start(group), fn.body_start + m.end(group))
    return []


def apply_tunable(source: str, tunable: Tunable, value: int) -> str:
    return apply_tunables(source, [(tunable, value)])


def apply_tunables(source: str, changes: Sequence[tuple[Tunable, int]]) -> str:
    """Set several tunables at once (their spans are applied right to left, so none shifts another)."""
    edits = sorted(((s, e, str(v + off)) for t, v in changes for s, e, off in t.spans), reverse=True)
    out = source
    for start, end, text in edits:
        out = out[:start] + text + out[end:]
    return out


def _neighbours(value: int, block: bool) -> list[int]:
    if value <= 0:
        return []
    if value & (value - 1) == 0:
        steps = [value * 2, value // 2] + ([value * 4, value // 4] if block else [])
    else:
        below = 1 << (value.bit_length() - 1)
        steps = [below * 2, below]
    return [v for v in dict.fromkeys(steps) if v >= 1 and v != value]


def _within_limits(sc_new: SourceScan, original: SourceScan) -> tuple[bool, str]:
    """Block sizes and static shared memory of the edited source inside hardware limits."""
    for launch, old in zip(sc_new.launches, original.launches, strict=False):
        dims = sc_new.block_dims(launch)
        if dims is None:
            continue
        threads = dims[0] * dims[1] * dims[2]
        old_dims = original.block_dims(old)
        old_threads = old_dims[0] * old_dims[1] * old_dims[2] if old_dims else MIN_THREADS
        if threads > MAX_THREADS or dims[0] > 1024 or dims[1] > 1024 or dims[2] > 64:
            return False, f"{threads} threads per block exceed the hardware limit"
        if threads < min(MIN_THREADS, old_threads):
            return False, f"{threads} threads per block is below one warp"
    smem = _static_smem(sc_new)
    if smem is not None and smem > MAX_STATIC_SMEM:
        return False, f"{smem} B of static shared memory exceed 48 KiB"
    return True, ""


def _static_smem(sc: SourceScan) -> int | None:
    env = sc.constants()
    total = 0
    for m in re.finditer(r"__shared__\s+(?:volatile\s+)?(?:unsigned\s+)?(\w+)\s+\w+\s*((?:\[[^\]]*\]\s*)+);",
                         sc.text):
        size = _TYPE_BYTES.get(m.group(1), 4)
        for dim in re.findall(r"\[([^\]]*)\]", m.group(2)):
            v = eval_int(dim, env)
            if not isinstance(v, int):
                return None
            size *= v
        total += size
    return total


def _sync_launch_bounds(source: str) -> str:
    """Raise literal ``__launch_bounds__(N)`` below the (resolved) block size of the kernel's launch."""
    sc = scan(source)
    out = source
    edits: list[tuple[int, int, str]] = []
    for fn in sc.kernels():
        header = sc.text[fn.header_start:fn.body_start]
        m = re.search(r"__launch_bounds__\s*\(\s*(\d+)", header)
        if not m:
            continue
        bound = int(m.group(1))
        for launch in sc.launches:
            if launch.kernel != fn.name:
                continue
            dims = sc.block_dims(launch)
            if dims and dims[0] * dims[1] * dims[2] != bound:
                s = fn.header_start + m.start(1)
                edits.append((s, s + len(m.group(1)), str(dims[0] * dims[1] * dims[2])))
                break
    for s, e, text in sorted(edits, reverse=True):
        out = out[:s] + text + out[e:]
    return out


# ---------------------------------------------------------------------------------------------
# Coupled constants


@dataclass(frozen=True)
class Coupling:
    """``a == b`` (``kind`` ``"equal"``) or ``a`` divides ``b`` (``"divides"``) must keep holding after a
    move; each side is a tunable's name or a value ``tune`` cannot change. ``why`` is the evidence."""

    kind: str
    a: str | int
    b: str | int
    why: str

    def holds(self, values: dict[str, int]) -> bool:
        a = values.get(self.a, 0) if isinstance(self.a, str) else self.a
        b = values.get(self.b, 0) if isinstance(self.b, str) else self.b
        return a == b if self.kind == "equal" else a > 0 and b % a == 0

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "a": self.a, "b": self.b, "why": self.why}


_ASSIGN = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*=(?!=)\s*([^;,]+)")  # declarations and assignments
_STRIDE_LOOP = re.compile(r"\bfor\s*\([^;]*?\b([A-Za-z_]\w*)\s*=[^;]*;[^;]*;\s*\1\s*\+=\s*([^)]*)\)")
_SHARED_DECL = re.compile(r"__shared__[^;\[]*?\b([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)+);")
# ``blockIdx.a * C + t``, ``C * blockIdx.a + t``, ``t + blockIdx.a * C``: (pattern, axis, C, t) groups
_STRIDE = (
    (re.compile(r"blockIdx\.([xyz])\s*\*\s*(\w+)\s*\+\s*(?:\(\s*int\s*\)\s*)?([\w.]+)"), 1, 2, 3),
    (re.compile(r"(\w+)\s*\*\s*blockIdx\.([xyz])\s*\+\s*(?:\(\s*int\s*\)\s*)?([\w.]+)"), 2, 1, 3),
    (re.compile(r"([\w.]+)\s*\+\s*blockIdx\.([xyz])\s*\*\s*(\w+)"), 2, 3, 1),
)
_LITERAL = re.compile(r"(?<![\w.])(\d+)[uU]?(?![\w.])")


def _thread_names(body: str, block_names: set[str]) -> set[str]:
    """Locals whose value depends on ``threadIdx`` (``int tx = threadIdx.x;`` and what is built from them),
    except the variables of block- and grid-stride loops (``for (b = threadIdx.x; b < N; b += blockDim.x)``
    visits the same indices for any block size; the step is ``blockDim`` or a block-size constant)."""
    names: set[str] = set()
    strided = {m.group(1) for m in _STRIDE_LOOP.finditer(body)
               if identifiers(m.group(2)) & (block_names | {"blockDim"})}
    decls = [(m.group(1), identifiers(m.group(2))) for m in _ASSIGN.finditer(body) if m.group(1) not in strided]
    changed = True
    while changed:
        changed = False
        for name, ids in decls:
            if name not in names and ("threadIdx" in ids or ids & names):
                names.add(name)
                changed = True
    return names


def _subscripts(body: str, name: str) -> list[list[str]]:
    """The subscripts of each ``name[..][..]`` in ``body``."""
    out = []
    for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\s*\[", body):
        subs, k = [], m.end() - 1
        while k < len(body) and body[k] == "[":
            depth, j = 0, k
            while j < len(body):
                depth += {"[": 1, "]": -1}.get(body[j], 0)
                if depth == 0:
                    break
                j += 1
            subs.append(body[k + 1:j])
            k = j + 1
            while k < len(body) and body[k].isspace():
                k += 1
        out.append(subs)
    return out


def _side(token: str, tunable_names: set[str], env: dict[str, int]) -> str | int | None:
    """A constant's side of a coupling: its tunable name, its fixed value, or None (not a constant)."""
    if token in tunable_names:
        return token
    if token.isdigit():
        return int(token)
    return env.get(token)


def couplings(source: str, tunables: Sequence[Tunable] | None = None) -> list[Coupling]:
    """What ties the block-size tunables of each kernel to its other constants (module docstring)."""
    sc = scan(source)
    tunables = find_tunables(source) if tunables is None else list(tunables)
    names = {t.name for t in tunables}
    values = {t.name: t.value for t in tunables}
    env = sc.constants()
    out: list[Coupling] = []
    for fn in sc.kernels():
        block_ids, _ = _launch_ids(sc, fn.name)
        blocks = [t for t in tunables if "block" in t.roles and (
            t.name in block_ids or t.name.split(".")[0] in block_ids or t.name == f"<<<{fn.name}>>> block")]
        if not blocks:
            continue
        body = sc.text[fn.body_start:fn.body_end]
        thread = _thread_names(body, block_ids) | {"threadIdx"}
        tied: list[tuple[str, str, str]] = []  # (constant token, relation, evidence)
        for m in _SHARED_DECL.finditer(body):  # the extent of each dimension some thread index walks
            extents = re.findall(r"\[([^\]]*)\]", m.group(2))
            walked = {d for subs in _subscripts(body, m.group(1)) for d, sub in enumerate(subs)
                      if d < len(extents) and identifiers(sub) & thread}
            for d in sorted(walked):
                for token in sorted(identifiers(extents[d])) + _LITERAL.findall(extents[d]):
                    why = f"shared array {m.group(1)}[{extents[d].strip()}] indexed by threadIdx"
                    tied.append((token, "equal", why))
        for pattern, axis, const, term in _STRIDE:
            for m in pattern.finditer(body):
                if m.group(term) in (f"threadIdx.{m.group(axis)}", *thread):
                    tied.append((m.group(const), "equal", f"{m.group(0)}: the block's extent along {m.group(axis)}"))
        for m in re.finditer(r"(?<![\w.])(\w+(?:\.[xyz])?)\s*([%/])\s*(\w+)", body):
            if m.group(1) in thread or (m.group(1).startswith("threadIdx.")):
                tied.append((m.group(3), "divides", f"{m.group(0)}: a tile of the block"))
        for token, kind, why in tied:
            side = _side(token, names, env)
            if side is None or (isinstance(side, int) and side < 2):
                continue
            value = values[side] if isinstance(side, str) else side
            for b in blocks:
                if b.name == side:
                    continue
                if kind == "equal" and value == b.value:
                    out.append(Coupling("equal", side, b.name, why))
                elif kind == "divides" and b.value % value == 0 and value < b.value:
                    out.append(Coupling("divides", side, b.name, why))
    return list(dict.fromkeys(out))


def _groups(tunables: Sequence[Tunable], links: Sequence[Coupling]) -> list[list[Tunable]]:
    """Tunables joined by an ``equal`` coupling (they can only move together), two or more each."""
    parent = {t.name: t.name for t in tunables}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for c in links:
        if c.kind == "equal" and isinstance(c.a, str) and isinstance(c.b, str):
            parent[root(c.a)] = root(c.b)
    groups: dict[str, list[Tunable]] = {}
    for t in tunables:
        groups.setdefault(root(t.name), []).append(t)
    return [g for g in groups.values() if len(g) > 1]


# ---------------------------------------------------------------------------------------------
# The operator


_BLOCK_KINDS = {"small_grid", "low_occupancy", "partial_warp", "low_dram_throughput", "memory_bound"}
_TILE_KINDS = {"memory_bound", "uncoalesced_load", "uncoalesced_store", "bank_conflict", "low_occupancy",
               "compute_bound"}
_SHAPE_KINDS = {"uncoalesced_load", "uncoalesced_store"} | _BLOCK_KINDS


@operator("tune", order=10, motives=_BLOCK_KINDS | _TILE_KINDS | _SHAPE_KINDS)
def tune_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Power-of-two moves of the launch and tile constants; coupled constants move together."""
    sc = scan(source)
    tunables = find_tunables(source)
    links = couplings(source, tunables)
    values = {t.name: t.value for t in tunables}

    def allowed(changes: dict[str, int]) -> bool:
        return all(c.holds({**values, **changes}) for c in links)

    out = []
    for t in tunables:
        block = "block" in t.roles
        motive = motivating_findings(findings, _BLOCK_KINDS if block else _TILE_KINDS)
        for value in _neighbours(t.value, block):
            if (not block and value > MAX_TILE) or not allowed({t.name: value}):
                continue
            new = _sync_launch_bounds(apply_tunable(source, t, value))
            ok, _ = _within_limits(scan(new), sc)
            if not ok:
                continue
            what = "block size" if block else "tile size" if "shared" in t.roles else "parameter"
            prior = 1.0 + sum(float(f["severity"] or 0) for f in motive)
            out.append(EditProposal(
                "tune", new, f"{what} {t.name}: {t.value} → {value}",
                {"tunable": t.to_dict(), "new_value": value, "findings": motive}, prior))
        if t.kind == "dim3" and t.name.endswith(".x"):
            out.extend(_reshape_dim3(source, sc, t, findings, allowed))
    for group in _groups(tunables, links):
        out.extend(_move_together(source, sc, group, links, findings, allowed))
    return out


def _move_together(source: str, sc: SourceScan, group: list[Tunable], links: Sequence[Coupling],
                   findings: Sequence[Any], allowed: Any) -> list[EditProposal]:
    """×2 and ÷2 of every tunable of a coupled group at once (equalities and divisibility kept)."""
    out = []
    names = [t.name for t in group]
    motive = motivating_findings(findings, _BLOCK_KINDS | _TILE_KINDS)
    for factor in (2.0, 0.5):
        changes = {t.name: int(t.value * factor) for t in group}
        if any(v < 1 or (v > MAX_TILE and "block" not in t.roles) for t, v in zip(group, changes.values(),
                                                                                   strict=True)):
            continue
        if not allowed(changes):
            continue
        new = _sync_launch_bounds(apply_tunables(source, [(t, changes[t.name]) for t in group]))
        ok, _ = _within_limits(scan(new), sc)
        if not ok:
            continue
        old = ", ".join(str(t.value) for t in group)
        out.append(EditProposal(
            "tune", new, f"coupled {', '.join(names)}: ({old}) → ({', '.join(str(v) for v in changes.values())})",
            {"tunables": [t.to_dict() for t in group], "new_values": list(changes.values()),
             "coupled": [c.to_dict() for c in links if c.a in names or c.b in names], "findings": motive},
            1.0 + sum(float(f["severity"] or 0) for f in motive)))
    return out


def _reshape_dim3(source: str, sc: SourceScan, tx: Tunable, findings: Sequence[Any], allowed: Any
                  ) -> list[EditProposal]:
    """x·2, y/2 and x/2, y·2 for a literal 2-D block: same threads, different shape (when no coupling
    forbids it)."""
    ty = next((t for t in find_tunables(source) if t.name == tx.name[:-2] + ".y"), None)
    if ty is None:
        return []
    out = []
    for fx, fy in ((2, 0.5), (0.5, 2)):
        nx, ny = int(tx.value * fx), int(ty.value * fy)
        if nx < 1 or ny < 1 or not allowed({tx.name: nx, ty.name: ny}):
            continue
        new = apply_tunables(source, [(tx, nx), (ty, ny)])
        ok, _ = _within_limits(scan(new), sc)
        if ok:
            motive = motivating_findings(findings, _SHAPE_KINDS)
            out.append(EditProposal(
                "tune", new, f"block shape {tx.name[:-2]}: ({tx.value}, {ty.value}) → ({nx}, {ny})",
                {"tunable": tx.to_dict(), "new_value": [nx, ny], "findings": motive},
                1.0 + sum(float(f["severity"] or 0) for f in motive)))
    return out



