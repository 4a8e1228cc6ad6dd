"""The ``stage_shared`` operator: stage a stencil's input window in shared memory.

Why: a stencil kernel reads every input element once per neighbour that uses it (seven times for a
radius-3 1-D stencil, five for a 5-point Jacobi sweep). Each of those is a global-memory request;
L1 absorbs part of it on real GPUs, and the cost model charges all of it. The standard fix, and what
the bundled ``shared_halo`` implementations do, is to load each block's input window (its own
elements plus a halo) into shared memory once, cooperatively, and read the neighbours from there.

The transformation, for one ``__global__`` kernel and one read-only input pointer ``X``:

* 1-D: every ``X[idx]`` has ``idx = gx + d`` with ``gx = blockIdx.x * blockDim.x + threadIdx.x`` and
  ``d`` an offset bounded by compile-time constants ``[lo, hi]`` (constants, constant-trip ``for``
  loop variables, and immutable local aliases such as ``int j = i + k;`` are resolved by a small
  symbolic polynomial normaliser). The kernel's prologue gains a shared tile of ``blockDim.x + hi - lo``
  elements, ``tile[t] = X[blockStart + lo + t]`` loaded by a block-stride loop (0 outside the valid
  range), and a ``__syncthreads()``; each ``X[idx]`` becomes ``tile[threadIdx.x + d - lo]``.
* 2-D / 3-D: every ``X[idx]`` normalises to ``(gy + dy) * W + (gx + dx)`` (``+ (gz + dz) * W * H``)
  with constant-bounded offsets and one row stride ``W`` (plane stride ``W * H``), e.g. ``in[i - nx]``
  with ``i = r * nx + c``, ``img[rr * w + cc]`` with ``rr = r + dr``, or ``in[i - plane]`` with
  ``plane = nx * ny``; the tile is ``(blockDim.x + hx - lx) x (blockDim.y + hy - ly) [x ...]``, flat.
  A coordinate may use the launch's block-size constant instead of ``blockDim`` (``blockIdx.x * B``
  with ``dim3 block(B, B, B)``): they are equal at run time, and tuning changes both together.
* Small coefficient tables indexed only by constants and constant-trip loop variables (``w[k + 3]``,
  ``filt[(dr + 1) * 3 + (dc + 1)]``) are staged too, when no condition but a thread's position (the
  halo clipping ``j >= 0 && j < n``) decides *which* entries are read: then the whole constant index
  range is what the kernel reads (for an interior thread), so loading it up front reads nothing new.
  Each warp otherwise issues one global request per entry per thread.

Why it is correct (preconditions, all checked; anything else yields no edit):

* ``X`` is only ever read, as ``X[...]`` (never written, passed on, address-taken or named by a macro),
  so staging the values before anything else runs cannot change what is read.
* The valid range is the kernel's own domain: ``[0, N)`` (1-D) or ``[0, W) x [0, H) [x [0, D)]`` where
  the kernel's guards bound the thread coordinates (``if (i >= n) return;``, ``if (r >= ny || c >= nx)``)
  and ``W`` (``W * H``) is also the row (plane) stride. Every original access is *proven* inside that
  domain from the conditions that dominate it (enclosing ``if``s, early returns, ``&&``/``?:`` operands,
  including the ``r != 0`` of a ``r == 0 || ...`` boundary test), so every value the kernel reads is
  staged with its true value; positions outside the domain hold a harmless 0 the kept guards never use.
* Only immutable names are resolved: parameters never assigned, locals declared once and never
  assigned, ``for`` variables changed only by their own ``++``; names declared twice are opaque.
* The staging code sits at the very top of the kernel body and depends only on built-ins and
  unmodified scalar parameters, so every thread of the block reaches the barrier (early returns come
  after it). Kernels with existing ``__shared__`` memory, barriers or preprocessor lines are refused.
* Tile extents use the runtime ``blockDim``; the static array is sized from the launch's block-size
  constants when it uses them (``#define BLOCK 256``), else for the worst case of any legal block
  (at most 1024 threads, z at most 64), so the ``tune`` operator may still change the block size or
  shape later. Offsets must not depend on tunable constants (tuning would outgrow the halo).
* The kernel has exactly one launch site; its block has as many dimensions as the indexing.

Run-time-sized windows and tables (1-D kernels; tried only when the constant case yields no edit, so
every constant-case edit is unchanged). A ``for`` loop with a constant start, step ``++`` and a bound that
is linear in unmodified int parameters (``j < k``, ``k <= degree``) gives its variable the range
``[start, bound]``; with it:

* a window: every ``X[idx]`` is ``gx + d`` with ``d`` from a constant ``lo >= 0`` up to a run-time ``hi``
  (``x[i + j]``: ``0 .. k - 1``) and the only condition around each read is the guard ``gx < E``; the
  reads lie in ``[0, E + hi)`` and the last in-domain thread reads ``X[E - 1 + hi]`` (thread 0 reads
  ``X[lo]``), so the staged range ``[lo, E + hi)`` is memory the kernel reads. The tile
  holds ``blockDim.x + hi - lo`` elements loaded exactly as in the constant case.
* a table: every ``W[idx]`` is independent of the thread, from a constant first entry up to a run-time
  last one (``coef[0 .. degree]``). Every entry in between is read by any thread that runs the loop,
  because no condition around the reads mentions a loop variable (checked for windows too).

Both live in one ``extern __shared__ T smem[]`` (all staged arrays share the element type T, so the
regions ``smem + offset`` are aligned; arrays of another type stay in global memory). The kernel stages
only when ``hi >= lo`` for every region (the loop runs at all: otherwise the original read nothing) and
the total fits 48 KiB; that flag is uniform across the block, every staged read becomes
``(flag ? tile[...] : X[idx])`` and the barrier is unconditional, so for any size the kernel is the
original kernel or the staged one. The launch gets a third parameter computing the same flag and
``flag ? bytes : 0`` from the launch's own block expression and argument expressions (converted to
``int`` like the call does). Refused: a launch that already has a third parameter or a stream, a block
or a used argument that is not a plain arithmetic expression (calls, ``++``, assignments anywhere in the
arguments), and a literal block size (tuning it would not reach the copy in the byte count).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from veriforge.optiml.kernel_reader import AXES, Access, Analyzer, Mono, Node, Poly, gcoord, walk_nodes
from veriforge.optiml.operators.registry import EditProposal, motivating_findings, operator
from veriforge.optiml.operators.tune import find_tunables
from veriforge.optiml.source_scan import DIM3_DECL, Function, SourceScan, scan
from veriforge.optiml.source_tokens import Refuse, apply_edits, fresh_name

__all__ = ["stage_shared_edits"]

OPERATOR = "stage_shared"
MAX_THREADS = 1024
MAX_STATIC_SMEM = 48 * 1024
_MOTIVES = {"memory_bound", "uncoalesced_load", "low_dram_throughput"}
_ELEM_TYPES = {"float": ("4", "0.0f"), "double": ("8", "0.0"), "int": ("4", "0"), "unsigned": ("4", "0u"),
               "unsigned int": ("4", "0u")}


# ---------------------------------------------------------------------------------------------
# Proofs


def _loopvar_poly(p: Poly, loops: dict[str, tuple[int, int]]) -> bool:
    """Linear in loop variables, nothing else."""
    return all(len(m) <= 1 and (not m or m[0] in loops) for m in p.terms)


def _range(p: Poly, loops: dict[str, tuple[int, int]]) -> tuple[int, int]:
    lo = hi = p.constant()
    for m, c in p.terms.items():
        if m:
            a, b = loops[m[0]]
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
    return lo, hi


def _saturate(facts: list[Poly], diseqs: list[Poly]) -> list[Poly]:
    out = list(facts)
    for _ in range(2):
        extra = [f - Poly.const(1) for f in out for d in diseqs if f == d or f == -d]
        new = [f for f in extra if f not in out]
        if not new:
            break
        out += new
    return out


def _entails(facts: list[Poly], need: Poly, loops: dict[str, tuple[int, int]]) -> bool:
    for f in [Poly(), *facts]:
        d = need - f
        if _loopvar_poly(d, loops) and _range(d, loops)[0] >= 0:
            return True
    return False


def _upper_bounds(facts: list[Poly], coord: Poly, params: set[str]) -> list[Poly]:
    """Extents E with ``E - 1 - coord >= 0`` among the facts (E over parameters only)."""
    out = []
    for f in facts:
        e = f + coord + Poly.const(1)
        if e.symbols() <= params and not e.is_const() and e not in out:
            out.append(e)
    return out



@dataclass
class Plan:
    """How one input array is staged: per axis (x, y, z) its offset range and the domain extent."""

    name: str
    elem: str  # element type
    dims: int  # 1, 2 or 3
    lo: list[int]  # per axis
    hi: list[int]
    extents: list[Poly]  # per axis: the domain is [0, extent)
    replace: list[tuple[Node, list[Poly]]]  # each read and its offsets per axis


def _coefficient(p: Poly, sym: str) -> Poly | None:
    split = p.split_by(sym)
    return None if split is None else split[0]


def _decompose(r: Poly, strides: list[Poly]) -> list[Poly] | None:
    """Offsets (dx, dy, dz) with ``r = dx + dy * strides[1] + dz * strides[2]``; strides are single
    monomials over parameters, tried from the largest, so ``-nx*ny`` is dz = -1 and ``-nx`` dy = -1."""
    parts = [dict[Mono, int]() for _ in strides]
    order = sorted(range(1, len(strides)), key=lambda a: -len(next(iter(strides[a].terms))))
    for m, c in r.terms.items():
        for a in order:
            stride = next(iter(strides[a].terms))
            rest = list(m)
            if all(rest.count(s) >= stride.count(s) for s in stride):
                for s in stride:
                    rest.remove(s)
                key = tuple(rest)
                parts[a][key] = parts[a].get(key, 0) + c
                break
        else:
            parts[0][m] = parts[0].get(m, 0) + c
    out = [Poly(d) for d in parts]
    rebuilt = out[0]
    for a in range(1, len(strides)):
        rebuilt = rebuilt + out[a] * strides[a]
    return out if rebuilt == r else None


def _stageable(an: Analyzer, name: str) -> tuple[list[Access], str] | None:
    """The reads of pointer ``name`` and its element type, when it is only ever read as ``name[...]``
    and its elements are a type the staging code can hold."""
    accesses = an.accesses.get(name, [])
    if not accesses or name in an.bad:
        return None
    elem = " ".join(w for w in an.pointers[name].replace("*", " ").split() if w not in ("const", "__restrict__"))
    return (accesses, elem) if elem in _ELEM_TYPES else None


def _plan(an: Analyzer, name: str, dims: int) -> Plan | None:
    """Stage ``name`` when every read is ``X[sum_a (g_a + d_a) * stride_a]`` with constant-bounded
    ``d_a`` and each read provably inside the kernel's domain (see the module docstring)."""
    reads = _stageable(an, name)
    if reads is None:
        return None
    accesses, elem = reads
    axes = AXES[:dims]
    coords = [gcoord(a) for a in axes]
    loops = an.loops
    params = an.int_params
    one = Poly.const(1)
    strides: list[Poly] | None = None
    rows: list[tuple[Access, list[Poly]]] = []
    for acc in accesses:
        if any(f"threadIdx.{a}" in acc.poly.symbols() for a in AXES[dims:]):
            return None
        st = [one]
        for a in axes[1:]:
            c = _coefficient(acc.poly, f"threadIdx.{a}")
            if c is None or len(c.terms) != 1 or next(iter(c.terms.values())) != 1 or not c.symbols() <= params:
                return None
            st.append(c)
        if strides is None:
            strides = st
        elif st != strides:
            return None
        rest = acc.poly
        for g, stride in zip(coords, st, strict=True):
            rest = rest - g * stride
        offsets = _decompose(rest, st)
        if offsets is None or not all(_loopvar_poly(d, loops) for d in offsets):
            return None
        rows.append((acc, offsets))
    assert strides is not None
    lo = [min(_range(d[a], loops)[0] for _, d in rows) for a in range(dims)]
    hi = [max(_range(d[a], loops)[1] for _, d in rows) for a in range(dims)]
    if lo == hi:
        return None  # every thread reads only its own element: no reuse, nothing to gain
    if max(h - lo_ for lo_, h in zip(lo, hi, strict=True)) > 64:
        return None
    sat = [_saturate(acc.facts, acc.diseqs) for acc, _ in rows]
    # x: the row stride is the x extent (2-D, 3-D) or a bound the guards put on gx (1-D); y, z: guard bounds.
    choices: list[list[Poly]] = [[strides[1]] if dims > 1 else _upper_bounds(sat[0], coords[0], params)]
    choices += [_upper_bounds(sat[0], coords[a], params) for a in range(1, dims)]
    for extents in _product(choices):
        if dims == 3 and strides[2] != strides[1] * extents[1]:
            continue  # the plane stride must be the x extent times the y extent
        ok = all(
            _entails(facts, coords[a] + d[a], loops) and _entails(facts, extents[a] - one - coords[a] - d[a], loops)
            for (_, d), facts in zip(rows, sat, strict=True) for a in range(dims))
        if ok:
            return Plan(name, elem, dims, lo, hi, list(extents), [(acc.node, d) for acc, d in rows])
    return None


