"""Real CUDA programs (NVIDIA cuda-samples, PolyBench/GPU, Rodinia) on the CPU runtime.

Builds and runs every program of ``benchmarks/cpu_runtime_programs.toml`` with
``veriforge.cuda.cpu.run_program`` and classifies the outcome: pass / wrong (ran, but the program's
own check or the manifest's check failed) / fault (the runtime reported a kernel fault or an
unsupported call at run time) / refused (UnsupportedFeatureError, message kept) / compile (the first
compiler diagnostic kept) / crash (killed by a signal) / timeout.

Nothing is fetched and no corpus code is copied into this repository: clone the three public
repositories yourself and pass their locations::

    git clone https://github.com/NVIDIA/cuda-samples            /tmp/corpus/cuda-samples
    git clone https://github.com/sgrauerg/polybenchGpu           /tmp/corpus/polybenchGpu
    git clone https://github.com/yuhc/gpu-rodinia                /tmp/corpus/gpu-rodinia   # Rodinia 3.1 sources
    git clone https://github.com/JuliaParallel/rodinia           /tmp/corpus/rodinia-jl    # only its data/ is used
    # (check out the commits named in the manifest's [corpora] table to reproduce a recorded run)

    .venv/bin/python benchmarks/cpu_runtime_programs.py \\
        --corpus cuda-samples=/tmp/corpus/cuda-samples --corpus polybench-gpu=/tmp/corpus/polybenchGpu \\
        --corpus rodinia=/tmp/corpus/gpu-rodinia --corpus rodinia-data=/tmp/corpus/rodinia-jl \\
        --jobs 2 --state /tmp/cpu_runtime_programs.jsonl --resume --out benchmarks/results/cpu_runtime_programs.txt

``--verbose`` prints the output tails of every non-pass; ``--report-only`` re-renders from ``--state``;
``--define NAME=VALUE`` (triage only) adds a macro to every program to see what fails next.

Two columns are reported:

* ``native`` - the goal column, "no outside help beyond the program's own build flags": a program of
  one self-contained file is passed as its source string; a program with several files or include
  directories (``-I Common``) is passed as ``cpu.Project(files=..., include_dirs=..., defines=...,
  flags=..., root=...)`` when the runtime has that API, and is ``n/a`` otherwise.
* ``inlined`` - "with help": every ``#include`` that resolves inside the program's directory or its
  include directories is textually inlined and the translation units are concatenated into one
  source string (what the first survey in issue 15 did by hand). Only run for programs that need
  it (``--modes`` chooses).

Per program the outcome is printed as soon as it is known; ``--state FILE`` keeps every result as a
JSON line and ``--resume`` skips the programs already in it (keyed by the manifest entry, the mode
and a hash of the runtime's sources, so a changed runtime re-runs everything).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import hashlib
import json
import lzma
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_MANIFEST = HERE / "cpu_runtime_programs.toml"
DEFAULT_STATE = Path(tempfile.gettempdir()) / "veriforge-cpu-runtime-programs.jsonl"
EXTRA_DEFINES: dict[str, str] = {}  # --define (triage only: 'what fails next if X were there')
OUTCOMES = ("pass", "wrong", "fault", "refused", "compile", "crash", "timeout", "n/a", "error")

# Automatic first-guess causes (the report groups by these; "other" needs a human look). First match wins.
CAUSES: list[tuple[str, str]] = [
    (r"cudaThreadSynchronize|cudaThreadExit|cudaThread\w+", "legacy cudaThread* aliases missing"),
    (r"rejects a build flag", "cpu.Project rejects an nvcc flag of the Makefile"),
    (r"redefinition of 'int max\(int, int\)'",
     "__CUDACC__ undefined: helper_math.h host min/max clash with the runtime's"),
    (r"redefinition of 'uint umin", "runtime device intrinsics (umin...) declared in plain .cpp units"),
    (r"redefinition of|multiple definition of|conflicting declaration",
     "help artifact: translation units joined into one"),
    (r"collect2: error: ld returned", "help artifact: build flag (-fopenmp) cannot be passed"),
    (r"block_tile_memory", "cooperative_groups::block_tile_memory missing"),
    (r"warp shuffles move at most 8 bytes", "cg shuffles of types wider than 8 bytes"),
    (r"binary_partition", "cooperative_groups::binary_partition missing"),
    (r"launched from device code|dynamic parallelism", "dynamic parallelism (launch from device code)"),
    (r"invalid conversion from 'int' to '[\w ]+\*'", "literal 0 passed for a pointer kernel parameter"),
    (r"Warp Aggregated Atomics FAILED",
     "__CUDA_ARCH__ undefined: device code under #if __CUDA_ARCH__ >= 700 compiled out"),
    (r"inline PTX|\basm\b", "inline asm (device) refused"),
    (r"textur|surf[123]D|cudaTextureObject|cudaSurfaceObject|cudaCreateChannelDesc|cudaMallocArray|cudaArray",
     "textures/surfaces"),
    (r"wmma|\bmma\b|tensor core", "WMMA / tensor cores"),
    (r"memcpy_async|cuda/pipeline|cuda/barrier|cuda::barrier|cp\.async", "<cuda/barrier> / <cuda/pipeline>"),
    (r"grid[ _-]?wide|this_grid|cooperative (grid|launch)|cudaLaunchCooperativeKernel|grid_group",
     "cooperative grid sync"),
    (r"cudaGraph", "CUDA graphs API"),
    (r"cudaStreamAddCallback|cudaLaunchHostFunc", "stream callbacks / host functions"),
    (r"cudaDeviceCanAccessPeer|P2P|cudaIpc", "peer-access / P2P queries"),
    (r"cudaStreamSetAttribute|PersistingL2", "stream attributes / L2 persistence"),
    (r"MemPool", "memory pools"),
    (r"cudaStreamAttachMemAsync", "cudaStreamAttachMemAsync"),
    (r"not opened|cannot access \.\./", "sandbox: input under ../../data outside the working directory is invisible"),
    (r"No such file or directory", "header/file not found"),
    (r"undefined reference to `?(\w+)", "undefined symbol at link time"),
    (r"SIGSEGV|segmentation", "segfault"),
    (r"Non-Matching CPU-GPU Outputs[^:]*: [1-9]", "self-check mismatch"),
]
# Causes found by hand (2026-12-02 triage) for outcomes the patterns cannot see; used only for that outcome.
KNOWN: dict[tuple[str, str], str] = {
    ("simpleHyperQ", "timeout"): "clock() spin-wait: the device clock does not advance with wall time",
    ("simpleStreams", "timeout"): "fixed 16M-element workload, no size option: CPU throughput",
    ("BlackScholes", "timeout"): "fixed 4M options x 512 iterations: CPU throughput",
    ("alignedTypes", "timeout"): "fixed 50 MB x 32 iterations x 10 types: CPU throughput",
    ("pb-mvt", "wrong"): "race in the benchmark: 8 threads (threadIdx.y) per row do x1[i] += ...; CPU order gives 8x",
    ("scan", "timeout"): "fixed workload (13M elements x many sizes): ~1-2 min (region splitting through its "
                         "volatile warp-synchronous device functions), over the limit when the cores are shared",
    ("simpleAttributes", "timeout"): "fixed workload: 65,535 blocks x 720,895 loop iterations (~34 min here); "
                                     "also an int overflow -> out-of-bounds read in the sample",
    ("graphMemoryFootprint", "timeout"): "clock() spin of 5 us in each of 16.7M threads x 16 launches: a block's "
                                         "threads spin one after another here",
    ("UnifiedMemoryPerf", "timeout"): "launches are synchronous: a kernel spins on a latch the host sets after the "
                                      "launch returns (commonKernels.cu:30); plus GEMMs up to 2048^3",
    ("interval", "timeout"): "fixed workload: 100 runs x 65,536 interval Newton solves (~12 s in all with the "
                             "directed-rounding fast path; over the limit only under heavy load)",
    ("dxtc", "wrong"): "warp-synchronous race: sums[idx] += sums[idx ^ 8] between tile syncs (CudaMath.h "
                       "colorSums) needs lockstep lanes",
    ("simpleAttributes", "crash"): "int overflow in the sample (idx = tID - psRand) -> data[-1179648] after ~49 s",
}


# ----------------------------------------------------------------------------------------------
# manifest


@dataclass
class Program:
    name: str
    corpus: str
    dir: str  # inside the corpus
    files: list[str]  # translation units, relative to dir
    include_dirs: list[str] = field(default_factory=list)  # relative to the corpus root
    defines: dict = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    stdin: str = ""
    data: list[dict] = field(default_factory=list)  # {src (corpus-relative), dst (cwd-relative), xz}
    timeout: float = 60.0
    exit_code: int | None = 0
    stdout_contains: list[str] = field(default_factory=list)
    stdout_regex: str = ""  # must match (re.M)
    fail_regex: str = ""  # must not match stdout+stderr
    output_file: str = ""  # a file the program writes into its cwd, checked with output_contains
    output_contains: list[str] = field(default_factory=list)
    cwd_subdir: str = ""  # run in WORK/cwd_subdir (programs that read ../../data/...)
    read_data: list[str] = field(default_factory=list)  # run_program(data=...): cwd-relative, lent read-only
    note: str = ""

    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


def load_manifest(path: Path) -> tuple[dict, list[Program], list[dict]]:
    data = tomllib.loads(path.read_text())
    defaults = data.get("defaults", {})
    programs = []
    for entry in data.get("program", []):
        merged = {**defaults.get(entry["corpus"], {}), **entry}
        programs.append(Program(**merged))
    names = [p.name for p in programs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit(f"duplicate program names in the manifest: {sorted(dup)}")
    return data.get("corpora", {}), programs, data.get("excluded", [])


# ----------------------------------------------------------------------------------------------
# building the two kinds of input

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.M)
_PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b", re.M)


def _resolve(name: str, quoted: bool, here: Path, include_dirs: list[Path]) -> Path | None:
    dirs = ([here] if quoted else []) + include_dirs
    for d in dirs:
        cand = (d / name)
        if cand.is_file():
            return cand.resolve()
    return None


def local_includes(files: list[Path], include_dirs: list[Path]) -> set[Path]:
    """Every header (transitively) that resolves inside the program's own directories."""
    seen: set[Path] = set()
    todo = list(files)
    while todo:
        f = todo.pop()
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        for m in _INCLUDE.finditer(text):
            p = _resolve(m.group(2), m.group(1) == '"', f.parent, include_dirs)
            if p is not None and p not in seen:
                seen.add(p)
                todo.append(p)
    return seen


