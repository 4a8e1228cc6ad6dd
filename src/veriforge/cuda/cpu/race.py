"""Race check of whole programs: which launch's result depends on the order threads run in.

:func:`~veriforge.cuda.cpu.run_program` with ``race_check=True`` (and ``veriforge cuda run
--race-check``) runs the program several times with a per-launch trace (the runtime's
``VF_RACE_TRACE``: after every launch, the kernel, where it is launched and a hash of every live
allocation):

1. as usual (blocks and threads in index order) - this run's result is the one returned;
2. with every launch in reverse block and thread order (``VF_REVERSE_ORDER=1``, the switch behind
   ``vf::set_reverse_order``): exposes reads of values another thread or block writes without a
   barrier in between (a shared-memory reduction missing a ``__syncthreads()``);
3. built with the interleaving probe (``build_program(probe=True)``, runtime/vf_probe.h): every
   access through a kernel's pointer parameter yields to the block's next thread, so an unguarded
   read-modify-write (``x[i] += v`` by several threads, no atomics) loses updates as on a GPU. A
   program the probe cannot compile (a kernel passing its pointer to a template, say) is checked
   without it (noted in the report).

The first launch after which some allocation's hash differs from run 1's is the racy one. The
differing allocations at the first few such launches are then dumped (``VF_RACE_DUMP``) in both runs
and compared element by element. The element type comes from the kernel argument that points into
the allocation (``float*``, ``double*``, an integer type); the rule:

- integer or unknown data: exact comparison, 4-byte elements (bytes if the size is not a multiple
  of 4);
- ``float``/``double`` (or unknown data whose every differing 4-byte word reads as a normal float32):
  a difference within a relative 1e-4 (float32) / 1e-9 (float64) of the larger value, or 1e-6 /
  1e-12 of the buffer's largest magnitude, is *order-dependent rounding* (float atomics or a
  reduction summing in another order), not a race; the next differing launch is examined instead.

A race is reported for the first launch with a difference beyond rounding (or a launch that fails
in one order only, or a different exit status). Differences in stdout are reported too, but do
not make a race by themselves (device ``printf`` order and timings differ legitimately).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ProgramRace", "compare_runs", "parse_trace"]

TRACE_LIMIT = 256 << 20
DUMP_LIMIT = 256 << 20
MAX_DUMPED_PAIRS = 16
"""At most this many (launch, allocation) differences are dumped and compared per probe."""
FLOAT_RTOL = {4: 1e-4, 8: 1e-9}
FLOAT_ATOL = {4: 1e-6, 8: 1e-12}
PROBES = {"reverse": "blocks and threads in reverse order", "interleave": "threads interleaved access by access"}


@dataclass(frozen=True)
class ProgramRace:
    """The race check's verdict on a whole program (``ProgramResult.race``)."""

    found: bool
    kernel: str | None = None
    """The racy launch's kernel (as written at the launch, ``k`` or ``k<float>``)."""
    location: str | None = None
    """Where that launch is written, ``file:line`` (None when unknown: ``cudaLaunchKernel``)."""
    allocation: str | None = None
    """Which memory differs: the kernel argument pointing into it, its size, its label if any."""
    differences: int = 0
    """Elements of ``allocation`` that differ after that launch (of ``elements``)."""
    first_offsets: tuple[int, ...] = ()
    """Byte offsets of the first differing elements (at most 8)."""
    elements: int = 0
    element_size: int = 4
    launch: int | None = None
    """0-based index of the racy launch in the program's sequence of launches."""
    probe: str | None = None
    """Which run showed it: ``"reverse"`` or ``"interleave"``."""
    values: tuple[tuple[str, str], ...] = ()
    """(in index order, in the other run) for the first differing elements."""
    rounding: str | None = None
    """Set when differences were only order-dependent rounding (then ``found`` is False)."""
    stdout_differs: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    probes: tuple[str, ...] = ("reverse", "interleave")
    """The runs compared with the index-order one."""

    def __str__(self) -> str:
        if not self.found:
            names = ["index-order", *({"reverse": "reverse-order", "interleave": "interleaved"}.get(p, p)
                                      for p in self.probes)]
            runs = ", ".join(names[:-1]) + " and " + names[-1]
            text = f"race check: no race found ({runs} runs agree)"
            if self.rounding:
                text = f"race check: no race; {self.rounding}"
        elif self.allocation is None:
            text = f"race check: RACE - {self.notes[0] if self.notes else 'the runs differ'}"
        else:
            where = f" launched at {self.location}" if self.location else ""
            offs = ", ".join(str(o) for o in self.first_offsets)
            how = PROBES[self.probe or "reverse"]
            first = (f"; first: {self.values[0][0]} in index order, {self.values[0][1]} with {how}"
                     if self.values else "")
            text = (f"race check: RACE in kernel '{self.kernel}'{where} (launch #{self.launch}): {self.allocation} "
                    f"differs in {self.differences} of {self.elements} elements when "
                    f"{PROBES[self.probe or 'reverse']} (first byte offsets {offs}{first})")
        if self.stdout_differs:
            text += "; stdout differs between the runs"
        extra = [n for n in self.notes if not (self.found and self.allocation is None and n == self.notes[0])]
        if extra:
            text += " [" + "; ".join(extra) + "]"
        return text


