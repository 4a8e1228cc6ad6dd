"""``analyze()``: parse, walk the kernel for one launch, aggregate into an :class:`AnalysisReport`."""

from __future__ import annotations

import copy
import hashlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from veriforge.cuda.analysis import reuse as _reuse
from veriforge.cuda.analysis import walk as _walk
from veriforge.cuda.analysis.launch import (
    REFINE_ROUNDS,
    build_lanes,
    busy_blocks,
    dim3,
    pin_boundaries,
    probe_activity,
    refine,
)
from veriforge.cuda.analysis.parse import find_kernel, parse_source
from veriforge.cuda.analysis.report import AnalysisReport, GlobalAccess
from veriforge.cuda.analysis.resources import instantiation, launch_occupancy, ptxas_resources, template_values

#: analyses kept per process: the harness, OptiML and calibration re-analyse the same launches of
#: the same source many times (every config, every re-check, every fit)
ANALYSIS_CACHE_SIZE = 512
_CACHE: OrderedDict[tuple[Any, ...], AnalysisReport] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def analyze(
    source: str,
    kernel: str,
    grid: int | tuple[int, ...],
    block: int | tuple[int, ...],
    params: Mapping[str, Any] | None = None,
    arch: str = "sm_90",
    defines: Mapping[str, Any] | None = None,
    dynamic_smem: int = 0,
    use_nvcc: bool = True,
    template_args: Mapping[str, Any] | None = None,
    data: Mapping[str, tuple[Any, int]] | None = None,
    *,
    filename: str = "kernel.cu",
    include_dirs: Sequence[str | os.PathLike[str]] = (),
) -> AnalysisReport:
    """Statically analyse ``kernel`` in ``source`` for one launch ``<<<grid, block, dynamic_smem>>>``
    (see :func:`analyze_uncached`); results are memoised per process by their full inputs (a copy is
    returned, so callers may change it)."""
    try:
        key = (hashlib.sha256(source.encode()).hexdigest(), kernel, _freeze(grid), _freeze(block),
               _freeze(params or {}), arch, _freeze(defines or {}), int(dynamic_smem), bool(use_nvcc),
               _freeze(template_args or {}), _data_key(data), filename, tuple(map(str, include_dirs)))
        hash(key)
    except TypeError:
        key = None
    if key is not None:
        with _CACHE_LOCK:
            hit = _CACHE.get(key)
            if hit is not None:
                _CACHE.move_to_end(key)
        if hit is not None:
            return copy.deepcopy(hit)
    rep = analyze_uncached(source, kernel, grid, block, params, arch, defines, dynamic_smem, use_nvcc, template_args,
                           data, filename=filename, include_dirs=include_dirs)
    if key is not None:
        with _CACHE_LOCK:
            _CACHE[key] = copy.deepcopy(rep)
            while len(_CACHE) > ANALYSIS_CACHE_SIZE:
                _CACHE.popitem(last=False)
    return rep


def _branch_result(acc: Any, exact: bool) -> Any:
    """A branch's report. One no sampled thread reached does not diverge when every thread was
    walked, or when nothing that kept them out depends on blockIdx (``if (nIsPow2) … else …`` with
    the template argument true: the else side is dead code, not an unknown)."""
    res = acc.result()
    if acc.warps == 0 and acc.unknown is None and (exact or not acc.unreached_block_dependent):
        res = replace(res, divergent=False, unknown=None, scope="none", divergent_fraction=0.0)
    return res


def _data_key(data: Mapping[str, tuple[Any, int]] | None) -> Any:
    """A memo key for input contents: shape, dtype and a digest of the bytes (two configurations with
    the same sizes but other seeds must not share an analysis)."""
    if not data:
        return None
    out = []
    for name, (arr, off) in sorted(data.items()):
        a = np.ascontiguousarray(arr)
        digest = hashlib.blake2b(a.view(np.uint8), digest_size=16).hexdigest()
        out.append((name, int(off), a.shape, str(a.dtype), digest))
    return tuple(out)