@dataclass
class Inlined:
    text: str
    line_map: list[tuple[int, str, int]]  # (first line in text, file, first line in file)

    def where(self, line: int) -> str:
        best = None
        for start, name, orig in self.line_map:
            if start <= line:
                best = (start, name, orig)
            else:
                break
        if best is None:
            return f"?:{line}"
        return f"{best[1]}:{best[2] + line - best[0]}"


def inline_program(files: list[Path], include_dirs: list[Path], root: Path) -> Inlined:
    """Concatenate the translation units with local includes textually inlined (the 'with help' mode).

    No #line directives are emitted (the runtime adds its own); ``line_map`` maps lines back.
    """
    out: list[str] = []
    line_map: list[tuple[int, str, int]] = []
    once: set[Path] = set()
    count = [0]

    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(root))
        except ValueError:
            return str(p)

    def emit(path: Path, depth: int) -> None:
        if depth > 40:
            raise RuntimeError(f"include depth > 40 at {path}")
        text = path.read_text(errors="replace")
        if _PRAGMA_ONCE.search(text):
            if path in once:
                return
            once.add(path)
        lines = text.splitlines()
        line_map.append((count[0] + 1, rel(path), 1))
        for i, line in enumerate(lines, 1):
            m = _INCLUDE.match(line)
            target = _resolve(m.group(2), m.group(1) == '"', path.parent, include_dirs) if m else None
            if target is None:
                out.append(line)
                count[0] += 1
                continue
            out.append(f"// [inlined {m.group(2)}]")
            count[0] += 1
            emit(target, depth + 1)
            line_map.append((count[0] + 1, rel(path), i + 1))
        # a file without a final newline must not glue onto the next line
    for f in files:
        emit(f, 0)
    return Inlined("\n".join(out) + "\n", line_map)