@dataclass
class _Alloc:
    serial: int
    size: int
    kind: str
    arg: int
    digest: str
    label: str


@dataclass
class _Launch:
    index: int
    error: int
    file: str
    line: int
    kinds: str
    kernel: str
    allocs: dict[int, _Alloc] = field(default_factory=dict)

    @property
    def location(self) -> str | None:
        return f"{self.file}:{self.line}" if self.line > 0 and self.file != "?" else None


def parse_trace(text: str) -> list[_Launch]:
    """The runtime's per-launch trace (host_api.cpp, "race check")."""
    launches: list[_Launch] = []
    for line in text.splitlines():
        parts = line.split("\t")
        try:
            if parts[0] == "L" and len(parts) >= 7:
                launches.append(_Launch(int(parts[1]), int(parts[2]), parts[3], int(parts[4]),
                                        "" if parts[5] == "." else parts[5], "\t".join(parts[6:])))
            elif parts[0] == "H" and len(parts) >= 7 and launches:
                a = _Alloc(int(parts[1]), int(parts[2]), parts[3], int(parts[4]), parts[5], "\t".join(parts[6:]))
                launches[-1].allocs[a.serial] = a
        except ValueError:
            continue  # a line cut short by a crash
    return launches


def read_limited(path: Path, limit: int, *, strict: bool = False) -> bytes:
    """At most ``limit`` bytes of a file a sandboxed program wrote (no links, regular files only).

    A missing file, a link or a non-regular file gives ``b""``, or with ``strict`` raises
    (``OSError`` / ``ValueError``): the program controls that path, so it is never followed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        if strict:
            raise
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            if strict:
                raise ValueError(f"{Path(path).name} is not a regular file")
            return b""
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 22))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_dump(data: bytes) -> dict[tuple[int, int], bytes]:
    out: dict[tuple[int, int], bytes] = {}
    off = 0
    while off + 24 <= len(data):
        launch, serial, size = (int(x) for x in np.frombuffer(data, dtype="<u8", count=3, offset=off))
        off += 24
        if off + size > len(data):
            break
        out[(launch, serial)] = data[off:off + size]
        off += size
    return out


# ---- comparing two runs ----------------------------------------------------------------------

@dataclass
class RunTrace:
    """What one traced run left: its trace, exit status, stdout, dumps (filled by the caller)."""

    launches: list[_Launch]
    returncode: int
    stdout: str
    dumps: dict[tuple[int, int], bytes] = field(default_factory=dict)


def differing_pairs(base: list[_Launch], other: list[_Launch]) -> tuple[list[tuple[int, int]], str | None]:
    """(launch, allocation serial) pairs whose hashes differ, in launch order, and a note if the
    runs' launch sequences diverge (different kernel or location at the same index)."""
    pairs: list[tuple[int, int]] = []
    for a, b in zip(base, other, strict=False):
        if (a.kernel, a.file, a.line) != (b.kernel, b.file, b.line):
            return pairs, (f"the runs launched different kernels from launch #{a.index} on ('{a.kernel}' vs "
                           f"'{b.kernel}')")
        for serial, x in a.allocs.items():
            y = b.allocs.get(serial)
            if y is not None and y.size == x.size and y.digest != x.digest:
                pairs.append((a.index, serial))
    return pairs, None