def _product(choices: list[list[Poly]]) -> Iterator[list[Poly]]:
    if not choices:
        yield []
        return
    for first in choices[0]:
        for rest in _product(choices[1:]):
            yield [first, *rest]


@dataclass
class CoefPlan:
    """A small read-only table indexed only by constants and constant-trip loop variables."""

    name: str
    elem: str
    first: int
    last: int
    replace: list[Node]


def _atoms(node: Node, positive: bool) -> list[tuple[Node, bool]]:
    """The conjuncts of a condition in its polarity (an unsplittable disjunction stays whole)."""
    if node.kind == "unary" and node.op == "!":
        return _atoms(node.kids[0], not positive)
    if node.kind == "bin" and node.op in ("&&", "||") and (node.op == "&&") == positive:
        return _atoms(node.kids[0], positive) + _atoms(node.kids[1], positive)
    return [(node, positive)]


_THREAD_SYMS = {f"{b}.{a}" for b in ("blockIdx", "threadIdx") for a in "xyz"}


def _coef_plan(an: Analyzer, name: str) -> CoefPlan | None:
    """Stage a coefficient table ``w[k + 3]`` too, when every read's index is a constant-range
    function of loop variables and no condition limits *which entries* are read other than a
    thread's position (the halo clipping ``j >= 0 && j < n``): the whole constant index range is
    then read by the kernel (by an interior thread), so loading it up front reads nothing new."""
    reads = _stageable(an, name)
    if reads is None:
        return None
    accesses, elem = reads
    loops = an.loops
    if not all(_loopvar_poly(a.poly, loops) for a in accesses):
        return None
    first = min(_range(a.poly, loops)[0] for a in accesses)
    last = max(_range(a.poly, loops)[1] for a in accesses)
    if first < 0 or last - first + 1 > 256:
        return None
    for a in accesses:
        for cond, positive, env in a.conds:
            for atom, pol in _atoms(cond, positive):
                facts, diseqs = an.cond_facts(atom, pol, env)
                exact = atom.kind == "bin" and atom.op in ("<", "<=", ">", ">=", "==", "!=") and (facts or diseqs)
                if not exact:
                    ids = {n.value for n in walk_nodes(atom) if n.kind == "id"}
                    if ids & an.loop_scoped:
                        return None  # an opaque condition that may pick entries
                    continue
                syms = set().union(*(p.symbols() for p in facts + diseqs))
                if not syms & set(loops) or syms & _THREAD_SYMS:
                    continue  # restricts threads, or clips at the domain boundary
                if diseqs or not all(_loopvar_poly(p, loops) and _range(p, loops)[0] >= 0 for p in facts):
                    return None  # picks entries (k < m, k != 0): not every entry is read
    return CoefPlan(name, elem, first, last, [a.node for a in accesses])