# ----------------------------------------------------------------------------------------------
# running one program


@dataclass
class Result:
    name: str
    mode: str
    outcome: str
    detail: str = ""
    seconds: float = 0.0
    key: str = ""
    cause: str = ""
    output: str = ""  # tails of stdout/stderr of a non-pass (kept in --state, shown with --verbose)


def _first_diagnostic(exc: Exception, inl: Inlined | None) -> str:
    diags = [d for d in getattr(exc, "diagnostics", []) or [] if getattr(d, "severity", "error") == "error"]
    if diags:
        d = diags[0]
        where = f"{d.file}:{d.line}"
        if inl is not None:
            where = inl.where(d.line)
        return f"{where}: {d.message}"
    log = getattr(exc, "log", "") or str(exc)
    for line in log.splitlines():
        if "error" in line.lower():
            return line.strip()[:400]
    return (str(exc).strip().splitlines() or [""])[0][:400]


def _map_lines(msg: str, filename: str, inl: Inlined | None) -> str:
    if inl is None:
        return msg
    return re.sub(re.escape(filename) + r":(\d+)", lambda m: inl.where(int(m.group(1))), msg)


def _fault_line(stderr: str) -> str:
    for line in stderr.splitlines():
        if line.startswith("veriforge") or "kernel '" in line or "unsupported" in line.lower():
            return line.strip()
    lines = [x for x in stderr.strip().splitlines() if x.strip()]
    return lines[-1].strip() if lines else ""