def pairs_to_dump(pairs: list[tuple[int, int]], launches: list[_Launch]) -> list[tuple[int, int]]:
    chosen, total = [], 0
    sizes = {(launch.index, s): a.size for launch in launches for s, a in launch.allocs.items()}
    for p in pairs[:MAX_DUMPED_PAIRS]:
        size = sizes.get(p, 0)
        if chosen and total + size > DUMP_LIMIT // 2:
            break
        chosen.append(p)
        total += size
    return chosen


def dump_spec(pairs: list[tuple[int, int]]) -> str:
    by_launch: dict[int, list[int]] = {}
    for launch, serial in pairs:
        by_launch.setdefault(launch, []).append(serial)
    return ";".join(f"{launch}:{','.join(map(str, serials))}" for launch, serials in sorted(by_launch.items()))


@dataclass
class _Diff:
    differences: int
    elements: int
    element_size: int
    offsets: tuple[int, ...]
    values: tuple[tuple[str, str], ...]
    rounding: bool


def classify(a: bytes, b: bytes, kind: str) -> _Diff:
    """Compare one allocation's bytes from two runs (``kind``: the pointer argument's element type,
    'f' float, 'd' double, 'i' integer, '' unknown); see the module docstring for the rule."""
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    size = 8 if kind == "d" and n % 8 == 0 else 4 if n % 4 == 0 else 1
    ua = np.frombuffer(a, dtype={8: "<u8", 4: "<u4", 1: "u1"}[size])
    ub = np.frombuffer(b, dtype={8: "<u8", 4: "<u4", 1: "u1"}[size])
    bad = np.flatnonzero(ua != ub)
    rounding = False
    values: list[tuple[str, str]] = []
    if bad.size and size in (4, 8) and kind != "i":
        fa = ua.view("<f4" if size == 4 else "<f8").astype(np.float64)
        fb = ub.view("<f4" if size == 4 else "<f8").astype(np.float64)
        x, y = fa[bad], fb[bad]
        tiny = np.finfo(np.float32 if size == 4 else np.float64).tiny
        with np.errstate(invalid="ignore", over="ignore"):
            finite = np.isfinite(fa)
            scale = float(np.max(np.abs(fa[finite]))) if finite.any() else 0.0
            looks_float = kind in ("f", "d") or bool(np.all(((np.abs(x) >= tiny) | (x == 0))
                                                            & ((np.abs(y) >= tiny) | (y == 0))))
            close = np.abs(x - y) <= (FLOAT_RTOL[size] * np.maximum(np.abs(x), np.abs(y)) + FLOAT_ATOL[size] * scale)
        rounding = looks_float and bool(np.all(close & np.isfinite(x) & np.isfinite(y)))
        if kind in ("f", "d") or looks_float:
            values = [(f"{fa[i]:.7g}", f"{fb[i]:.7g}") for i in bad[:4]]
    if not values:
        values = [(str(int(ua[i])), str(int(ub[i]))) for i in bad[:4]]
    return _Diff(int(bad.size), int(ua.size), size, tuple(int(i) * size for i in bad[:8]), tuple(values), rounding)


_TYPE_NAMES = {"f": "float", "d": "double", "i": "integer"}


def _describe(launch: _Launch, alloc: _Alloc, params: list[str] | None) -> str:
    parts = []
    if alloc.arg >= 0:
        name = params[alloc.arg] if params and alloc.arg < len(params) else None
        parts.append(f"argument {alloc.arg + 1}" + (f" '{name}'" if name else ""))
    what = {"device": "cudaMalloc'd buffer", "managed": "managed buffer", "symbol": "__device__ variable",
            "host": "pinned host buffer", "external": "buffer"}.get(alloc.kind, "buffer")
    label = f" '{alloc.label}'" if alloc.label not in ("-", "") else ""
    desc = f"{what}{label} #{alloc.serial}, {alloc.size} bytes"
    return f"{parts[0]} ({desc})" if parts else desc


