"""Built-in edit operators: source transformations that need no model.

OptiML-X must improve a kernel with no model configured (the demo, CI, air-gapped machines), so it
carries the edits an engineer tries first, each a plain text transformation of the source:

* **tune** — launch configuration and tile sizes. :func:`find_tunables` detects integer constants
  that shape the launch or the work decomposition: ``#define NAME v``, ``const``/``constexpr int
  NAME = v`` and host locals (``int threads = 256;``) used in a ``<<<grid, block>>>``, literal
  ``dim3 block(16, 16)`` components, and literal block sizes in ``<<<(n + 127) / 128, 128>>>``
  (the grid's ``128`` and ``127`` follow). A constant is kept when it sets the block size, or when
  its name says it is a tuning knob (BLOCK, TILE, THREADS, TPB, ITEMS, BM/BN/BK, …) and it sizes a
  shared array, bounds a loop, or enters a launch. Values move to power-of-two neighbours inside
  the hardware limits (1..1024 threads per block, 48 KiB of static shared memory).
* **unroll** — ``#pragma unroll`` (constant trip count) or ``#pragma unroll 4`` on innermost loops.
* **restrict** — ``__restrict__`` on every pointer parameter of a kernel and ``const`` on those the
  kernel never writes (the compiler may then use the read-only path and reorder loads).
* **launch_bounds** — ``__launch_bounds__(N)`` with N the block size of the kernel's launch
  (the block-size expression itself when it is a file-level constant, so later tuning keeps it
  consistent; tuning also raises a literal bound that would fall below the new block size).

Restructuring operators, one module each (imported on first use), change how work maps onto
threads; each refuses any kernel outside the pattern it fully understands:

* **vectorize** (:mod:`.ops_vectorize`) — 1-D element-wise kernels handle 4 (or 2) elements per
  thread with ``float4``/``int4`` accesses behind a run-time alignment check, scalar tail.
* **swap_axes**, **block_shape** (:mod:`.ops_layout`) — exchange the x/y thread mapping of a 2-D
  kernel, or reshape a multi-dimensional block (per-axis constants) to 32/64 threads along x;
  their priors follow a static prediction of which accesses become unit-stride along the warp.
* **rows** (:mod:`.ops_rows`) — thread-per-row loops become warp-per-row or block-per-row with
  shuffle / shared-memory all-reductions.
* **stage_shared** (:mod:`.ops_stage`) — constant-offset stencils read their input window (and
  small coefficient tables) from a shared-memory tile loaded once per block.
* **aggregate** (:mod:`.ops_aggregate`) — one atomic per thread to a shared address becomes one
  per warp / block / grid-stride thread after a shuffle reduction.
* **fuse** (:mod:`.ops_fuse`) — consecutive element-wise launches over the same index space become
  one kernel, intermediates kept in registers.
* **tile_shared** (:mod:`.ops_tile`) — an inner-product loop over k (naive matmul, NN or NT layout)
  becomes TILE x TILE shared-memory tiling with coalesced tile loads (``#define TILE 16``, tunable).

Every edit is a new :class:`~veriforge.core.types.Candidate` with a description and the evidence
that motivated it (diagnosis findings of the parent, the tunable's uses). Nothing here decides
that an edit is correct: the verifier does, and a wrong edit is rejected there.
:class:`BuiltinProposer` offers them to :mod:`veriforge.search` (proposer name ``"builtin"``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from veriforge.core.types import Candidate
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
from veriforge.optiml.source_tokens import close_of, statement_after

__all__ = [
    "OPERATORS",
    "BuiltinProposer",
    "EditProposal",
    "Tunable",
    "find_tunables",
    "propose_edits",
]

OPERATORS = ("tune", "unroll", "restrict", "launch_bounds", "vectorize", "swap_axes", "block_shape", "rows",
             "stage_shared", "aggregate", "fuse", "tile_shared")

_log = logging.getLogger(__name__)

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


@dataclass(frozen=True)
class EditProposal:
    """A transformed source with the story of the edit."""

    operator: str
    source: str
    description: str
    evidence: dict[str, Any] = field(default_factory=dict)
    prior: float = 1.0


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


def _launch_ids(sc: SourceScan) -> tuple[set[str], set[str]]:
    """Identifiers the block / grid expressions depend on, through host locals and dim3s."""
    block_ids: set[str] = set()
    grid_ids: set[str] = set()
    for launch in sc.launches:
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

    for m in DEFINE.finditer(sc.text):
        name = m.group(1)
        roles = _roles(sc, name, block_ids, grid_ids)
        if keep(name, roles):
            seen.add(name)
            found.append(Tunable(name, int(m.group(2)), "define", sc.line(m.start()), roles,
                                 ((m.start(2), m.end(2), 0),)))
    for m in CONST_DECL.finditer(sc.text):
        name = m.group(1)
        roles = _roles(sc, name, block_ids, grid_ids)
        if keep(name, roles):
            seen.add(name)
            found.append(Tunable(name, int(m.group(2)), "const", sc.line(m.start()), roles,
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
# The operators


def motivating_findings(findings: Iterable[Any], kinds: set[str]) -> list[dict[str, Any]]:
    """The findings of ``kinds`` (dicts or :class:`~veriforge.optiml.diagnosis.Finding`), trimmed to what an
    edit's evidence records; every operator's prior grows with their severities."""
    out = []
    for f in findings or ():
        d = f if isinstance(f, dict) else f.to_dict()
        if d.get("kind") in kinds:
            out.append({k: d.get(k) for k in ("kind", "severity", "line", "message")})
    return out


_BLOCK_KINDS = {"small_grid", "low_occupancy", "partial_warp", "low_dram_throughput", "memory_bound"}
_TILE_KINDS = {"memory_bound", "uncoalesced_load", "uncoalesced_store", "bank_conflict", "low_occupancy",
               "compute_bound"}


def tune_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    sc = scan(source)
    out = []
    for t in find_tunables(source):
        block = "block" in t.roles
        motive = motivating_findings(findings, _BLOCK_KINDS if block else _TILE_KINDS)
        for value in _neighbours(t.value, block):
            if not block and value > MAX_TILE:
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
            out.extend(_reshape_dim3(source, sc, t, findings))
    return out


def _reshape_dim3(source: str, sc: SourceScan, tx: Tunable, findings: Sequence[Any]) -> list[EditProposal]:
    """x·2, y/2 and x/2, y·2 for a literal 2-D block: same threads, different shape."""
    ty = next((t for t in find_tunables(source) if t.name == tx.name[:-2] + ".y"), None)
    if ty is None:
        return []
    out = []
    for fx, fy in ((2, 0.5), (0.5, 2)):
        nx, ny = int(tx.value * fx), int(ty.value * fy)
        if nx < 1 or ny < 1:
            continue
        new = apply_tunables(source, [(tx, nx), (ty, ny)])
        ok, _ = _within_limits(scan(new), sc)
        if ok:
            motive = motivating_findings(findings, {"uncoalesced_load", "uncoalesced_store"} | _BLOCK_KINDS)
            out.append(EditProposal(
                "tune", new, f"block shape {tx.name[:-2]}: ({tx.value}, {ty.value}) → ({nx}, {ny})",
                {"tunable": tx.to_dict(), "new_value": [nx, ny], "findings": motive},
                1.0 + sum(float(f["severity"] or 0) for f in motive)))
    return out


def unroll_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    sc = scan(source)
    env = sc.constants()
    out = []
    for fn in sc.functions:
        if not (fn.kernel or fn.device):
            continue
        body = sc.text[fn.body_start:fn.body_end]
        for m in re.finditer(r"\bfor\s*\(", body):
            start = fn.body_start + m.start()
            line_start = sc.text.rfind("\n", 0, start) + 1
            before = sc.text[:line_start].rstrip().rsplit("\n", 1)[-1]
            if "#pragma" in before and "unroll" in before:
                continue
            header_end = close_of(sc.text, fn.body_start + m.end() - 1)
            if header_end is None:
                continue
            loop_body = statement_after(sc.text, header_end + 1)
            if re.search(r"\b(for|while)\s*\(", loop_body):
                continue  # not innermost
            parts = sc.text[fn.body_start + m.end():header_end].split(";")
            bound = parts[1] if len(parts) == 3 else ""
            constant = bool(bound) and all(eval_int(x, env) is not None for x in re.split(r"<=|<|>=|>|!=", bound)[1:])
            pragma = "#pragma unroll" if constant else "#pragma unroll 4"
            indent = re.match(r"[ \t]*", sc.source[line_start:]).group(0)  # type: ignore[union-attr]
            new = sc.source[:line_start] + indent + pragma + "\n" + sc.source[line_start:]
            line = sc.line(start)
            motive = [f for f in motivating_findings(findings, {"loop_not_unrolled", "memory_bound", "compute_bound"})
                      if f["kind"] != "loop_not_unrolled" or f["line"] == line]
            prior = 1.0 if any(f["kind"] == "loop_not_unrolled" for f in motive) else 0.6
            out.append(EditProposal("unroll", new, f"{pragma} on the loop at line {line} of {fn.name}",
                                    {"line": line, "pragma": pragma, "findings": motive}, prior))
    return out


def restrict_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    sc = scan(source)
    out = []
    for fn in sc.kernels():
        header = sc.text[fn.header_start:fn.body_start]
        open_pos = header.find("(", header.find(fn.name))
        close = close_of(sc.text, fn.header_start + open_pos)
        if open_pos < 0 or close is None:
            continue
        p0 = fn.header_start + open_pos + 1
        params = sc.source[p0:close]
        body = sc.text[fn.body_start:fn.body_end]
        new_params, changed, made_const = [], [], []
        for part in params.split(","):
            m = re.fullmatch(r"(\s*)(.*?\*)\s*([A-Za-z_]\w*)(\s*)", part, re.S)
            if not m or "__restrict__" in part or "restrict" in part.split():
                new_params.append(part)
                continue
            lead, ptype, name, trail = m.groups()
            if "const" not in ptype.split() and not _written(body, name) and ptype.count("*") == 1:
                ptype = "const " + ptype
                made_const.append(name)
            new_params.append(f"{lead}{ptype} __restrict__ {name}{trail}")
            changed.append(name)
        if not changed:
            continue
        new = sc.source[:p0] + ",".join(new_params) + sc.source[close:]
        extra = f" and const on {', '.join(made_const)}" if made_const else ""
        motive = motivating_findings(findings, {"no_restrict", "memory_bound", "uncoalesced_load"})
        prior = 1.0 if any(f["kind"] == "no_restrict" for f in motive) else 0.5
        out.append(EditProposal("restrict", new, f"__restrict__ on {', '.join(changed)} of {fn.name}{extra}",
                                {"params": changed, "const": made_const, "findings": motive}, prior))
    return out


def _written(body: str, name: str) -> bool:
    n = re.escape(name)
    if re.search(rf"\b{n}\s*\[[^\]]*\]\s*(=(?!=)|\+=|-=|\*=|/=|\|=|&=|\^=|<<=|>>=|\+\+|--)", body):
        return True
    if re.search(rf"(\+\+|--)\s*{n}\s*\[", body) or re.search(rf"\*\s*\(?\s*{n}\b[^;=]*\)?\s*=(?!=)", body):
        return True
    if re.search(rf"\b{n}\s*(=(?!=)|\+=|-=)", body):  # the pointer itself is reassigned
        return True
    # Passed on (to an atomic, a device function, a pointer variable): assume it may be written.
    return bool(re.search(rf"[(,]\s*&?\s*{n}\s*(\+[^,)]*)?[,)]", body) or re.search(rf"=\s*{n}\s*(\+|;)", body))


def launch_bounds_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    sc = scan(source)
    consts = sc.constants()
    out = []
    for fn in sc.kernels():
        header = sc.text[fn.header_start:fn.body_start]
        if "__launch_bounds__" in header:
            continue
        launches = [launch for launch in sc.launches if launch.kernel == fn.name]
        if not launches:
            continue
        sizes = {sc.block_dims(launch) for launch in launches}
        if len(sizes) != 1 or None in sizes:
            continue
        dims = sizes.pop()
        assert dims is not None
        threads = dims[0] * dims[1] * dims[2]
        expr = sc.expr(launches[0].block)
        if re.fullmatch(r"[A-Za-z_]\w*", expr) and expr in consts and "dim3" not in expr:
            bound = expr  # follows later tuning of that constant
        else:
            bound = str(threads)
        g = header.find("__global__")
        pos = fn.header_start + g + len("__global__")
        new = sc.source[:pos] + f" __launch_bounds__({bound})" + sc.source[pos:]
        # `__global__ __launch_bounds__(N) void k(...)` is accepted by nvcc like the canonical order.
        motive = motivating_findings(findings, {"low_occupancy", "register_spill"})
        prior = 1.0 + sum(float(f["severity"] or 0) for f in motive) if motive else 0.5
        out.append(EditProposal("launch_bounds", new, f"__launch_bounds__({bound}) on {fn.name}",
                                {"threads": threads, "bound": bound, "findings": motive}, prior))
    return out


def _restructuring(module: str, func: str) -> Any:
    """A restructuring operator from its own module, imported on first use (those modules import this one)."""

    def edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
        import importlib

        return getattr(importlib.import_module(f"veriforge.optiml.{module}"), func)(source, findings)

    edits.__name__ = func
    return edits


_OPERATOR_FUNCS = {
    "tune": tune_edits,
    "unroll": unroll_edits,
    "restrict": restrict_edits,
    "launch_bounds": launch_bounds_edits,
    "vectorize": _restructuring("ops_vectorize", "vectorize_edits"),
    "swap_axes": _restructuring("ops_layout", "swap_axes_edits"),
    "block_shape": _restructuring("ops_layout", "block_shape_edits"),
    "rows": _restructuring("ops_rows", "rows_edits"),
    "stage_shared": _restructuring("ops_stage", "stage_shared_edits"),
    "aggregate": _restructuring("ops_aggregate", "aggregate_edits"),
    "fuse": _restructuring("ops_fuse", "fuse_edits"),
    "tile_shared": _restructuring("ops_tile", "tile_shared_edits"),
}


def propose_edits(source: str, findings: Sequence[Any] = (), operators: Sequence[str] = OPERATORS
                  ) -> list[EditProposal]:
    """Every built-in edit of ``source`` (deduplicated by resulting text, original excluded).

    An operator that fails on a source it does not understand costs only its own edits: the error
    is logged and the other operators still propose (a search must not die on one pattern reader).
    """
    unknown = set(operators) - set(_OPERATOR_FUNCS)
    if unknown:
        raise ValueError(f"unknown operators {sorted(unknown)}; known: {', '.join(OPERATORS)}")
    seen = {source}
    out = []
    for name in operators:
        try:
            edits = _OPERATOR_FUNCS[name](source, findings)
        except Exception as exc:  # one operator's parse failure must not end the search
            _log.warning("operator %s failed on this source (%s: %s); its edits are skipped",
                         name, type(exc).__name__, exc)
            continue
        for edit in edits:
            if edit.source not in seen:
                seen.add(edit.source)
                out.append(edit)
    return out


class BuiltinProposer:
    """The built-in operators as a :class:`veriforge.search.Proposer` (name ``"builtin"``).

    Reads the parent's diagnosis from ``node.evaluation.details["findings"]`` (what the OptiML-X
    evaluator stores) so each edit records the findings that motivated it and gets a PUCT prior
    that grows with their severity. Returns every edit (the engine widens progressively, so the
    order — highest prior first, then operator order — is what matters).
    """

    name = "builtin"

    def __init__(self, operators: Sequence[str] = OPERATORS) -> None:
        self.operators = tuple(operators)

    def propose(self, node: Any, k: int) -> list[Any]:
        from veriforge.search.interfaces import Edit

        state = node.state
        source = state.source if isinstance(state, Candidate) else str(state)
        ev = node.evaluation
        findings = (ev.details.get("findings") if ev is not None else None) or []
        edits = []
        for p in propose_edits(source, findings, self.operators):
            cand = Candidate(source=p.source, language=getattr(state, "language", "cuda"),
                             metadata={"operator": p.operator, "description": p.description},
                             parent=getattr(state, "hash", None))
            edits.append(Edit(cand, description=p.description, evidence=p.evidence, prior=p.prior,
                              metadata={"operator": p.operator}))
        return edits