def _check(p: Program, res, cwd: Path) -> tuple[bool, str]:
    out = res.stdout
    if p.exit_code is not None and res.returncode != p.exit_code:
        return False, f"exit {res.returncode}"
    for s in p.stdout_contains:
        if s not in out:
            return False, f"stdout lacks {s!r}"
    if p.stdout_regex and not re.search(p.stdout_regex, out, re.M):
        return False, f"stdout does not match /{p.stdout_regex}/"
    if p.fail_regex:
        m = re.search(p.fail_regex, out + "\n" + res.stderr, re.M)
        if m:
            return False, f"output matches /{p.fail_regex}/: {m.group(0)[:120]!r}"
    if p.output_file:
        f = cwd / p.output_file
        if not f.is_file():
            return False, f"no output file {p.output_file}"
        text = f.read_text(errors="replace")
        for s in p.output_contains:
            if s not in text:
                return False, f"{p.output_file} lacks {s!r}"
    return True, ""


def _prepare_cwd(p: Program, roots: dict[str, Path], work: Path) -> Path:
    cwd = work / p.cwd_subdir if p.cwd_subdir else work
    cwd.mkdir(parents=True, exist_ok=True)
    for d in p.data:
        src = roots[d.get("corpus", p.corpus)] / d["src"]
        dst = cwd / d.get("dst", Path(d["src"]).name)
        dst.parent.mkdir(parents=True, exist_ok=True)
        if d.get("xz"):
            with lzma.open(src) as fi, open(dst, "wb") as fo:
                shutil.copyfileobj(fi, fo)
        elif src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copy2(src, dst)
    os.chmod(work, 0o777)
    for dirpath, dirnames, filenames in os.walk(work):
        for n in dirnames:
            os.chmod(os.path.join(dirpath, n), 0o777)
        for n in filenames:
            os.chmod(os.path.join(dirpath, n), 0o666)
    return cwd