def kernel_params(sources: list[str], kernel: str) -> list[str] | None:
    """Parameter names of ``__global__`` function ``kernel`` (best effort, from the source text)."""
    base = re.split(r"[<\s(]", kernel.split("::")[-1].strip(), maxsplit=1)[0]
    if not base:
        return None
    pattern = re.compile(r"__global__[^;{}]*?\b" + re.escape(base) + r"\s*\(")
    for text in sources:
        for m in pattern.finditer(text):
            depth, k = 1, m.end()
            while k < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[k], 0)
                k += 1
            inner = text[m.end():k - 1]
            if not inner.strip() or inner.strip() == "void":
                return []
            names, depth, cur = [], 0, ""
            for ch in inner + ",":
                if ch in "<([":
                    depth += 1
                elif ch in ">)]":
                    depth -= 1
                if ch == "," and depth == 0:
                    ids = re.findall(r"[A-Za-z_]\w*", cur.split("=")[0])
                    names.append(ids[-1] if ids else "?")
                    cur = ""
                else:
                    cur += ch
            return names
    return None


def compare_runs(base: RunTrace, others: dict[str, RunTrace], *, sources: list[str] | None = None,
                 notes: list[str] | None = None) -> ProgramRace:
    """The verdict from run 1 (``base``) and the probes' runs (``others``: name → run, with their
    ``dumps`` and ``base.dumps`` filled for the pairs :func:`differing_pairs` gave)."""
    notes = list(notes or [])
    stdout_differs = any(o.stdout != base.stdout for o in others.values())
    best: tuple[int, ProgramRace] | None = None
    rounding_seen: list[str] = []
    by_index = {launch.index: launch for launch in base.launches}
    for probe, other in others.items():
        pairs, diverged = differing_pairs(base.launches, other.launches)
        if diverged:
            notes.append(f"{PROBES[probe]}: {diverged}")
        # a launch that fails in one order only
        for a, b in zip(base.launches, other.launches, strict=False):
            if (a.error == 0) != (b.error == 0):
                race = ProgramRace(found=True, kernel=a.kernel, location=a.location, launch=a.index, probe=probe,
                                   stdout_differs=stdout_differs,
                                   notes=(f"launch #{a.index} of kernel '{a.kernel}'"
                                          + (f" at {a.location}" if a.location else "")
                                          + f" fails (error {a.error or b.error}) only in one of index order and "
                                          f"{PROBES[probe]}",))
                if best is None or a.index < best[0]:
                    best = (a.index, race)
                break
        for launch_index, serial in pairs:
            a_bytes = base.dumps.get((launch_index, serial))
            b_bytes = other.dumps.get((launch_index, serial))
            launch = by_index[launch_index]
            alloc = launch.allocs[serial]
            if a_bytes is None or b_bytes is None:
                # beyond the dump limit (after differences that were all rounding): not judged
                notes.append(f"{PROBES[probe]}: differences from launch #{launch_index} ('{launch.kernel}') on were "
                             f"not compared (at most {MAX_DUMPED_PAIRS} are)")
                break
            kind = launch.kinds[alloc.arg] if 0 <= alloc.arg < len(launch.kinds) else ""
            diff = classify(a_bytes, b_bytes, kind if kind in "fdi" else "")
            if diff.differences == 0:
                continue
            desc = _describe(launch, alloc, kernel_params(sources or [], launch.kernel))
            if diff.rounding:
                rounding_seen.append(f"{desc} after kernel '{launch.kernel}'"
                                     + (f" at {launch.location}" if launch.location else "")
                                     + f" differs by order-dependent rounding only ({diff.differences} elements, "
                                     f"{PROBES[probe]}: likely float atomics), not a race")
                continue
            race = ProgramRace(found=True, kernel=launch.kernel, location=launch.location, allocation=desc,
                               differences=diff.differences, first_offsets=diff.offsets, elements=diff.elements,
                               element_size=diff.element_size, launch=launch_index, probe=probe, values=diff.values,
                               stdout_differs=stdout_differs)
            if best is None or launch_index < best[0]:
                best = (launch_index, race)
            break
        if base.returncode != other.returncode and best is None:
            race = ProgramRace(found=True, probe=probe, stdout_differs=stdout_differs,
                               notes=(f"the exit status differs: {base.returncode} in index order, "
                                      f"{other.returncode} with {PROBES[probe]}",))
            best = (1 << 62, race)
    if best is not None:
        race = best[1]
        extra = tuple(notes) + ((f"before it: {rounding_seen[0]}",) if rounding_seen else ())
        return ProgramRace(**{**race.__dict__, "notes": race.notes + extra, "probes": tuple(others)})
    return ProgramRace(found=False, rounding=rounding_seen[0] if rounding_seen else None,
                       stdout_differs=stdout_differs, notes=tuple(notes), probes=tuple(others))