def analyze_uncached(
    source: str,
    kernel: str,
    grid: int | tuple[int, ...],
    block: int | tuple[int, ...],
    params: Mapping[str, Any] | None = None,
    arch: str = "sm_90",
    defines: Mapping[str, Any] | None = None,
    dynamic_smem: int = 0,
    use_nvcc: bool = True,
    template_args: Mapping[str, Any] | None = None,
    data: Mapping[str, tuple[Any, int]] | None = None,
    *,
    filename: str = "kernel.cu",
    include_dirs: Sequence[str | os.PathLike[str]] = (),
) -> AnalysisReport:
    """Statically analyse ``kernel`` in ``source`` for one launch ``<<<grid, block, dynamic_smem>>>``.

    ``params`` gives values to the kernel's scalar parameters (pointer parameters are
    allocations; an int for a pointer parameter is its byte address, used only by
    pointer-to-integer casts such as alignment tests); ``defines`` acts like ``-D`` (also passed
    to nvcc); ``template_args`` gives template parameters of a template kernel (numbers, or type
    names such as ``"float"``). With ``use_nvcc`` and an available nvcc, ptxas resources and the
    theoretical occupancy are added. Raises :class:`KernelNotFoundError` for a missing kernel and ``LaunchConfigError``
    for an invalid launch; everything else that cannot be determined is reported in
    ``unknowns``. ``data`` maps a pointer parameter to the real contents of the read-only *integer*
    input it points into (a numpy array, and the parameter's element offset into it): loads from it
    give those values, so index arrays (CSR row pointers, gather indices, histogram keys) yield real
    addresses and trip counts instead of unknowns. Float inputs are never read (their values decide
    no address). ``filename`` (how nvcc's messages name the source: the user's path) and
    ``include_dirs`` (``-I``) are for the ptxas compile; the analysis itself reads ``source`` only.
    """
    started = time.perf_counter()
    data = {k: (np.asarray(a).reshape(-1), int(off)) for k, (a, off) in (data or {}).items()}
    g = dim3(grid, "grid")
    b = dim3(block, "block")
    parsed = parse_source(source)
    kdef = find_kernel(parsed, kernel)

    def walk(lanes: Any) -> _walk.Walker:
        walker = _walk.Walker(parsed, kdef, lanes, dict(params or {}), dict(template_args or {}),
                              dict(defines) if defines else None, data)
        walker.run()
        return walker

    lanes = build_lanes(g, b)
    w = walk(lanes)
    for _round in range(REFINE_ROUNDS):
        # where whole blocks switch between working and idle, sample densely and walk again
        if lanes.exact:
            break
        active = busy_blocks(lanes, w)
        samples = refine(lanes, active)
        if samples is None and w.unreached_work() and g[0] * g[1] * g[2] <= EXHAUSTIVE_BLOCKS:
            # work behind blockIdx-dependent conditions that no sampled block reaches: a small
            # grid is walked whole, so whether any block reaches it is known, not guessed
            samples = [[(i, 1.0) for i in range(n)] for n in g]
        if samples is None:
            break
        lanes = build_lanes(g, b, samples)
        w = walk(lanes)
    if not lanes.exact:
        pinned = pin_boundaries(lanes, w, walk)
        if pinned is not None:
            lanes = build_lanes(g, b, pinned)
            w = walk(lanes)
    activity_unknown = None
    if not lanes.exact:
        # the samples stand for the blocks between them: check that on probe blocks, and walk the
        # whole grid (or give up on the counts) where whole blocks work in a pattern they miss
        mismatch = probe_activity(lanes, w, walk)
        if mismatch and g[0] * g[1] * g[2] * b[0] * b[1] * b[2] <= ACTIVITY_EXHAUSTIVE_THREADS:
            lanes = build_lanes(g, b, [[(i, 1.0) for i in range(n)] for n in g])
            w = walk(lanes)
        elif mismatch:
            activity_unknown = (f"which blocks do work follows a pattern the sampled blocks miss ({mismatch}), and "
                                f"the grid is too large to walk whole: the launch's totals are unknown")
            w.flops_unknown.append(activity_unknown)
    rep = AnalysisReport(kernel=kernel, arch=arch, grid=g, block=b, dynamic_smem=int(dynamic_smem))
    rep.sampling = lanes.describe() | {
        "loop_iterations": f"all when <= {_walk.EXACT_TRIPS}, else first, middle (weighted) and last"
    }
    if w.data_reads:
        rep.sampling["input_values"] = (
            f"values of the input(s) {', '.join(sorted(w.data_reads))} were read to follow indices"
            + ("" if lanes.exact else "; work that depends on them is extrapolated from the sampled blocks"))
    for line in parsed.parse_errors:
        rep.unknowns.append(f"line {line}: tree-sitter could not parse part of this line; it was skipped")
    rep.unknowns.extend(w.unknowns)
    for line in parsed.parse_errors:
        rep.uncounted.append(f"line {line} could not be parsed: whatever work it does is not counted")
    if not lanes.exact:
        rep.uncounted.extend(w.unreached_work())
    pairs = [(acc, acc.result()) for acc in w.global_acc.values()]
    if activity_unknown:
        for _acc, res in pairs:
            res.requests = res.bytes = res.useful_bytes = None
            res.unknown = activity_unknown
    # A site no sampled thread reached does no work when every thread was walked, or when nothing
    # that kept the sampled threads out depends on blockIdx (then every block is kept out alike).
    for acc, res in pairs:
        if res.unknown == _walk.NEVER_EXECUTED and acc.count_unknown is None and acc.unknown is None:
            if lanes.exact or not acc.unreached_block_dependent:
                res.requests = res.bytes = res.useful_bytes = 0.0
                res.unknown = None
            else:
                res.unknown = ("not reached by the sampled blocks, and whether other blocks reach it "
                               "depends on blockIdx")
    _memory_hierarchy(rep, pairs, lanes)
    rep.activity = _activity(w, lanes)
    rep.global_accesses = sorted((r for _a, r in pairs), key=lambda a: (a.line, a.kind))
    shared_pairs = [(acc, acc.result()) for acc in w.shared_acc.values()]
    for acc, sh in shared_pairs:
        _merge_vector_loads(acc, sh)
    for acc, sh in shared_pairs:
        if sh.unknown == _walk.NEVER_EXECUTED and acc.count_unknown is None and acc.unknown is None:
            if lanes.exact or not acc.unreached_block_dependent:
                sh.requests, sh.unknown = 0.0, None
            else:
                sh.unknown = "not reached by the sampled blocks, and whether other blocks reach it depends on blockIdx"
    if activity_unknown:
        for _acc, sh in shared_pairs:
            sh.requests, sh.unknown = None, activity_unknown
    rep.shared_accesses = sorted((r for _a, r in shared_pairs), key=lambda a: (a.line, a.kind))
    for acc, res in [*pairs, *shared_pairs]:
        if acc.count_upper and res.requests:
            rep.upper_bounded.append(f"line {res.line}: {res.kind} of {res.array}: {acc.count_upper}")
    rep.upper_bounded.extend(f"FLOPs at {u}" for u in sorted(w.flops_upper))
    rep.branches = sorted((_branch_result(a, lanes.exact) for a in w.branch_acc.values()), key=lambda x: x.line)
    rep.barriers = sorted((a.result() for a in w.barrier_acc.values()), key=lambda x: x.line)
    rep.loops = sorted((a.result() for a in w.loop_acc.values()), key=lambda x: x.line)
    for a in rep.global_accesses:
        if a.unknown:
            rep.unknowns.append(f"line {a.line}: global {a.kind} `{a.text}`: {a.unknown}")
    for s in rep.shared_accesses:
        if s.unknown:
            rep.unknowns.append(f"line {s.line}: shared {s.kind} `{s.text}`: {s.unknown}")
    for br in rep.branches:
        if br.unknown:
            rep.unknowns.append(f"line {br.line}: divergence of `{br.condition}`: {br.unknown}")
    for lp in rep.loops:
        if lp.unknown:
            rep.unknowns.append(f"line {lp.line}: loop trip count: {lp.unknown}")

    _totals(rep, w)
    rep.traits = _traits(rep, w, kdef)
    inst = instantiation(kdef, dict(template_args or {}))
    if kdef.template and inst is None:
        rep.unknowns.append("template arguments incomplete: nvcc would not instantiate the kernel")
    values = template_values(kdef, dict(template_args or {}))
    resources, why = ptxas_resources(source + (inst or ""), kernel, arch, dict(defines) if defines else None, use_nvcc,
                                     filename=filename, include_dirs=include_dirs,
                                     instance=f"{kernel}<{', '.join(values)}>" if values else None)
    rep.resources = resources
    if why:
        rep.unknowns.append(why)
    threads = b[0] * b[1] * b[2]
    occ, why = launch_occupancy(
        arch, threads, resources, int(dynamic_smem), int(resources.get("barriers") or 1) if resources else 1
    )
    rep.occupancy = occ
    if why:
        rep.unknowns.append(why)
    rep.features = _features(rep)
    rep.duration_s = time.perf_counter() - started
    return rep