# ---------------------------------------------------------------------------------------------
# Code generation


def _block_shape(sc: SourceScan, fn: Function) -> tuple[int, list[str | None]] | None:
    """(dimensions of the block, per-axis file-level constant naming its size) of the kernel's one launch."""
    launches = sc.launches_of(fn.name)
    if len(launches) != 1:
        return None
    launch = launches[0]
    host = sc.host_function(launch)
    if host is None or host.kernel or host.device:
        return None
    expr = sc.expr(launch.block)
    consts = sc.constants()
    args: list[str] | None = None
    m = re.fullmatch(r"dim3\s*\((.*)\)", expr, re.S)
    if m:
        args = m.group(1).split(",")
    elif re.fullmatch(r"[A-Za-z_]\w*", expr):
        body = sc.text[host.body_start:launch.start]
        decls = [d for d in DIM3_DECL.finditer(body) if d.group(1) == expr]
        if decls:
            d = decls[-1]
            args = (d.group(2) or d.group(3) or d.group(4) or "").split(",")
            if re.search(rf"\b{expr}\s*\.\s*[xyz]\s*=", body):
                return None
    if args is None:
        if "dim3" in expr or "{" in expr:
            return None
        return 1, [expr if expr in consts else None]
    args = [a.strip() for a in args]
    if not args or len(args) > 3 or not all(args):
        return None
    dims = len(args)
    while dims > 1 and args[dims - 1] == "1":
        dims -= 1
    return dims, [a if a in consts else None for a in args[:dims]]