# ---- running a program for the check ----------------------------------------------------------

RaceRunner = Any
"""``(exe, extra_env, cwd) -> ProgramResult``: runs the program once in the sandbox (program.py)."""


def check(run_once: RaceRunner, exe: Path, probe_exe: Path | None, *, cwd: Path | None,
          sources: list[str] | None = None, notes: list[str] | None = None,
          ) -> tuple[ProgramRace, Any]:
    """Run the check. ``run_once(exe, env, cwd)`` runs the program once in the sandbox and returns
    its ProgramResult; the trace and dump files are placed in ``cwd`` (or a fresh directory per
    run). Returns the verdict and run 1's result (index order, traced)."""
    runs = [("base", exe, {}), ("reverse", exe, {"VF_REVERSE_ORDER": "1"})]
    if probe_exe is not None:
        runs.append(("interleave", probe_exe, {}))
    traces: dict[str, RunTrace] = {}
    results: dict[str, Any] = {}

    def one(name: str, program: Path, env: dict[str, str], dump_at: str | None) -> RunTrace:
        own = cwd is None
        where = Path(tempfile.mkdtemp(prefix="veriforge-race-")) if own else Path(cwd)
        tag = f".vf-race-{os.getpid()}-{name}"
        trace, dump = where / f"{tag}.trace", where / f"{tag}.dump"
        full = {**env, "VF_RACE_TRACE": str(trace), "VF_CPU_THREADS": "1"}
        if dump_at:
            full.update(VF_RACE_DUMP=str(dump), VF_RACE_DUMP_AT=dump_at)
        try:
            res = run_once(program, full, where)
            results[name] = res
            launches = parse_trace(read_limited(trace, TRACE_LIMIT).decode("utf-8", "replace"))
            dumps = parse_dump(read_limited(dump, DUMP_LIMIT)) if dump_at else {}
        finally:
            if own:
                shutil.rmtree(where, ignore_errors=True)
            else:
                for f in (trace, dump):
                    try:
                        f.unlink()
                    except OSError:
                        pass
        return RunTrace(launches, res.returncode, res.stdout, dumps)

    for name, program, env in runs:
        traces[name] = one(name, program, env, None)
    base = traces.pop("base")
    wanted: dict[str, list[tuple[int, int]]] = {}
    for name, other in traces.items():
        pairs, _ = differing_pairs(base.launches, other.launches)
        if pairs:
            wanted[name] = pairs_to_dump(pairs, base.launches)
    if wanted:
        union = sorted({p for ps in wanted.values() for p in ps})
        base.dumps = one("base-dump", exe, {}, dump_spec(union)).dumps
        for name, pairs in wanted.items():
            program, env = next((p, e) for n, p, e in runs if n == name)
            traces[name].dumps = one(f"{name}-dump", program, env, dump_spec(pairs)).dumps
    return compare_runs(base, traces, sources=sources, notes=notes), results["base"]