def needs_help(p: Program, corpus_root: Path) -> bool:
    base = corpus_root / p.dir
    files = [base / f for f in p.files]
    incs = [corpus_root / i for i in p.include_dirs]
    return len(files) > 1 or bool(p.flags) or bool(local_includes(files, incs))


def run_one(p: Program, mode: str, roots: dict[str, Path], rt_key: str) -> Result:
    from veriforge.cuda import cpu

    t0 = time.monotonic()
    corpus_root = roots[p.corpus]
    key = hashlib.sha256(f"{p.key()}|{mode}|{rt_key}|{sorted(EXTRA_DEFINES.items())}".encode()).hexdigest()[:16]
    base = corpus_root / p.dir
    files = [base / f for f in p.files]
    incs = [corpus_root / i for i in p.include_dirs]
    filename = re.sub(r"[^\w.+-]", "_", Path(p.files[0]).name)
    inl: Inlined | None = None
    r = Result(p.name, mode, "error", key=key)
    try:
        if mode == "native":
            if needs_help(p, corpus_root):
                if not hasattr(cpu, "Project"):
                    r.outcome, r.detail = "n/a", "several files / include dirs and no cpu.Project API yet"
                    return r
                # root = the repository: PolyBench's sources include "../../common/polybench.h"
                source = cpu.Project(files=[Path(f) for f in files], include_dirs=[Path(i) for i in incs],
                                     defines={**{k: str(v) for k, v in p.defines.items()}, **EXTRA_DEFINES},
                                     flags=list(p.flags), root=Path(corpus_root))
                defines = None
            else:
                source, defines = files[0].read_text(errors="replace"), {**p.defines, **EXTRA_DEFINES}
        else:
            inl = inline_program(files, incs, corpus_root)
            source, defines = inl.text, {**p.defines, **EXTRA_DEFINES}
        with tempfile.TemporaryDirectory(prefix=f"vfprog-{p.name}-") as tmp:
            cwd = _prepare_cwd(p, roots, Path(tmp))
            kwargs = dict(argv=tuple(p.argv), stdin=p.stdin.encode(), timeout=p.timeout, cwd=cwd)
            if p.read_data:
                kwargs["data"] = list(p.read_data)
            if defines:
                kwargs["defines"] = defines
            if mode != "native" or not hasattr(cpu, "Project") or not isinstance(source, getattr(cpu, "Project", ())):
                kwargs["filename"] = filename
            res = cpu.run_program(source, **kwargs)
            r.output = "--- stdout (tail) ---\n" + res.stdout[-3000:] + "\n--- stderr (tail) ---\n" + res.stderr[-3000:]
            if res.timed_out:
                r.outcome = "timeout"
                tail = [x for x in res.stdout.strip().splitlines() if x.strip()][-1:]
                r.detail = f"killed after {p.timeout:g} s" + (f"; last stdout: {tail[0][:150]!r}" if tail else "")
            elif res.returncode < 0:
                r.outcome = "crash"
                r.detail = _map_lines(_fault_line(res.stderr), filename, inl)
            else:
                ok, why = _check(p, res, cwd)
                if ok:
                    r.outcome = "pass"
                    r.output = ""
                else:
                    fault = re.search(r"^veriforge[^\n]*|kernel '[^\n]*|unsupported[^\n]*", res.stderr, re.M | re.I)
                    r.outcome = "fault" if fault else "wrong"
                    extra = _map_lines(fault.group(0) if fault else _fault_line(res.stderr), filename, inl)
                    last = [x for x in res.stdout.strip().splitlines() if x.strip()][-1:]
                    r.detail = why + (f"; stderr: {extra[:300]}" if extra else "") + \
                        (f"; last stdout: {last[0][:200]!r}" if last and not extra else "")
    except cpu.UnsupportedFeatureError as e:
        r.outcome, r.detail = "refused", _map_lines(" ".join(str(e).split())[:400], filename, inl)
    except cpu.CompileError as e:
        r.outcome, r.detail = "compile", _first_diagnostic(e, inl)[:400]
        r.output = (getattr(e, "log", "") or str(e))[:4000]
    except ValueError as e:
        if "compiler flag" not in str(e) and "flag" not in str(e):
            raise
        r.outcome, r.detail = "refused", f"cpu.Project rejects a build flag of the program: {e}"[:400]
    except cpu.ToolchainNotFoundError as e:
        r.outcome, r.detail = "error", f"toolchain: {e}"
    except Exception as e:
        r.outcome, r.detail = "error", f"{type(e).__name__}: {e}"[:400]
        traceback.print_exc(file=sys.stderr)
    finally:
        r.seconds = time.monotonic() - t0
        r.cause = classify(r)
    return r