def _worst_tile(halo: list[int]) -> int:
    """Largest prod(b_a + halo_a) over every legal block (prod(b_a) <= 1024, b_z <= 64)."""
    best = 0
    for bx in range(1, MAX_THREADS + 1):
        if len(halo) == 1:
            return MAX_THREADS + halo[0]
        for by in range(1, MAX_THREADS // bx + 1):
            if len(halo) == 2:
                if by == MAX_THREADS // bx:
                    best = max(best, (bx + halo[0]) * (by + halo[1]))
                continue
            bz = min(64, MAX_THREADS // (bx * by))
            best = max(best, (bx + halo[0]) * (by + halo[1]) * (bz + halo[2]))
    return best


def _fresh(text: str, base: str) -> str:
    """``base``, ``base2``, ...: the first that starts no identifier of ``text`` (``{name}_t``, ... stay free)."""
    return fresh_name(text, base, numbered=True, prefix=True)


def _sign(v: int) -> str:
    return "" if v == 0 else f" + {v}" if v > 0 else f" - {-v}"


def _offset_text(base: str, d: Poly) -> str:
    if d == Poly():
        return base
    if d.is_const():
        return base + _sign(d.constant())
    return f"{base} + ({d.render()})"


def _flat_thread(dims: int) -> tuple[str, str]:
    if dims == 1:
        return "threadIdx.x", "blockDim.x"
    if dims == 2:
        return "threadIdx.y * blockDim.x + threadIdx.x", "blockDim.x * blockDim.y"
    return ("(threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x",
            "blockDim.x * blockDim.y * blockDim.z")


def _render(plan: Plan, tile: str, consts: list[str | None], ind: str) -> tuple[str, int, list[str]]:
    """The staging loop of ``plan`` (code, bytes bound, the per-axis tile extent names)."""
    dims = plan.dims
    halo = [h - lo for lo, h in zip(plan.lo, plan.hi, strict=True)]
    zero = _ELEM_TYPES[plan.elem][1]
    nbytes = int(_ELEM_TYPES[plan.elem][0])
    if all(consts):
        size = " * ".join(f"({c} + {e})" for c, e in zip(consts, halo, strict=True)) if dims > 1 \
            else f"{consts[0]} + {halo[0]}"
    elif dims == 1:
        size = f"{MAX_THREADS} + {halo[0]}"
    else:
        size = str(_worst_tile(halo))
    size_bound = _worst_tile(halo) * nbytes
    tid, nthreads = _flat_thread(dims)
    t = f"{tile}_t"
    ext = [f"{tile}_{a}" for a in "wh"[:dims - 1]]  # tile extents along x (and y) for 2-D / 3-D
    what = ", ".join(f"{a} {lo:+d}..{h:+d}" for a, lo, h in zip(AXES, plan.lo, plan.hi, strict=False))
    code = f"{ind}// stage_shared: {plan.name} around the block ({what}), loaded once per block\n"
    code += f"{ind}__shared__ {plan.elem} {tile}[{size}];\n"
    for a, name in zip(AXES, ext, strict=False):
        code += f"{ind}const int {name} = (int)blockDim.{a} + {halo[AXES.index(a)]};\n"
    total = " * ".join([*ext, f"((int)blockDim.{AXES[dims - 1]} + {halo[dims - 1]})"])
    if dims == 1:
        total = f"(int)blockDim.x + {halo[0]}"
    code += f"{ind}for (int {t} = {tid}; {t} < {total}; {t} += {nthreads}) {{\n"
    pos = {0: f"{t} % {ext[0]}" if dims > 1 else t}
    if dims == 2:
        pos[1] = f"{t} / {ext[0]}"
    if dims == 3:
        pos[1] = f"{t} / {ext[0]} % {ext[1]}"
        pos[2] = f"{t} / ({ext[0]} * {ext[1]})"
    g = [f"{tile}_g{a}" if dims > 1 else f"{tile}_g" for a in AXES[:dims]]
    for a in range(dims):
        code += f"{ind}    int {g[a]} = (int)(blockIdx.{AXES[a]} * blockDim.{AXES[a]}) + {pos[a]}{_sign(plan.lo[a])};\n"
    inside = " && ".join(f"{g[a]} >= 0 && {g[a]} < {plan.extents[a].render()}" for a in range(dims))
    index = g[0]
    if dims >= 2:
        index = f"{g[1]} * {plan.extents[0].render()} + {g[0]}"
    if dims == 3:
        index = f"({g[2]} * {plan.extents[1].render()} + {g[1]}) * {plan.extents[0].render()} + {g[0]}"
    code += f"{ind}    {tile}[{t}] = ({inside}) ? {plan.name}[{index}] : {zero};\n{ind}}}\n"
    return code, size_bound, ext


def _tile_index(plan: Plan, tile: str, ext: list[str], offsets: list[Poly]) -> str:
    parts = [_offset_text(f"threadIdx.{a}", offsets[i] - Poly.const(plan.lo[i]))
             for i, a in enumerate(AXES[:plan.dims])]
    index = parts[-1]
    for i in range(plan.dims - 2, -1, -1):
        index = f"({index})" if index != f"threadIdx.{AXES[i + 1]}" else index
        index = f"{index} * {ext[i]} + {parts[i]}"
    return f"{tile}[{index}]"


def _kernel_edit(sc: SourceScan, fn: Function, findings: Sequence[Any]) -> EditProposal | None:
    edit = _static_edit(sc, fn, findings)
    return edit if edit is not None else _dynamic_edit(sc, fn, findings)


def _static_edit(sc: SourceScan, fn: Function, findings: Sequence[Any]) -> EditProposal | None:
    body_text = sc.text[fn.body_start:fn.body_end]
    if re.search(r"\b(__shared__|__syncthreads|__syncwarp|__syncthreads_\w+|cooperative_groups|asm)\b", body_text):
        return None
    if re.search(r"^[ \t]*#[ \t]*(?!pragma\b)\w", body_text, re.M):
        return None  # conditional compilation or macros inside the kernel: not read as written
    shape = _block_shape(sc, fn)
    if shape is None:
        return None
    dims, consts = shape
    block_consts: dict[str, str] = {}
    for a, c in zip(AXES, consts, strict=False):
        if c is not None:
            block_consts[c] = block_consts.get(c, "") + a
    try:
        an = Analyzer(sc, fn, block_consts)
        an.run()
    except (Refuse, RecursionError):
        return None
    # Offsets and loop ranges must not follow a tunable constant (tuning it would outgrow the halo).
    tunable = {t.name for t in find_tunables(sc.source)}
    if an.used_consts & tunable:
        return None
    macros = " ".join(m.group(0) for m in re.finditer(r"^[ \t]*#[ \t]*define[^\n]*", sc.text, re.M))
    candidates = [name for name in an.pointers if not re.search(rf"\b{re.escape(name)}\b", macros)]
    plans = [p for p in (_plan(an, name, dims) for name in candidates) if p is not None]
    if not plans:
        return None
    source = sc.source
    first_line = re.search(r"\n([ \t]*)\S", source[fn.body_start:fn.body_end])
    indent = first_line.group(1) if first_line and first_line.group(1) else "    "
    prologue = ""
    smem = 0
    staged: list[Plan] = []
    replacements: list[tuple[int, int, str]] = []
    for plan in plans:
        tile = _fresh(source, f"{plan.name}_tile")
        code, size, ext = _render(plan, tile, consts, indent)
        if smem + size > MAX_STATIC_SMEM:
            continue
        smem += size
        prologue += code
        staged.append(plan)
        replacements += [(node.start, node.end, _tile_index(plan, tile, ext, d)) for node, d in plan.replace]
    if not staged:
        return None
    staged_names = {p.name for p in staged}
    coefs: list[CoefPlan] = []
    tid, nthreads = _flat_thread(dims)
    for name in candidates:
        coef = None if name in staged_names else _coef_plan(an, name)
        if coef is None:
            continue
        count = coef.last - coef.first + 1
        size = count * int(_ELEM_TYPES[coef.elem][0])
        if smem + size > MAX_STATIC_SMEM:
            continue
        smem += size
        tile, t = _fresh(source, f"{name}_s"), _fresh(source, f"{name}_s_t")
        prologue += (
            f"{indent}// stage_shared: the {count} coefficients {name}[{coef.first}..{coef.last}] every thread reads\n"
            f"{indent}__shared__ {coef.elem} {tile}[{count}];\n"
            f"{indent}for (int {t} = {tid}; {t} < {count}; {t} += {nthreads})"
            f" {tile}[{t}] = {name}[{t}{_sign(coef.first)}];\n"
        )
        for node in coef.replace:
            idx = node.kids[1]
            text = source[idx.start:idx.end]
            text = text if coef.first == 0 else f"({text}){_sign(-coef.first)}"
            replacements.append((node.start, node.end, f"{tile}[{text}]"))
        coefs.append(coef)
    prologue += f"{indent}__syncthreads();\n"
    out = apply_edits(source, replacements)
    insert = fn.body_start
    nl = out.find("\n", insert)
    if nl >= 0 and not out[insert:nl].strip():
        out = out[:nl + 1] + prologue + out[nl + 1:]
    else:
        out = out[:insert] + "\n" + prologue + out[insert:]
    halos = "; ".join(f"{p.name}: " + ", ".join(f"{a} {lo}..{h}" for a, lo, h in zip(AXES, p.lo, p.hi, strict=False))
                      for p in staged)
    also = f", coefficients {', '.join(c.name for c in coefs)}" if coefs else ""
    names = [p.name for p in staged]
    motive = motivating_findings(findings, _MOTIVES)
    return EditProposal(
        OPERATOR, out, f"stage {', '.join(names)} of {fn.name} in shared memory ({halos}{also})",
        {"kernel": fn.name, "arrays": names, "coefficients": [c.name for c in coefs], "dims": dims,
         "reads_replaced": sum(len(p.replace) for p in staged), "shared_bytes_bound": smem, "findings": motive},
        2.0 + sum(float(f["severity"] or 0) for f in motive))


# ---------------------------------------------------------------------------------------------
# Run-time-sized windows and tables (dynamic shared memory)

_SAFE_EXPR = re.compile(r"[\w\s.+\-*/%()]*")


@dataclass
class DynPlan:
    """A 1-D window ``X[gx + lo .. gx + hi]`` or a table ``X[lo .. hi]`` whose ``hi`` is a run-time
    expression over the kernel's int parameters (``k - 1``, ``degree``)."""

    name: str
    elem: str
    table: bool
    lo: int
    hi: Poly
    extent: Poly  # window: the valid range [0, extent)
    replace: list[Node]
    offsets: list[Poly]  # window: each read's offset from gx


def _dyn_span(p: Poly, loops: dict[str, tuple[int, int]], dyn: dict[str, tuple[int, Poly]]) -> tuple[int, Poly] | None:
    """(lowest, highest) value of ``p`` linear in loop variables: constant-trip ones with any coefficient,
    run-time-bounded ones with a positive one (so the lowest value is a constant)."""
    lo = hi = p.constant()
    top = Poly()
    for m, c in p.terms.items():
        if not m:
            continue
        if len(m) != 1:
            return None
        if m[0] in loops:
            a, b = loops[m[0]]
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        elif m[0] in dyn and c > 0:
            first, last = dyn[m[0]]
            lo += c * first
            top = top + Poly.const(c) * last
        else:
            return None
    return lo, top + Poly.const(hi)


def _poly_max(polys: list[Poly]) -> Poly | None:
    """The largest of polynomials that differ by constants; None when two differ by more."""
    best = polys[0]
    for p in polys[1:]:
        d = p - best
        if not d.is_const():
            return None
        if d.constant() > 0:
            best = p
    return best


def _loop_free(an: Analyzer, acc: Access) -> bool:
    """No condition around the read mentions a loop variable or a name that changes across iterations:
    every read executes for every loop iteration of a thread that reaches it, so every entry between
    the lowest and the highest index is read (by the thread that reads the highest)."""
    varying = set(an.loops) | set(an.dyn_loops) | an.loop_scoped
    for cond, _positive, _env in acc.conds:
        if {n.value for n in walk_nodes(cond) if n.kind == "id"} & varying:
            return False
    return True


def _uses_dyn(p: Poly, an: Analyzer) -> bool:
    return bool(p.symbols() & set(an.dyn_loops))


def _dyn_window(an: Analyzer, name: str) -> DynPlan | None:
    """``X[gx + d]`` for every read, ``d`` from a constant ``lo >= 0`` up to a run-time ``hi``, ``gx`` bounded by
    the kernel's guard ``gx < E``: the reads stay inside ``[0, E + hi)``, which the last in-domain thread reads."""
    reads = _stageable(an, name)
    if reads is None:
        return None
    accesses, elem = reads
    gx = gcoord("x")
    spans: list[tuple[int, Poly]] = []
    offsets: list[Poly] = []
    for acc in accesses:
        d = acc.poly - gx
        span = _dyn_span(d, an.loops, an.dyn_loops)
        if span is None or not _loop_free(an, acc):
            return None
        spans.append(span)
        offsets.append(d)
    if not any(_uses_dyn(d, an) for d in offsets):
        return None
    lo = min(s[0] for s in spans)
    hi = _poly_max([s[1] for s in spans])
    if lo < 0 or hi is None or (hi - Poly.const(lo)).is_const() or not hi.symbols() <= an.int_params:
        return None
    sat = [_saturate(acc.facts, acc.diseqs) for acc in accesses]
    one = Poly.const(1)
    for extent in _upper_bounds(sat[0], gx, an.int_params):
        if all(_entails(facts, extent - one - gx, an.loops) for facts in sat) and all(
                _only_guard(an, acc, extent - one - gx) for acc in accesses):
            return DynPlan(name, elem, False, lo, hi, extent + hi, [a.node for a in accesses], offsets)
    return None


def _only_guard(an: Analyzer, acc: Access, guard: Poly) -> bool:
    """The only condition around the read is the domain guard ``gx < E``: then thread ``E - 1`` reads the
    highest offset and thread 0 the lowest, so the whole staged range is memory the kernel reads."""
    for cond, positive, env in acc.conds:
        for atom, pol in _atoms(cond, positive):
            facts, diseqs = an.cond_facts(atom, pol, env)
            if diseqs or facts != [guard]:
                return False
    return True


def _dyn_table(an: Analyzer, name: str) -> DynPlan | None:
    """``W[j + c]`` for every read, independent of the thread, from a constant first entry up to a run-time last."""
    reads = _stageable(an, name)
    if reads is None:
        return None
    accesses, elem = reads
    spans = []
    for acc in accesses:
        span = _dyn_span(acc.poly, an.loops, an.dyn_loops)
        if span is None or not _loop_free(an, acc):
            return None
        spans.append(span)
    if not any(_uses_dyn(a.poly, an) for a in accesses):
        return None
    first = min(s[0] for s in spans)
    last = _poly_max([s[1] for s in spans])
    if first < 0 or last is None or (last - Poly.const(first)).is_const() or not last.symbols() <= an.int_params:
        return None
    return DynPlan(name, elem, True, first, last, Poly(), [a.node for a in accesses], [a.poly for a in accesses])


def _safe(expr: str) -> bool:
    """Re-evaluating ``expr`` at the launch has no side effect: names, numbers, arithmetic, no calls."""
    return bool(_SAFE_EXPR.fullmatch(expr)) and "++" not in expr and "--" not in expr and not re.search(
        r"[A-Za-z_]\w*\s*\(", expr) and bool(expr.strip())


def _subst(p: Poly, names: dict[str, str]) -> str:
    return re.sub(r"[A-Za-z_][\w.]*", lambda m: names.get(m.group(0), m.group(0)), p.render())


def _launch_bytes(sc: SourceScan, fn: Function, an: Analyzer, plans: list[DynPlan]) -> tuple[int, str] | None:
    """Where and what to add as the launch's third parameter: the bytes the kernel's staging needs, computed
    from the launch's own block and argument expressions exactly as the kernel computes them."""
    [launch] = sc.launches_of(fn.name)
    gt = sc.text.find(">>>", launch.block[1])
    if gt < 0 or sc.text[launch.block[1]:gt].strip():
        return None  # a dynamic size or a stream is already there
    block = sc.expr(launch.block)
    if not _safe(block) or re.fullmatch(r"\d\w*", block):
        return None  # a literal block size would not follow the tune operator's change of it
    host = sc.host_function(launch)
    if host is not None and re.search(rf"\bdim3\s+{re.escape(block)}\b", sc.text[host.body_start:launch.start]):
        block = f"{block}.x"
    elif "dim3" in block:
        return None
    call = sc.launch_call(launch)
    if call is None or len(call[0]) != len(an.params):
        return None
    if any(re.search(r"\+\+|--|(?<![=!<>])=(?!=)", sc.expr(span)) for span in call[0]):
        return None  # an argument with a side effect: evaluating the size next to it could see either value
    names: dict[str, str] = {}
    for (_, pname), span in zip(an.params, call[0], strict=True):
        arg = sc.expr(span)
        if pname in an.int_params and _safe(arg):
            names[pname] = f"(int)({arg})"
    used = set().union(*(p.hi.symbols() for p in plans))
    if not used <= set(names):
        return None
    counts, nonempty = _counts(plans, f"(int)({block})", names)
    esize = int(_ELEM_TYPES[plans[0].elem][0])
    total = " + ".join(counts)
    on = " && ".join([*nonempty, f"{total} <= {MAX_STATIC_SMEM // esize}"])
    return gt, f", ({on} ? (size_t)({total}) * sizeof({plans[0].elem}) : (size_t)0)"


def _counts(plans: list[DynPlan], block: str, names: dict[str, str]) -> tuple[list[str], list[str]]:
    """Per plan its element count and the condition that its loop runs at all (``hi >= lo``)."""
    counts, nonempty = [], []
    for p in plans:
        halo = p.hi - Poly.const(p.lo)
        counts.append(f"({_subst(halo + Poly.const(1), names)})" if p.table else f"({block} + ({_subst(halo, names)}))")
        cond = f"({_subst(halo, names)}) >= 0"
        if cond not in nonempty:
            nonempty.append(cond)
    return counts, nonempty


def _dynamic_edit(sc: SourceScan, fn: Function, findings: Sequence[Any]) -> EditProposal | None:
    """Stage run-time-sized 1-D windows and tables in dynamic shared memory (see the module docstring)."""
    body_text = sc.text[fn.body_start:fn.body_end]
    if re.search(r"\b(__shared__|__syncthreads|__syncwarp|__syncthreads_\w+|cooperative_groups|asm)\b", body_text):
        return None
    if re.search(r"^[ \t]*#[ \t]*(?!pragma\b)\w", body_text, re.M):
        return None
    shape = _block_shape(sc, fn)
    if shape is None or shape[0] != 1:
        return None
    block_consts = {shape[1][0]: "x"} if shape[1][0] is not None else {}
    try:
        an = Analyzer(sc, fn, block_consts, dynamic=True)
        an.run()
    except (Refuse, RecursionError):
        return None
    if not an.dyn_loops or an.used_consts & {t.name for t in find_tunables(sc.source)}:
        return None
    macros = " ".join(m.group(0) for m in re.finditer(r"^[ \t]*#[ \t]*define[^\n]*", sc.text, re.M))
    candidates = [name for name in an.pointers if not re.search(rf"\b{re.escape(name)}\b", macros)]
    found = [p for p in (_dyn_window(an, n) or _dyn_table(an, n) for n in candidates) if p is not None]
    if not found:
        return None
    plans = [p for p in found if p.elem == found[0].elem]  # one extern array, one element type: no alignment gaps
    host = _launch_bytes(sc, fn, an, plans)
    if host is None:
        return None
    source = sc.source
    first_line = re.search(r"\n([ \t]*)\S", source[fn.body_start:fn.body_end])
    ind = first_line.group(1) if first_line and first_line.group(1) else "    "
    elem, zero = plans[0].elem, _ELEM_TYPES[plans[0].elem][1]
    smem = _fresh(source, "stage_smem")
    on = f"{smem}_on"
    tiles = [_fresh(source, f"{p.name}_s" if p.table else f"{p.name}_tile") for p in plans]
    counts, nonempty = _counts(plans, "(int)blockDim.x", {})
    what = "; ".join(f"{p.name}[{p.lo}..{p.hi.render()}]" if p.table
                     else f"{p.name} window {p.lo:+d}..+({p.hi.render()})" for p in plans)
    code = f"{ind}// stage_shared: {what} in dynamic shared memory (sized at the launch; global reads if over 48 KiB)\n"
    code += f"{ind}extern __shared__ {elem} {smem}[];\n"
    for tile, count in zip(tiles, counts, strict=True):
        code += f"{ind}const int {tile}_n = {count};\n"
    total = " + ".join(f"{t}_n" for t in tiles)
    fits = f"{total} <= {MAX_STATIC_SMEM // int(_ELEM_TYPES[elem][0])}"
    code += f"{ind}const bool {on} = {' && '.join([*nonempty, fits])};\n"
    offset = "0"
    for tile in tiles:
        code += f"{ind}{elem}* {tile} = {smem} + {offset};\n"
        offset = f"{tile}_n" if offset == "0" else f"{offset} + {tile}_n"
    code += f"{ind}if ({on}) {{\n"
    replacements: list[tuple[int, int, str]] = []
    for p, tile in zip(plans, tiles, strict=True):
        t = f"{tile}_t"
        code += f"{ind}    for (int {t} = threadIdx.x; {t} < {tile}_n; {t} += blockDim.x) {{\n"
        if p.table:
            code += f"{ind}        {tile}[{t}] = {p.name}[{t}{_sign(p.lo)}];\n"
            for node in p.replace:
                idx = node.kids[1]
                text = source[idx.start:idx.end]
                text = text if p.lo == 0 else f"({text}){_sign(-p.lo)}"
                replacements.append((node.start, node.end,
                                     f"({on} ? {tile}[{text}] : {source[node.start:node.end]})"))
        else:
            g = f"{tile}_g"
            code += f"{ind}        int {g} = (int)(blockIdx.x * blockDim.x) + {t}{_sign(p.lo)};\n"
            code += f"{ind}        {tile}[{t}] = ({g} >= 0 && {g} < {p.extent.render()}) ? {p.name}[{g}] : {zero};\n"
            for node, d in zip(p.replace, p.offsets, strict=True):
                idx = _offset_text("threadIdx.x", d - Poly.const(p.lo))
                replacements.append((node.start, node.end,
                                     f"({on} ? {tile}[{idx}] : {source[node.start:node.end]})"))
        code += f"{ind}    }}\n"
    code += f"{ind}}}\n{ind}__syncthreads();\n"
    out = apply_edits(source, [*replacements, (host[0], host[0], host[1])])
    insert = fn.body_start
    nl = out.find("\n", insert)
    if nl >= 0 and not out[insert:nl].strip():
        out = out[:nl + 1] + code + out[nl + 1:]
    else:
        out = out[:insert] + "\n" + code + out[insert:]
    windows = [p.name for p in plans if not p.table]
    tables = [p.name for p in plans if p.table]
    motive = motivating_findings(findings, _MOTIVES)
    return EditProposal(
        OPERATOR, out, f"stage {', '.join(windows + tables)} of {fn.name} in dynamic shared memory ({what})",
        {"kernel": fn.name, "arrays": windows, "coefficients": tables, "dims": 1, "dynamic": True,
         "reads_replaced": sum(len(p.replace) for p in plans), "shared_bytes_bound": MAX_STATIC_SMEM,
         "findings": motive},
        2.0 + sum(float(f["severity"] or 0) for f in motive))


@operator("stage_shared", order=90, motives=_MOTIVES, restructuring=True)
def stage_shared_edits(source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
    """Stage each stencil kernel's read-only input window in shared memory (see the module docstring)."""
    sc = scan(source)
    return [edit for fn in sc.kernels() if (edit := _kernel_edit(sc, fn, findings)) is not None]