#: a grid of at most this many blocks is walked whole when sampled blocks leave blockIdx-gated work unseen
EXHAUSTIVE_BLOCKS = 2048
#: a launch of at most this many threads is walked whole when probe blocks show that the samples
#: misrepresent which blocks work (about a second per million threads); larger ones get unknown totals
ACTIVITY_EXHAUSTIVE_THREADS = 1 << 22
#: at most this many distinct atomic target addresses in a launch count as "few" (a histogram's bins)
FEW_ATOMIC_ADDRESSES = 64


def _memory_hierarchy(rep: AnalysisReport, pairs: list[tuple[Any, GlobalAccess]], lanes: Any) -> None:
    """L1-filtered (L2) traffic per site, atomic contention per site, footprints per array."""
    sites: list[tuple[str, float | None, Any]] = []
    for acc, res in pairs:
        if res.requests is None or res.bytes is None or res.elem_bytes is None:
            sites.append((res.array, None, None))
            continue
        width = int(res.elem_bytes) * int(res.vector_width or 1)
        r = _reuse.site_reuse(acc.visits, res.kind, width, lanes)
        sectors = res.bytes / 32.0
        if res.kind == "load" and r is not None and not acc.visits_dropped:
            res.l2_sectors = sectors * min(1.0, r.l2_fraction)
        else:
            res.l2_sectors = sectors  # stores and atomics pass L1; too many visits: no reuse claimed
        if res.requests:
            res.lines_per_request = acc.lines / acc.requests if acc.requests else None
        if r is not None:
            res.block_iteration_bytes = r.block_iteration_sectors * 32.0
        # An array that is read and written costs its footprint twice in DRAM: the read, and the
        # write-back of the dirty lines. Loads and writes (stores, atomics) keep separate footprints.
        sites.append((res.array if res.kind == "load" else f"{res.array} (written)", res.l2_sectors * 32.0, r))
        if res.kind == "atomic":
            res.atomic_ops = acc.atomic_ops
            res.atomic_serial_ops = acc.atomic_serial
            addrs = acc.atomic_addresses
            if addrs:
                total = sum(addrs.values())
                res.atomic_addresses = len(addrs)
                res.atomic_hot_fraction = max(addrs.values()) / total if total else None
                res.contention = ("same" if len(addrs) == 1 else
                                  "few" if len(addrs) <= FEW_ATOMIC_ADDRESSES else "scattered")
            elif addrs is None:
                res.contention = "scattered"
    fp = _reuse.array_footprints(sites)
    if fp is not None:
        rep.cache = {"arrays": {name: f.to_dict() for name, f in fp.items()}}