def classify(r: Result) -> str:
    if r.outcome in ("pass", "n/a"):
        return ""
    if (r.name, r.outcome) in KNOWN:
        return KNOWN[(r.name, r.outcome)]
    for pat, label in CAUSES:
        m = re.search(pat, r.detail, re.I)
        if m:
            if label.startswith("undefined symbol") and m.lastindex:
                return f"undefined symbol {m.group(1)}"
            return label
    return "other"


def runtime_key() -> str:
    """Hash of the runtime's sources: results of another runtime version are not reused."""
    import veriforge.cuda.cpu as pkg

    h = hashlib.sha256()
    root = Path(pkg.__file__).parent
    for f in sorted(root.rglob("*")):
        if f.is_file() and f.suffix in (".py", ".h", ".hpp", ".cpp", ".S", ".c"):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


# ----------------------------------------------------------------------------------------------
# main


def _machine() -> str:
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{socket.gethostname()} {platform.machine()} {os.cpu_count()} cores {cpu_model}; " \
           f"{platform.system()} {platform.release()}; python {platform.python_version()}"


def _git(root: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%h %cd", "--date=short"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    ap.add_argument("--corpus", action="append", default=[], metavar="NAME=DIR",
                    help="location of a corpus named in the manifest (repeat)")
    ap.add_argument("--jobs", type=int, default=1, help="programs in parallel (at most 2)")
    ap.add_argument("--only", default="", help="regex on program names")
    ap.add_argument("--modes", default="native,inlined",
                    help="native (goal: no outside help) and/or inlined (headers inlined, files joined)")
    ap.add_argument("--timeout-scale", type=float, default=1.0)
    ap.add_argument("--state", type=Path, default=DEFAULT_STATE, help="JSON lines of every result")
    ap.add_argument("--resume", action="store_true", help="skip results already in --state")
    ap.add_argument("--out", type=Path, help="write the report here")
    ap.add_argument("--list", action="store_true", help="list the programs and exit")
    ap.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                    help="triage only: add a macro to every program (e.g. a missing legacy alias) to see "
                         "what fails next; the report says so")
    ap.add_argument("--report-only", action="store_true",
                    help="no runs: render the report from the latest result per program and mode in --state")
    ap.add_argument("--header", action="append", default=[], help="extra header line for the report")
    ap.add_argument("--verbose", "-v", action="store_true", help="print the output tails of every non-pass")
    args = ap.parse_args(argv)
    if args.jobs > 2:
        ap.error("--jobs is capped at 2 (shared machine)")

    corpora_meta, programs, excluded = load_manifest(args.manifest)
    if args.only:
        programs = [p for p in programs if re.search(args.only, p.name)]
    if args.list:
        for p in programs:
            print(f"{p.name:32} {p.corpus:14} {p.dir}  files={p.files} argv={p.argv}")
        print(f"{len(programs)} programs, {len(excluded)} excluded")
        return 0
    roots: dict[str, Path] = {}
    for spec in args.corpus:
        name, _, d = spec.partition("=")
        roots[name] = Path(d).resolve()
    needed = {p.corpus for p in programs} | {d["corpus"] for p in programs for d in p.data if "corpus" in d}
    missing = sorted(needed - roots.keys())
    if missing:
        for m in missing:
            meta = corpora_meta.get(m, {})
            print(f"corpus {m!r} not given: git clone {meta.get('url', '?')} DIR && "
                  f"git -C DIR checkout {meta.get('commit', '')}; then --corpus {m}=DIR", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for spec in args.define:
        k, _, v = spec.partition("=")
        EXTRA_DEFINES[k] = v

    rt_key = runtime_key()
    done: dict[str, Result] = {}
    if args.resume and args.state.exists():
        for line in args.state.read_text().splitlines():
            try:
                d = json.loads(line)
                done[d["key"]] = Result(**{k: v for k, v in d.items() if k in Result.__dataclass_fields__})
            except Exception:
                continue
    state_lock = threading.Lock()

    tasks = []
    for p in programs:
        if args.timeout_scale != 1.0:
            p.timeout = p.timeout * args.timeout_scale
        helped = needs_help(p, roots[p.corpus])
        for mode in modes:
            if mode == "inlined" and not helped:
                continue  # the native run is already the plain source string
            tasks.append((p, mode))

    if args.report_only:
        latest: dict[tuple[str, str], Result] = {}
        for line in args.state.read_text().splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            r = Result(**{k: v for k, v in d.items() if k in Result.__dataclass_fields__})
            r.cause = classify(r)
            latest[(r.name, r.mode)] = r
        start = dt.datetime.fromtimestamp(args.state.stat().st_mtime, dt.UTC)
        report = render(programs, modes, latest, excluded, corpora_meta, roots, start, float("nan"),
                        os.getloadavg(), "(from --state)", args)
        print(report)
        if args.out:
            args.out.write_text(report)
        return 0

    start = dt.datetime.now(dt.UTC)
    t0 = time.monotonic()
    load0 = os.getloadavg()
    print(f"# {start:%Y-%m-%d %H:%M:%S} UTC; runtime {rt_key}; {len(programs)} programs, {len(tasks)} runs, "
          f"jobs {args.jobs}; load {load0[0]:.2f}", flush=True)
    results: dict[tuple[str, str], Result] = {}
    counter = [0]

    def work(p: Program, mode: str) -> Result:
        key = hashlib.sha256(f"{p.key()}|{mode}|{rt_key}|{sorted(EXTRA_DEFINES.items())}".encode()).hexdigest()[:16]
        if key in done:
            r = done[key]
            r.detail = r.detail
            return r
        r = run_one(p, mode, roots, rt_key)
        with state_lock:
            with open(args.state, "a") as f:
                f.write(json.dumps(asdict(r)) + "\n")
        return r

    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = {ex.submit(work, p, mode): (p, mode) for p, mode in tasks}
        for fut in cf.as_completed(futs):
            p, mode = futs[fut]
            r = fut.result()
            results[(p.name, mode)] = r
            counter[0] += 1
            print(f"[{counter[0]:3}/{len(tasks)}] {p.name:30} {mode:7} {r.outcome:8} {r.seconds:6.1f}s  "
                  f"{r.detail[:160]}", flush=True)
            if args.verbose and r.outcome != "pass" and r.output:
                print("    " + r.output.replace("\n", "\n    "), flush=True)

    wall = time.monotonic() - t0
    report = render(programs, modes, results, excluded, corpora_meta, roots, start, wall, load0, rt_key, args)
    print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report)
    return 0