def _merge_vector_loads(acc: Any, sh: Any) -> None:
    """Consecutive shared loads per lane in a fully unrolled loop become 64/128-bit loads.

    ``regM[i] = As[base + i]`` for i < TM (a compile-time trip count) is what every register-tiled
    GEMM does, and ptxas emits ``LDS.128`` for it when the addresses allow: TM/4 requests that each
    move 16 bytes per lane, with the bank conflicts of 16-byte accesses, instead of TM scalar ones.
    Counting them as scalar loads overstates shared-memory time several times. The merge is taken
    only when every active lane's address advances by exactly one element per iteration, the trip
    count is a multiple of the width, and the first iteration's addresses are aligned to it.
    """
    from veriforge.cuda.analysis import memory

    if sh.requests is None or sh.kind != "load" or not sh.elem_bytes or sh.elem_bytes > 8 or not acc.visits:
        return
    elem = int(sh.elem_bytes)
    firsts = {}
    for iters, addr, mask, mult in acc.visits:
        key = (iters[:-1], iters[-1][0])
        if iters[-1][1] == 0:
            firsts[key] = (iters, addr, mask, mult)
    width = 0
    scalar = vector = 0.0
    for iters, addr, mask, _mult in acc.visits:
        it = iters[-1][1]
        first = firsts.get((iters[:-1], iters[-1][0]))
        if it == 0 or first is None:
            continue
        _fi, a0, m0, w0 = first
        both = mask & m0
        if not both.any() or not np.all((addr[both] - a0[both]) == it * elem):
            return  # not one element per iteration on every lane: nothing is merged
        trips = iters[-1][2]
        w = next((k for k in (16 // elem, 8 // elem) if k >= 2 and trips % k == 0
                  and np.all(np.mod(a0[m0], k * elem) == 0)), 0)
        if not w:
            return
        width = w if not width else min(width, w)
        _ways, waves_s = memory.bank_ways(a0, elem, m0)
        _ways, waves_v = memory.bank_ways(a0, elem * w, m0)
        scalar += float((w0 * waves_s).sum())
        vector += float((w0 * waves_v).sum())
    if width < 2 or not scalar:
        return
    sh.merged_width = width
    sh.requests = sh.requests / width
    if sh.wavefronts_per_request is not None:
        # wavefronts of the merged loads, scaled from the first iteration's scalar/vector ratio
        sh.wavefronts_per_request = sh.wavefronts_per_request * (vector / scalar)


def _activity(w: _walk.Walker, lanes: Any) -> dict[str, float]:
    """How much of the launch does anything: idle warps and blocks hide no latency.

    A warp is active when it takes part in at least one counted access or FLOP; the shares are
    weighted like every other total (each sampled block stands for its stratum).
    """
    active = w.warp_work > 0
    nb = len(lanes.sampled_blocks)
    bow = lanes.block_of_warp
    warps_active = np.bincount(bow, weights=active.astype(np.float64), minlength=nb)
    block_w = np.bincount(bow, weights=lanes.warp_weight, minlength=nb) / np.maximum(
        np.bincount(bow, minlength=nb), 1)
    busy = warps_active > 0
    total_w = float(block_w.sum())
    warps_per_block = float(np.bincount(bow, minlength=nb)[0]) if nb else 0.0
    if not busy.any() or total_w == 0:
        return {"active_block_fraction": 0.0, "active_warps_per_block": 0.0, "warps_per_block": warps_per_block}
    lanes_active = (lanes.valid & active[:, None]).sum(axis=1)
    return {
        "active_block_fraction": float(block_w[busy].sum() / total_w),
        "active_warps_per_block": float((warps_active[busy] * block_w[busy]).sum() / block_w[busy].sum()),
        "warps_per_block": warps_per_block,
        "active_lanes_per_active_warp": float(lanes_active[active].mean()),
    }


def _totals(rep: AnalysisReport, w: _walk.Walker) -> None:
    if w.flops_unknown:
        rep.flops = None
        rep.unknowns.append(f"FLOPs unknown: {w.flops_unknown[0]}")
    else:
        rep.flops = w.flops
    missing = [a for a in rep.global_accesses if a.bytes is None]
    if missing:
        a = missing[0]
        rep.unknowns.append(f"global bytes unknown: line {a.line} `{a.text}`: {a.unknown or 'request count unknown'}")
    else:
        rep.global_bytes = float(sum(a.bytes or 0.0 for a in rep.global_accesses))
        rep.global_useful_bytes = float(sum(a.useful_bytes or 0.0 for a in rep.global_accesses))
    if rep.flops is not None and rep.global_bytes:
        rep.arithmetic_intensity = rep.flops / rep.global_bytes
    elif rep.flops is not None and rep.global_bytes == 0:
        rep.unknowns.append("arithmetic intensity undefined: the kernel moves no global memory")


def _traits(rep: AnalysisReport, w: _walk.Walker, kdef: Any) -> dict[str, Any]:
    vec = sorted({a.elem_bytes for a in rep.global_accesses if a.vector_width > 1 and a.elem_bytes})
    vec_shared = sorted(
        {s.elem_bytes for s in rep.shared_accesses if s.elem_bytes and s.elem_bytes >= 8 and s.unknown is None}
    )
    unrolled = [lp for lp in rep.loops if lp.unrolled is True or (type(lp.unrolled) is int and lp.unrolled > 1)]
    static_bytes = 0
    static_known = True
    arrays = []
    for d in w.shared_decls.values():
        arrays.append({"name": d.name, "bytes": d.bytes, "dynamic": d.dynamic, "line": d.line})
        if not d.dynamic:
            if d.bytes is None:
                static_known = False
            else:
                static_bytes += d.bytes
    pointer_params = [p for p in kdef.params if p.is_pointer]
    atom_spaces: dict[str, int] = {}
    for space in w.atomic_spaces.values():
        atom_spaces[str(space)] = atom_spaces.get(str(space), 0) + 1
    return {
        "vectorized": bool(vec),
        "vector_widths": vec,
        "shared_vector_widths": vec_shared,
        "unrolled": bool(unrolled),
        "unrolled_loops": [{"line": lp.line, "unroll": lp.unrolled} for lp in unrolled],
        "restrict": bool(pointer_params) and all(p.restrict for p in pointer_params),
        "restrict_params": [p.name for p in pointer_params if p.restrict],
        "read_only": bool(w.ldg_sites) or any(a.read_only for a in rep.global_accesses),
        "ldg": len(w.ldg_sites),
        "const_restrict_params": [p.name for p in pointer_params if p.const and p.restrict],
        "shared_mem": {"static_bytes": static_bytes if static_known else None, "arrays": arrays},
        "shared_mem_static_bytes": static_bytes if static_known else None,
        "uses_dynamic_smem": any(d.dynamic for d in w.shared_decls.values()),
        "dynamic_smem_bytes": rep.dynamic_smem,
        "atomics": {"count": sum(w.atomics.values()), "kinds": dict(w.atomics), "spaces": atom_spaces},
        "warp_primitives": sorted(w.warp_primitives),
        "cooperative_groups": w.cooperative_groups,
        "barriers": len(rep.barriers),
        "barriers_under_thread_dependent_condition": sum(b.under_thread_dependent_condition for b in rep.barriers),
        "constant_memory": sorted(w.constant_arrays),
        "launch_bounds": kdef.launch_bounds,
        "device_functions_inlined": sorted(w.called_functions),
        "fp64_flops": w.flops_fp64 or 0.0,
    }


def _ratio_feature(accs: list[GlobalAccess], kind: str) -> tuple[float | None, float | None]:
    # a site no thread reaches (requests 0: a vector kernel's never-taken tail) has no pattern to rate
    sel = [a for a in accs if a.kind == kind and a.requests != 0]
    if not sel or any(a.requests is None or a.sectors_per_request is None for a in sel):
        return None, None
    req = sum(a.requests or 0.0 for a in sel)
    if req == 0:
        return None, None
    sectors = sum((a.requests or 0.0) * (a.sectors_per_request or 0.0) for a in sel)
    useful = sum(a.useful_bytes or 0.0 for a in sel)
    return sectors / req, (useful / (sectors * 32) if sectors else None)


def _features(rep: AnalysisReport) -> dict[str, float]:
    f: dict[str, float] = {}
    spr, eff = _ratio_feature(rep.global_accesses, "load")
    if spr is not None:
        f["global_load_sectors_per_request"] = spr
        if eff is not None:
            f["global_load_efficiency"] = min(1.0, eff)
    spr, eff = _ratio_feature(rep.global_accesses, "store")
    if spr is not None:
        f["global_store_sectors_per_request"] = spr
        if eff is not None:
            f["global_store_efficiency"] = min(1.0, eff)
    for kind, name in (("load", "shared_load_bank_conflict_ways"), ("store", "shared_store_bank_conflict_ways")):
        sel = [s for s in rep.shared_accesses if s.kind == kind]
        if sel and all(s.requests is not None and s.wavefronts_per_request is not None for s in sel):
            req = sum(s.requests or 0.0 for s in sel)
            if req:
                f[name] = sum((s.requests or 0.0) * (s.wavefronts_per_request or 0.0) for s in sel) / req
    if rep.flops is not None:
        f["flops"] = rep.flops
    if rep.arithmetic_intensity is not None:
        f["arithmetic_intensity"] = rep.arithmetic_intensity
    f["barriers"] = float(len(rep.barriers))
    if all(b.divergent is not None for b in rep.branches):
        f["divergent_branches"] = float(sum(1 for b in rep.branches if b.divergent))
    f["shared_mem_dynamic_bytes"] = float(rep.dynamic_smem)
    if rep.resources is not None:
        f["registers_per_thread"] = float(rep.resources["registers"])
        f["shared_mem_static_bytes"] = float(rep.resources["smem_static"])
        f["spill_bytes"] = float(rep.resources["spill_stores"] + rep.resources["spill_loads"])
    elif rep.traits.get("shared_mem_static_bytes") is not None:
        f["shared_mem_static_bytes"] = float(rep.traits["shared_mem_static_bytes"])
    if rep.occupancy is not None:
        o = rep.occupancy
        f["theoretical_occupancy"] = float(o["occupancy"])
        for key, name in (
            ("blocks_limit_regs", "occupancy_limit_registers"),
            ("blocks_limit_smem", "occupancy_limit_shared_mem"),
            ("blocks_limit_warps", "occupancy_limit_warps"),
            ("blocks_limit_blocks", "occupancy_limit_blocks"),
        ):
            if o.get(key) is not None:
                f[name] = float(o[key])
    return f