def render(programs, modes, results, excluded, corpora_meta, roots, start, wall, load0, rt_key, args) -> str:
    load1 = os.getloadavg()
    lines = []
    w = lines.append
    w("CPU runtime on real CUDA programs (benchmarks/cpu_runtime_programs.py)")
    w(f"date: {start:%Y-%m-%d %H:%M:%S} UTC; wall time {wall / 60:.1f} min; jobs {args.jobs}")
    w(f"machine: {_machine()}")
    w(f"load average: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} at start, "
      f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} at end")
    w(f"veriforge: {_git(REPO)} (+ uncommitted work in src/); runtime sources hash {rt_key}")
    for h in args.header:
        w(h)
    from veriforge.cuda import cpu
    w(f"cpu.Project API present: {hasattr(cpu, 'Project')}")
    if EXTRA_DEFINES:
        w(f"TRIAGE RUN - extra macros added to every program (not a goal measurement): {EXTRA_DEFINES}")
    for name, root in sorted(roots.items()):
        meta = corpora_meta.get(name, {})
        w(f"corpus {name}: {meta.get('url', '')} @ {meta.get('commit', '')[:12]} (local: {_git(root) or root})")
    w("")
    has_inl = "inlined" in modes
    # final column: native result, or for programs that need help and have no native result, inlined
    hdr = f"{'program':30} {'corpus':13} {'native':8} " + (f"{'inlined':8} " if has_inl else "") + "cause / detail"
    w(hdr)
    w("-" * len(hdr))
    totals = {m: {} for m in modes}
    helped_best: dict[str, int] = {}
    for p in programs:
        nat = results.get((p.name, "native")) if "native" in modes else None
        inl = results.get((p.name, "inlined")) if has_inl else None
        if inl is None and nat is not None and has_inl and nat.outcome != "n/a":
            inl_display = "="  # same as native (no help needed)
        else:
            inl_display = inl.outcome if inl else "-"
        for m, r in (("native", nat), ("inlined", inl)):
            if r is not None:
                totals[m][r.outcome] = totals[m].get(r.outcome, 0) + 1
        best = inl if (inl is not None) else nat
        if nat is not None and nat.outcome == "pass":
            best = nat  # with help = the better of the two
        if best is not None:
            helped_best[best.outcome] = helped_best.get(best.outcome, 0) + 1
        shown = [r for r in (nat, inl) if r is not None and r.outcome not in ("pass", "n/a")]
        detail = ""
        if shown:
            r = shown[0]
            detail = f"[{r.cause}] {r.detail}"
        w(f"{p.name:30} {p.corpus:13} {(nat.outcome if nat else '-'):8} "
          + (f"{inl_display:8} " if has_inl else "") + detail[:260])
    w("")
    n = len(programs)
    if "native" in modes:
        t = totals["native"]
        w(f"native (goal: no outside help), {n} programs: "
          + ", ".join(f"{k} {t[k]}" for k in OUTCOMES if t.get(k))
          + f"  -> pass rate {100 * t.get('pass', 0) / max(n, 1):.0f}%")
    if has_inl:
        w(f"with help (headers inlined + files joined where needed, else the native run), {n} programs: "
          + ", ".join(f"{k} {helped_best[k]}" for k in OUTCOMES if helped_best.get(k))
          + f"  -> pass rate {100 * helped_best.get('pass', 0) / max(n, 1):.0f}%")
    # causes
    w("")
    w("causes of non-passes in the goal column (native; inlined where native is n/a), automatic first guess:")
    groups: dict[str, list[str]] = {}
    for p in programs:
        inl = results.get((p.name, "inlined"))
        nat = results.get((p.name, "native"))
        r = nat if nat is not None and nat.outcome != "n/a" else inl
        if r is None or r.outcome == "pass":
            continue
        groups.setdefault(f"{r.outcome}: {r.cause}", []).append(p.name)
    for k, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        w(f"  {len(v):3}  {k}: {', '.join(v)}")
    w("")
    w(f"excluded ({len(excluded)}; reasons in the manifest):")
    for e in excluded:
        w(f"  {e.get('name', e.get('dir', '?')):32} {e.get('reason', '')}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
