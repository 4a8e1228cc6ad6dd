"""Building the CPU runtime and user programs with the system C++ compiler.

The runtime's C++ sources ship inside the package (``runtime/``) and are compiled on first use
into ``cache_dir("cpu-runtime")/<key>``, where the key hashes the sources, the compiler's
version, the flags and the CUDA header directory - so upgrading any of them rebuilds, and
nothing else ever does. The same directory holds a precompiled header of the force-included
``vf_cuda.h`` (it pulls in most of the standard library and CUDA's host headers; precompiling
it roughly halves the time to compile a small kernel, and cuts a sanitized one to a third: every
variant has its own, built with that variant's flags) and the compiled user executables, keyed
by the hash of their final source. Every artefact is written to a temporary name and renamed
into place, so concurrent processes sharing a cache never see half-written files.

Tamper evidence (see :mod:`veriforge.core.integrity`): the cache folder is private (0700); a
built runtime carries a signed ``MANIFEST`` (every file's SHA-256, size and inode/mtime/ctime) and
each executable a ``<exe>.sig``. A runtime or executable whose signature does not verify, or whose
files changed, is never used: the runtime is moved aside and rebuilt (under a lock), the executable
rebuilt and replaced.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veriforge.core import integrity
from veriforge.core.paths import cache_dir
from veriforge.errors import ToolchainNotFoundError, UnsupportedFeatureError

from .arch import apply_arch
from .errors import CompileError, Diagnostic
from .regions import has_region_code, region_induced, region_ranges, strip_region_code

__all__ = [
    "BuiltRuntime",
    "HostCompiler",
    "build_executable",
    "find_cuda_include",
    "host_compiler",
    "runtime",
]

RUNTIME_SRC = Path(__file__).parent / "runtime"
_OBJECTS = ("scheduler", "host_api", "graphs", "device_launch", "textures", "cooperative", "worker_main")
# -fno-delete-null-pointer-checks: a kernel's store through a null pointer must fault (as on a GPU), not be
# optimised away as undefined behaviour once the launch's constant nullptr is inlined into the block loop.
_BASE_FLAGS = ["-std=c++20", "-pthread", "-fno-strict-aliasing", "-fno-delete-null-pointer-checks",
               "-fdiagnostics-plain-output", "-fno-diagnostics-show-caret"]
_FAST_FLAGS = ["-O2", "-g1"]
# g++ only: its -O2 vectorises only loops whose trip count needs no epilogue; the region loops
# (regions.py: one iteration per thread of a block, `#pragma GCC ivdep`) rarely qualify.
_GCC_FAST_FLAGS = ["-fvect-cost-model=cheap"]
_ASAN_FLAGS = ["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"]
#: What a built runtime holds besides its objects; part of the key, so a runtime built by an older
#: recipe (an AddressSanitizer variant without its precompiled header) is rebuilt once, not kept.
_RECIPE = "objects+pch(every variant)"
SHIM_FILE = "<veriforge-launch-shims>"
MANIFEST = "MANIFEST"
_log = logging.getLogger(__name__)
_build_lock = threading.Lock()


@dataclass(frozen=True)
class HostCompiler:
    path: str
    version: str


@functools.cache
def _compiler_at(path: str) -> HostCompiler:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainNotFoundError(f"C++ compiler {path!r} does not run: {exc}") from exc
    return HostCompiler(path=path, version=out.stdout.splitlines()[0] if out.stdout else path)


def host_compiler() -> HostCompiler:
    """The C++20 compiler used for the runtime and user code: $CXX, else g++, c++, clang++."""
    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if name:
            path = shutil.which(name)
            if path:
                return _compiler_at(path)
    raise ToolchainNotFoundError(
        "the CPU CUDA runtime needs a C++20 compiler (g++ >= 11 or clang++); none was found on PATH "
        "(install g++ or set CXX)"
    )


def find_cuda_include() -> Path | None:
    """A directory with CUDA's host headers (cuda_runtime.h, vector_types.h, cuda_fp16.h), or None.

    Looked up in $CUDA_HOME / $CUDA_PATH, next to an ``nvcc`` on PATH, /usr/local/cuda, and in
    PyPI's ``nvidia-cuda-runtime`` wheel. ``VERIFORGE_CPU_CUDA_HEADERS=0`` forces the runtime's
    own minimal definitions (no __half / __nv_bfloat16 then).
    """
    if os.environ.get("VERIFORGE_CPU_CUDA_HEADERS", "").strip().lower() in ("0", "no", "false", "off"):
        return None
    candidates: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "include")
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(Path(nvcc).resolve().parent.parent / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    for sp in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path}:
        base = Path(sp) / "nvidia"
        candidates += [base / "cuda_runtime" / "include", base / "cu13" / "include", base / "cu12" / "include"]
    for c in candidates:
        if (c / "cuda_runtime.h").is_file() and (c / "vector_types.h").is_file():
            return c.resolve()
    return None


def _runtime_files() -> list[Path]:
    return sorted(p for p in RUNTIME_SRC.rglob("*") if p.is_file() and p.suffix in (".h", ".hpp", ".cpp", ".S"))


@dataclass(frozen=True)
class BuiltRuntime:
    """A compiled copy of the runtime in the cache."""

    root: Path
    key: str
    compiler: HostCompiler
    cuda_include: Path | None
    sanitize: bool
    shared: bool = False
    """Lent read-only by the harness to a sandboxed process (``VERIFORGE_SHARED_RUNTIME``): the
    process builds its executables in its own cache instead of ``root/bin``."""

    @property
    def flags(self) -> list[str]:
        fast = [*_FAST_FLAGS, *(_GCC_FAST_FLAGS if "clang" not in self.compiler.version.lower() else [])]
        flags = [*_BASE_FLAGS, *(_ASAN_FLAGS if self.sanitize else fast), f"-I{self.root}",
                 f"-I{self.root / 'include'}"]
        if self.cuda_include is not None:
            flags += ["-DVF_HAVE_CUDA_HEADERS", "-isystem", str(self.cuda_include)]
        return flags

    @property
    def link_flags(self) -> list[str]:
        return list(fast_linker(self.compiler.path))

    def objects(self, kind: str) -> list[str]:
        names = ["scheduler", "host_api", "graphs", "device_launch", "textures", "cooperative", "fiber"]
        names += ["worker_main"] if kind == "module" else []
        return [str(self.root / f"{n}.o") for n in names]

    def scrub(self, text: str) -> str:
        """Hide runtime-internal paths from messages shown to users."""
        return text.replace(str(self.root) + "/", "<veriforge-runtime>/").replace(str(self.root), "<veriforge-runtime>")


_runtimes: dict[tuple, BuiltRuntime] = {}


@functools.cache
def fast_linker(compiler_path: str) -> tuple[str, ...]:
    """``("-fuse-ld=gold",)`` where gold links a C++ program with this compiler, else ``()``.

    Every candidate is linked against the runtime's objects; GNU ld took ~0.12 s of that, gold
    ~0.04 s (a whole small-kernel compile is ~0.5 s). Probed once per process, at the first link,
    on a trivial program, so a machine without gold (or a compiler that refuses the flag) keeps the
    default. Not part of the runtime's key: the runtime's objects do not depend on the linker, and
    a process the harness lends the runtime to (``VERIFORGE_SHARED_RUNTIME``) must find it under
    the same name whatever its own probe says; an executable linked by either linker is as good."""
    if shutil.which("ld.gold") is None:
        return ()
    with tempfile.TemporaryDirectory(prefix="vf-ld-probe-") as tmp:
        try:
            done = subprocess.run([compiler_path, "-fuse-ld=gold", "-pthread", "-x", "c++", "-", "-o",
                                   str(Path(tmp) / "a.out")], input="int main() { return 0; }\n",
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return ()
    return ("-fuse-ld=gold",) if done.returncode == 0 else ()


def runtime(sanitize: bool = False) -> BuiltRuntime:
    """The compiled runtime for this compiler / CUDA headers / mode, building it if needed."""
    compiler = host_compiler()
    cuda_include = find_cuda_include()
    h = hashlib.sha256()
    for f in _runtime_files():
        h.update(str(f.relative_to(RUNTIME_SRC)).encode())
        h.update(f.read_bytes())
    h.update(compiler.version.encode())
    h.update(compiler.path.encode())
    h.update(str(cuda_include).encode())
    h.update(repr((_BASE_FLAGS, _FAST_FLAGS, _GCC_FAST_FLAGS, _ASAN_FLAGS, sanitize, _RECIPE)).encode())
    key = h.hexdigest()[:20]
    name = key + ("-asan" if sanitize else "")
    shared = os.environ.get(SHARED_ENV)
    if shared and (Path(shared) / name / "READY").is_file():
        # A sandboxed process: the harness built this runtime and lent it read-only (the process
        # cannot read the signing key, and cannot change these files either).
        return BuiltRuntime(root=Path(shared) / name, key=key, compiler=compiler, cuda_include=cuda_include,
                            sanitize=sanitize, shared=True)
    root = cache_dir("cpu-runtime", private=True) / name
    memo = (str(root),)
    if memo in _runtimes and (root / "READY").exists():
        return _runtimes[memo]  # verified by this process already
    rt = BuiltRuntime(root=root, key=key, compiler=compiler, cuda_include=cuda_include, sanitize=sanitize)
    if _runtime_problem(root) is not None:
        with _build_lock, _file_lock(root.parent / f".{root.name}.lock"):
            problem = _runtime_problem(root)  # re-check: another process may have rebuilt it meanwhile
            if problem is not None:
                if root.exists():
                    _log.warning("the cached CPU runtime %s is not trusted (%s); rebuilding it", root, problem)
                    _set_aside(root)
                _build_runtime(rt)
    _runtimes[memo] = rt
    return rt


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (across processes)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _set_aside(root: Path) -> None:
    """Move an untrusted runtime out of the way (atomically) and delete it."""
    aside = root.with_name(f"{root.name}.untrusted-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(root, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def _runtime_files_on_disk(root: Path) -> dict[str, os.stat_result]:
    """Every entry of a built runtime that its manifest covers (all but ``bin/`` and the manifest)."""
    found: dict[str, os.stat_result] = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        if rel_folder == ".":
            dirs[:] = [d for d in dirs if d != "bin"]
            files = [f for f in files if f not in (MANIFEST, MANIFEST + integrity.SIG_SUFFIX)]
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            rel = os.path.normpath(os.path.join(rel_folder, name))
            found[rel] = os.lstat(os.path.join(folder, name))
    return found


def _manifest_text(root: Path) -> str:
    lines = []
    for rel, st in sorted(_runtime_files_on_disk(root).items()):
        if not os.path.isfile(root / rel) or os.path.islink(root / rel):
            raise ToolchainNotFoundError(f"building the CPU runtime produced an unexpected entry {rel}")
        digest = integrity.file_digest(root / rel)
        lines.append(f"{digest} {st.st_size} {st.st_ino} {st.st_mtime_ns} {st.st_ctime_ns} {rel}")
    return "\n".join(lines) + "\n"


def _sign_runtime(root: Path, name: str) -> None:
    text = _manifest_text(root)
    (root / MANIFEST).write_text(text)
    integrity.write_signature(root / MANIFEST, integrity.sign("cpu-runtime", name, text))


def _runtime_problem(root: Path) -> str | None:
    """Why the runtime at ``root`` cannot be trusted, or None if it can.

    The manifest's signature must verify, and every file must be the one it lists: same
    inode/size/mtime/ctime as when signed (ctime cannot be set back by anyone but root), or else
    the same SHA-256. Files added or removed (a header that would shadow a system one) fail too.
    """
    if not (root / "READY").is_file():
        return "not built"
    try:
        text = (root / MANIFEST).read_text()
        sig = integrity.signature_path(root / MANIFEST).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return "no manifest"
    if not integrity.verify(sig, "cpu-runtime", root.name, text):
        return "the manifest's signature does not verify"
    listed: dict[str, tuple[str, int, tuple[int, int, int]]] = {}
    for line in text.splitlines():
        digest, size, ino, mtime, ctime, rel = line.split(" ", 5)
        listed[rel] = (digest, int(size), (int(ino), int(mtime), int(ctime)))
    try:
        on_disk = _runtime_files_on_disk(root)
    except OSError as exc:
        return f"cannot list it: {exc}"
    if set(on_disk) != set(listed):
        changed = sorted(set(on_disk) ^ set(listed))
        return "files added or removed: " + ", ".join(changed[:5])
    for rel, st in on_disk.items():
        digest, size, ident = listed[rel]
        if not os.path.isfile(root / rel) or os.path.islink(root / rel) or st.st_size != size:
            return f"{rel} changed"
        if (st.st_ino, st.st_mtime_ns, st.st_ctime_ns) == ident:
            continue
        try:
            if integrity.file_digest(root / rel) != digest:
                return f"{rel} changed"
        except OSError as exc:
            return f"cannot read {rel}: {exc}"
    return None


SHARED_ENV = "VERIFORGE_SHARED_RUNTIME"


def _make_lendable(rt: BuiltRuntime) -> None:
    """Let other uids read the runtime (objects and headers; ``bin/`` stays private): runtimes
    built before they were lent to sandboxes were 0700."""
    mode = rt.root.stat().st_mode & 0o777
    if mode & 0o005 != 0o005:
        os.chmod(rt.root, mode | 0o055)


def lend_runtime(sanitize: bool = False) -> tuple[dict[str, str], list[str]]:
    """What a sandboxed process needs to compile against this machine's runtime without
    rebuilding it: the environment variable and the paths to expose read-only. The runtime is
    built (by us, trusted) if needed, and made traversable by other uids."""
    rt = runtime(sanitize)
    _make_lendable(rt)
    return {SHARED_ENV: str(rt.root.parent)}, [str(rt.root)]


def _build_runtime(rt: BuiltRuntime) -> None:
    rt.root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=rt.root.name + ".tmp-", dir=rt.root.parent))
    try:
        shutil.copytree(RUNTIME_SRC, tmp, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.gch", "*.o"))
        os.chmod(tmp, 0o755)  # readable by sandboxed builds (objects and headers only; bin/ stays 0700)
        staged = BuiltRuntime(root=tmp, key=rt.key, compiler=rt.compiler, cuda_include=rt.cuda_include,
                              sanitize=rt.sanitize)
        jobs: list[tuple[list[str], str]] = []
        for name in _OBJECTS:
            jobs.append(([rt.compiler.path, *staged.flags, "-c", f"{name}.cpp", "-o", f"{name}.o"], name))
        jobs.append(([rt.compiler.path, "-c", "fiber_x86_64.S", "-o", "fiber.o"], "fiber"))
        # Precompiled force-include header, for the AddressSanitizer variant too (its compiles parse
        # vf_cuda.h with -O1 -g: ~2.7 s of CPU for a small kernel without it, ~0.9 s with it). g++
        # uses it only with exactly the flags it was built with, which are this variant's.
        jobs.append(([rt.compiler.path, *staged.flags, "-x", "c++-header", "vf_cuda.h", "-o", "vf_cuda.h.gch"],
                     "precompiled header"))
        procs = [(subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), what)
                 for cmd, what in jobs]
        failures = []
        for proc, what in procs:
            out, _ = proc.communicate(timeout=600)
            if proc.returncode != 0:
                failures.append(f"{what}:\n{out}")
        if failures:
            raise ToolchainNotFoundError(
                f"building the CPU runtime with {rt.compiler.version} failed (a C++20 compiler is required):\n"
                + staged.scrub("\n".join(failures))[-4000:]
            )
        (tmp / "READY").write_text(rt.compiler.version + "\n")
        _sign_runtime(tmp, rt.root.name)
        try:
            os.replace(tmp, rt.root)  # atomic publish; loses harmlessly to a concurrent builder
        except OSError:
            if not (rt.root / "READY").exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


# ---- user executables -------------------------------------------------------------------------

_DIAG = re.compile(r"^(?P<file>[^:\n]+?):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning|note): "
                   r"(?P<msg>.*)$", re.M)
_INCLUDED_FROM = re.compile(r"^(?:In file included from|\s+from) (?P<file>[^:\n]+?):(?P<line>\d+)[:,]", re.M)
_REQUIRED = re.compile(r"^(?P<file>[^:\n]+?):(?P<line>\d+):(?P<col>\d+):\s+required (?:from|by)", re.M)
_UNDEFINED = re.compile(r"undefined reference to [`']([^'`]+)'")  # GNU ld: `name', gold: 'name'


_LOCKSTEP_TYPE = re.compile(r"(?:::)?\bvf::LockstepPtr<\s*(const\s+)?([^<>]*?)\s*>")
_INTERNAL_NAME = re.compile(r"(?:::)?\bvf::[\w:]+(?:<[^<>]*(?:<[^<>]*>[^<>]*)*>)?(?:::\w+)*"
                            r"|\bvf_(?:volatile|probe)_(\w+)")


def public_message(message: str) -> str:
    """A compiler message in the user's terms: the CPU runtime rewrites some source (``volatile T*``
    in device code becomes ``vf::LockstepPtr<T>``, a parameter ``p`` becomes ``vf_volatile_p``), and
    the names of that rewrite must never reach the user. Types go back to what the user wrote; any
    other runtime name becomes "the CPU runtime's <what>"."""
    message = _LOCKSTEP_TYPE.sub(lambda m: f"volatile {m.group(1) or ''}{m.group(2)}*", message)
    # "volatile int*::LockstepPtr(size_t)": the constructor of the rewritten type is a conversion
    message = re.sub(r"(?:no matching function for )?call to '(volatile [^']*\*)::LockstepPtr\(([^']*)\)'",
                     r"invalid conversion from '\2' to '\1'", message)
    return _INTERNAL_NAME.sub(lambda m: m.group(1) or "<CPU-runtime internal>", message)


def parse_diagnostics(log: str, user_file: str, user_files: Sequence[str] = ()) -> list[Diagnostic]:
    """Compiler errors mapped to the user's file and line.

    An error inside a runtime header is attributed to the user line that led there (the
    ``required from here`` instantiation note or the ``#include`` line), never shown as if the
    runtime's internals were the user's code.
    """
    diags: list[Diagnostic] = []
    pending: Diagnostic | None = None
    include_site: tuple[int, int] | None = None
    site_file = user_file
    many = set(user_files)

    def users(file: str) -> str | None:
        if file in many:
            return file
        return user_file if Path(file).name == user_file or file == user_file else None

    for raw in log.splitlines():
        inc = _INCLUDED_FROM.match(raw)
        if inc and users(inc.group("file")):
            include_site = (int(inc.group("line")), 0)
            site_file = users(inc.group("file")) or user_file
            continue
        req = _REQUIRED.match(raw)
        if req:
            if users(req.group("file")):
                include_site = (int(req.group("line")), int(req.group("col")))
                site_file = users(req.group("file")) or user_file
                if pending is not None and pending.line == 0:
                    pending = Diagnostic(file=site_file, line=include_site[0], column=include_site[1],
                                         severity="error", message=pending.message)
            continue
        m = _DIAG.match(raw)
        if not m:
            continue
        file, sev, msg = m.group("file"), m.group("sev"), public_message(m.group("msg").strip())
        line, col = int(m.group("line")), int(m.group("col") or 0)
        owner = users(file)
        if sev in ("error", "fatal error"):
            if pending is not None:
                diags.append(pending)
            if owner:
                diags.append(Diagnostic(file=owner, line=line, column=col, severity="error", message=msg))
                pending = None
            else:
                where = include_site or (0, 0)
                pending = Diagnostic(file=site_file, line=where[0], column=where[1], severity="error", message=msg)
            include_site = None
        elif sev == "note" and pending is not None and owner and "required from" in msg:
            pending = Diagnostic(file=owner, line=line, column=col, severity="error", message=pending.message)
        elif sev == "warning" and owner:
            diags.append(Diagnostic(file=owner, line=line, column=col, severity="warning", message=msg))
    if pending is not None:
        diags.append(pending)
    return diags


def _first_use(names: Sequence[str], sources: Mapping[str, str]) -> str | None:
    """``file:line: code`` of the first call of one of ``names`` (C++ symbols as the linker
    printed them: ``cudaStreamAddCallback`` or ``cudaFoo(int*, ...)``) in the user's files."""
    from .source import _Scopes, line_of, mask_source

    bare = [re.escape(n.split("(")[0].split("::")[-1]) for n in names]
    pattern = re.compile(r"\b(?:" + "|".join(bare) + r")\b")
    declared = None
    for file, text in sources.items():
        masked = mask_source(text)
        hits = list(pattern.finditer(masked))
        if not hits:
            continue
        scopes = _Scopes(masked)
        use = next((m for m in hits if scopes.in_function(m.start())), None)  # a call, not the declaration
        if use is not None or declared is None:
            line = line_of(text, (use or hits[0]).start())
            where = f"{file}:{line}: {text.splitlines()[line - 1].strip()[:120]}"
            if use is not None:
                return where
            declared = where
    return declared


def _named_use(symbol: str, sources: Mapping[str, str]) -> str:
    """``name (file:line: code)`` of the first use of a function the linker could not find."""
    name = symbol.split("(")[0].strip()
    where = _first_use([symbol], sources)
    return f"{name} ({where})" if where else name


def _raise_for_build_failure(rt: BuiltRuntime, log: str, user_file: str, source: str,
                             sources: Mapping[str, str] | None = None) -> None:
    log = rt.scrub(log)
    undefined = sorted(set(_UNDEFINED.findall(log)))
    cuda_missing = [u for u in undefined if re.match(r"(cuda|cu[A-Z]|cublas|cufft|curand|cusparse|nvrtc)", u)]
    if cuda_missing:
        raise UnsupportedFeatureError(
            "CUDA API function(s) not supported by the CPU runtime: "
            + "; ".join(_named_use(u, sources or {user_file: source}) for u in cuda_missing[:8])
        )
    diags = [d for d in parse_diagnostics(log, user_file, list(sources or ())) if d.severity == "error"]
    # a header's error repeats in every translation unit that includes it, and an error in a kernel
    # in its block function (regions.py) and in its fiber path: once each
    diags = list(dict.fromkeys(diags))
    for d in diags:
        if "not supported on the CPU" in d.message or "needs CUDA's headers" in d.message:
            raise UnsupportedFeatureError(f"{d.message.strip(chr(34))} ({d.file}:{d.line})")
    if undefined and not diags:
        raise CompileError(f"link error: undefined reference to {', '.join(undefined[:5])}", [], log)
    if not diags:
        raise CompileError(f"compiling {user_file} failed:\n{log[-2000:]}", [], log)
    first = diags[0]
    lines = (sources or {}).get(first.file, source).splitlines()
    code = lines[first.line - 1].strip() if 0 < first.line <= len(lines) else ""
    more = f" (and {len(diags) - 1} more error(s))" if len(diags) > 1 else ""
    text = f"{first.file}:{first.line}:{first.column}: error: {first.message}{more}"
    if code:
        text += f"\n    {first.line} | {code}"
    raise CompileError(text, diags, log)


def _publish(built: Path, exe: Path, sign_parts: Any, what: str, log: str) -> Path:
    """Copy a freshly linked executable into the cache as ``exe``: signed, then renamed into place."""
    if built.is_symlink() or not built.is_file():
        raise CompileError(f"compiling {what} produced no executable", [], log)
    staged = exe.parent / f".{exe.name}.{uuid.uuid4().hex[:8]}"
    shutil.copyfile(built, staged)
    os.chmod(staged, 0o755)
    integrity.sign_file(staged, *sign_parts)
    # signature first: a concurrent reader that finds the executable always finds its signature
    os.replace(integrity.signature_path(staged), integrity.signature_path(exe))
    os.replace(staged, exe)
    return exe


def build_executable(rt: BuiltRuntime, text: str, *, kind: str, user_file: str, user_source: str,
                     timeout: float = 600.0) -> Path:
    """Compile and link ``text`` (already rewritten, with its #line preamble) into an executable.

    ``kind`` is ``"module"`` (linked with the kernel server) or ``"program"`` (the user's main).
    Cached by content: the same text with the same runtime is compiled once.
    """
    key = hashlib.sha256(f"{rt.key}|{rt.sanitize}|{kind}|{user_file}\n{text}".encode()).hexdigest()[:24]
    out_dir = cache_dir("cpu-bin", private=True) / rt.root.name if rt.shared else rt.root / "bin"
    out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    exe = out_dir / f"{kind}-{key}"
    if _region_build_failed(exe):
        return build_executable(rt, strip_region_code(text), kind=kind, user_file=user_file,
                                user_source=user_source, timeout=timeout)
    sign_parts = ("cpu-exe", rt.root.name, exe.name)
    if exe.exists():
        if integrity.verify_file(exe, *sign_parts):
            return exe
        _log.warning("cached executable %s has no valid signature; rebuilding it", exe)
    # The source is untrusted (a model wrote it): the compiler runs in the sandbox, in a private
    # folder, with only the runtime's headers and objects lent read-only, so an #include of a
    # secret file or of the cache finds nothing.
    tmp = Path(tempfile.mkdtemp(prefix=f"vf-build-{kind}-"))
    try:
        (tmp / "src.cpp").write_text(text)
        cmd = [rt.compiler.path, *rt.flags, "-x", "c++", "-include", str(rt.root / "vf_cuda.h"), "src.cpp",
               "-x", "none", *rt.objects(kind), *rt.link_flags, "-o", "a.out", "-ldl"]
        code, log = _compile_confined(cmd, tmp, timeout, rt, user_file)
        if code != 0:
            if has_region_code(text) and region_induced(log, region_ranges(text)):
                _note_region_build_failed(exe, log)
                return build_executable(rt, strip_region_code(text), kind=kind, user_file=user_file,
                                        user_source=user_source, timeout=timeout)
            _raise_for_build_failure(rt, log, user_file, user_source)
        return _publish(tmp / "a.out", exe, sign_parts, user_file, log)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _region_build_failed(exe: Path) -> bool:
    return exe.with_name(exe.name + ".no-regions").exists()


def _note_region_build_failed(exe: Path, log: str) -> None:
    """The block functions of regions.py did not compile: the build is retried without them (every
    kernel on the fiber path), and this text is built that way from now on. Logged at debug level:
    the fallback is the runtime's own business, and its log names runtime internals the user never wrote."""
    _log.debug("region splitting produced code that does not compile (%s); building %s without it",
                 log.strip().splitlines()[-1][:200] if log.strip() else "?", exe.name)
    with contextlib.suppress(OSError):
        exe.with_name(exe.name + ".no-regions").write_text(log[-4000:])


def _compile_confined(cmd: list[str], cwd: Path, timeout: float, rt: BuiltRuntime, user_file: str,
                      extra_expose: Sequence[str] = ()) -> tuple[int, str]:
    """Run the host compiler on untrusted source in the sandbox (see docs/sandbox.md);
    ``extra_expose``: read-only folders it may also read (a project's system include dirs)."""
    from veriforge.sandbox import ToolTimeoutError, run_tool

    if not rt.shared:
        _make_lendable(rt)
    expose = [str(rt.root)] + ([str(rt.cuda_include)] if rt.cuda_include else []) + list(extra_expose)
    try:
        code, log, _ = run_tool(cmd, cwd=cwd, timeout=timeout, expose=expose, memory_mb=None)
    except ToolTimeoutError as exc:
        raise CompileError(f"compiling {user_file} took longer than {timeout:.0f} s", [], "") from exc
    return code, log


# ---- projects: several translation units, user headers rewritten in a staged tree -------------

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include(?:_next)?[ \t]*(?:"(?P<q>[^"\n]+)"|<(?P<a>[^>\n]+)>|(?P<m>[A-Za-z_]\w*))',
                      re.M)
_HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".h++", ".cuh", ".inl", ".inc", ".ipp", ".tcc", ".tpp",
                    ".cu", ".cpp", ".cc", ".cxx", ".c", ".def")
MAX_PROJECT_FILES = 4000
MAX_FILE_BYTES = 16 * 1024 * 1024
TREE = "t"
HOST_TREE = "h"


@dataclass
class ProjectFile:
    """One user file of a project: a source (translation unit) or a header it includes."""

    path: Path  # the original, absolute
    display: str  # how diagnostics name it (relative to the project's root when inside it)
    text: str
    scanned: Any  # source.ScannedSource
    includes: list[Path] = field(default_factory=list)  # the user files its #includes name
    kind: str = "header"
    """For a translation unit: ``"cuda"`` (a ``.cu``, or a C++ file with kernels or launches, as
    ``nvcc -x cu`` would compile it), ``"c++"`` (a host-only C++ file: compiled by the host compiler
    alone, as nvcc does - without CUDA's headers forced in and without rewrites) or ``"c"``."""

    @property
    def staged(self) -> str:
        """Its path in the build folder's staged CUDA tree (rewritten files; the original's absolute
        path under ``t/``)."""
        return f"{TREE}{self.path}"

    @property
    def host_staged(self) -> str:
        """Its path in the staged host tree (files as written, for host-only C/C++ units; ``h/``)."""
        return f"{HOST_TREE}{self.path}"

    def staged_as_unit(self) -> str:
        return self.staged if self.kind == "cuda" else self.host_staged


_CUDA_MARKS = re.compile(r"\b(?:__global__|__device__|__shared__|__constant__)\b|<\s*<\s*<")


@dataclass
class ProjectSources:
    """A :class:`~veriforge.cuda.cpu.source.Project` read from disk: its sources and every user
    header reachable through ``#include`` (quoted: next to the including file, then the include
    dirs; angled: the include dirs), each with its text."""

    project: Any  # source.Project
    units: list[ProjectFile]
    headers: list[ProjectFile]

    @property
    def files(self) -> list[ProjectFile]:
        return [*self.units, *self.headers]

    @property
    def cuda_units(self) -> list[ProjectFile]:
        return [u for u in self.units if u.kind == "cuda"]

    def by_display(self) -> dict[str, str]:
        return {f.display: f.text for f in self.files}

    def include_flags(self, tree: str = TREE) -> list[str]:
        flags: list[str] = []
        for d in self.project.include_dirs:
            flags.append(f"-I{tree}{d}")
        for d in self.project.system_include_dirs:
            flags += ["-isystem", str(d)]
        return flags

    def define_flags(self) -> list[str]:
        return [f"-D{name}" if value is None else f"-D{name}={value}" for name, value in self.project.defines.items()]

    def expose(self) -> list[str]:
        return [str(d) for d in self.project.system_include_dirs if d.is_dir()]

    def closure(self, unit: ProjectFile) -> list[ProjectFile]:
        """``unit`` and the user headers it may include (textually: also under ``#if 0``)."""
        index = {f.path: f for f in self.files}
        order, todo = [unit], list(unit.includes)
        seen = {unit.path}
        while todo:
            p = todo.pop(0)
            if p in seen or p not in index:
                continue
            seen.add(p)
            order.append(index[p])
            todo.extend(index[p].includes)
        return order

    def staged_texts(self, *, probe: bool = False) -> dict[str, str]:
        """The staged trees: every file rewritten (launches, ``extern __shared__``, ``volatile``)
        under ``t/`` for the CUDA units, and as written under ``h/`` for the host-only units, each
        with a ``#line`` naming the original so diagnostics, ``__FILE__`` and asserts name the
        user's file. ``probe``: the race check's interleaving probe (``rewrite(..., probe=True)``)."""
        from .regions import RegionContext
        from .source import launch_targets, rewrite

        texts = {}
        host = {f.path for u in self.units if u.kind != "cuda" for f in self.closure(u)}
        cuda = {f.path for u in self.cuda_units for f in self.closure(u)}
        targets = launch_targets([f.scanned for f in self.files if f.path in cuda])
        # which functions and macros of the whole project synchronise (region splitting, regions.py)
        context = None if probe else RegionContext.from_texts(f.text for f in self.files if f.path in cuda)
        for f in self.files:
            head = f"#line 1 {line_name(f.display)}\n"
            if f.path in cuda:
                texts[f.staged] = f"{head}{rewrite(f.scanned, probe=probe, targets=targets, region_context=context)}\n"
            if f.path in host:
                texts[f.host_staged] = f"{head}{f.text}\n"
        return texts

    def check_supported(self, rt: BuiltRuntime) -> None:
        """Refuse (UnsupportedFeatureError naming ``file:line``) a feature the runtime cannot
        execute that the compiler would actually see: found textually first, then confirmed
        by the preprocessor (``#if 0``, ``#ifdef __CUDA_ARCH__``) if anything was found."""
        from .source import find_unsupported

        found = [r for f in self.files for r in find_unsupported(f.scanned, f.display)]
        if not found:
            return
        texts = {f.staged: f"#line 1 {line_name(f.display)}\n{preprocessable(apply_arch(f.text, f.scanned.masked))}\n"
                 for f in self.files}
        flags = [*self.project.cxx_flags, *self.include_flags(), *self.define_flags()]
        kept = active_lines(rt, texts, [u.staged for u in self.units], flags,
                            self.expose())
        if kept is None:
            raise UnsupportedFeatureError(found[0].message())
        for f in self.files:
            refusals = find_unsupported(f.scanned, f.display, kept.get(f.display, set()))
            if refusals:
                raise UnsupportedFeatureError(refusals[0].message())


def line_name(display: str) -> str:
    """A file name as a ``#line`` directive's string literal."""
    return '"' + display.replace("\\", "\\\\").replace('"', '\\"') + '"'


def preprocessable(text: str) -> str:
    """``text`` with each ``#include`` of a refused header (``<mma.h>``, CUB…) replaced by a marker
    line, so preprocessing needs none of them and still tells whether the line is active."""
    from .source import unsupported_include_lines

    marked = set(unsupported_include_lines(text))
    if not marked:
        return text
    lines = text.split("\n")
    return "\n".join(INCLUDE_MARKER if i in marked else line for i, line in enumerate(lines, 1))


def check_source_supported(rt: BuiltRuntime, scanned: Any, filename: str, prelude: str = "") -> None:
    """:meth:`ProjectSources.check_supported` for a single source string (``prelude``: its
    ``#define`` lines)."""
    from .source import find_unsupported

    found = find_unsupported(scanned, filename)
    if not found:
        return
    text = f"{prelude}#line 1 {line_name(filename)}\n{preprocessable(apply_arch(scanned.text, scanned.masked))}\n"
    kept = active_lines(rt, {"src.cpp": text}, ["src.cpp"])
    if kept is None:
        raise UnsupportedFeatureError(found[0].message())
    refusals = find_unsupported(scanned, filename, kept.get(filename, set()))
    if refusals:
        raise UnsupportedFeatureError(refusals[0].message())


def _display(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def collect_project(project: Any) -> ProjectSources:
    """Read a project's sources and the user headers they include (recursively). Only files under
    the project's own areas - the sources' folders, its include dirs and its root - are read:
    an ``#include "../../secret"`` elsewhere is left to the sandboxed compiler, which cannot see it."""
    from .source import scan

    root: Path = project.root
    areas = [*(f.parent for f in project.files), *project.include_dirs, root]
    areas = [os.path.realpath(a).rstrip("/") + "/" for a in dict.fromkeys(areas)]

    def in_area(p: Path) -> bool:
        real = os.path.realpath(p)  # a symlink inside the project to a file elsewhere does not count
        return any(real.startswith(a) for a in areas)

    def read(p: Path) -> str:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise CompileError(f"{_display(p, root)} is larger than {MAX_FILE_BYTES // 2**20} MB", [], "")
        try:
            return p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return p.read_text(encoding="latin-1")

    seen: dict[Path, ProjectFile] = {}
    units: list[ProjectFile] = []
    headers: list[ProjectFile] = []
    queue: list[Path] = []
    for f in project.files:
        pf = ProjectFile(f, _display(f, root), read(f), None)
        pf.scanned = scan(pf.text)
        if f.suffix == ".c":
            pf.kind = "c"
        elif f.suffix == ".cu" or _CUDA_MARKS.search(pf.scanned.masked):
            pf.kind = "cuda"
        else:
            pf.kind = "c++"
        seen[f] = pf
        units.append(pf)
        queue.append(f)

    def add_header(p: Path) -> None:
        if p in seen or not in_area(p) or not p.is_file():
            return
        if len(seen) >= MAX_PROJECT_FILES:
            raise CompileError(f"the project includes more than {MAX_PROJECT_FILES} files", [], "")
        pf = ProjectFile(p, _display(p, root), read(p), None)
        pf.scanned = scan(pf.text)
        seen[p] = pf
        headers.append(pf)
        queue.append(p)

    def resolve(current: ProjectFile, name: str, quoted: bool) -> Path | None:
        folders = ([current.path.parent] if quoted else []) + list(project.include_dirs)
        for folder in folders:
            p = Path(os.path.normpath(folder / name))
            if p.is_file():
                return p
        return None

    computed: list[tuple[ProjectFile, str, list[Path]]] = []
    while queue:
        current = seen[queue.pop(0)]
        for m in _INCLUDE.finditer(current.text):
            if not current.scanned.masked[m.start() : m.end()].lstrip().startswith("#"):
                continue  # in a comment
            if m.group("m"):
                # a computed include (#include HEADER): read every header of the folders it may
                # name now (their own includes are followed); which of them it names is settled
                # once every file has been read, from the macro's definitions
                swept = []
                for folder in [current.path.parent, *project.include_dirs]:
                    for p in sorted(folder.rglob("*")):
                        if p.suffix in _HEADER_SUFFIXES and p not in project.files:
                            add_header(Path(os.path.normpath(p)))
                            swept.append(Path(os.path.normpath(p)))
                computed.append((current, m.group("m"), swept))
                continue
            p = resolve(current, m.group("q") or m.group("a"), bool(m.group("q")))
            if p is not None:
                add_header(p)
                if p in seen and p not in current.includes:
                    current.includes.append(p)
    for current, macro, swept in computed:
        # The headers the macro is defined as anywhere in the project (boost's
        # ``#define BOOST_USER_CONFIG <boost/config/user.hpp>``) or by -D; where no definition
        # names a header that exists, every header swept for it: the compiler may see any of them,
        # so each is staged with the file that includes it.
        named = [resolve(current, n, q) for n, q in _macro_headers(macro, [f.text for f in seen.values()],
                                                                     project.defines)]
        for p in [n for n in named if n is not None and n in seen] or [p for p in swept if p in seen]:
            if p not in current.includes:
                current.includes.append(p)
    return ProjectSources(project=project, units=units, headers=headers)


def _macro_headers(macro: str, texts: list[str], defines: dict[str, str | None]) -> list[tuple[str, bool]]:
    """Each header name ``macro`` is defined as, by ``#define`` in ``texts`` or in ``defines``:
    (name, quoted)."""
    values = [v for v in [defines.get(macro)] if v]
    pattern = re.compile(rf"^[ \t]*#[ \t]*define[ \t]+{re.escape(macro)}[ \t]+(\S[^\n]*?)[ \t]*$", re.M)
    for text in texts:
        if macro in text:
            values += pattern.findall(text)
    found = []
    for v in values:
        v = v.split("//", 1)[0].split("/*", 1)[0].strip()
        if len(v) > 2 and v[0] == "<" and v[-1] == ">":
            found.append((v[1:-1], False))
        elif len(v) > 2 and v[0] == v[-1] == '"':
            found.append((v[1:-1], True))
    return found


def _write_tree(base: Path, texts: dict[str, str]) -> None:
    for rel, text in texts.items():
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def build_project_executable(rt: BuiltRuntime, sources: ProjectSources, texts: dict[str, str], *, kind: str,
                             timeout: float = 600.0) -> Path:
    """Compile and link a project whose staged files are ``texts`` (staged path -> final text, the
    translation units with their shims appended) into a cached executable: each unit its own
    translation unit (CUDA units with the runtime's header forced in, host-only C/C++ units as
    the host compiler alone would see them), linked together. The cache key covers every staged
    file - sources and every user header they include - and the flags."""
    project = sources.project
    defines = sources.define_flags()
    cuda = [*rt.flags, *project.cxx_flags, *sources.include_flags(TREE), *defines]
    host = [*rt.flags, *project.cxx_flags, *sources.include_flags(HOST_TREE), *defines]
    cflags = ["-O2", "-g1", "-fdiagnostics-plain-output", *project.c_flags, *sources.include_flags(HOST_TREE),
              *defines]
    if rt.sanitize:
        cflags += ["-fsanitize=address", "-fno-omit-frame-pointer"]
    links = project.link_flags
    h = hashlib.sha256(f"{rt.key}|{rt.sanitize}|{kind}|project\n{cuda}\n{host}\n{cflags}\n{links}\n".encode())
    h.update(repr([(u.staged_as_unit(), u.kind) for u in sources.units]).encode())
    for rel in sorted(texts):
        h.update(f"\0{rel}\0{len(texts[rel])}\0".encode())
        h.update(texts[rel].encode())
    key = h.hexdigest()[:24]
    out_dir = cache_dir("cpu-bin", private=True) / rt.root.name if rt.shared else rt.root / "bin"
    out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    exe = out_dir / f"{kind}-p{key}"
    if _region_build_failed(exe):
        return build_project_executable(rt, sources, {k: strip_region_code(t) for k, t in texts.items()},
                                        kind=kind, timeout=timeout)
    sign_parts = ("cpu-exe", rt.root.name, exe.name)
    if exe.exists():
        if integrity.verify_file(exe, *sign_parts):
            return exe
        _log.warning("cached executable %s has no valid signature; rebuilding it", exe)
    displays = sources.by_display()

    def unstaged(log: str) -> str:  # the compiler's log names the originals, not the staged copies
        for f in sources.files:
            log = log.replace(f.staged, str(f.path)).replace(f.host_staged, str(f.path))
        return log.replace(f"-I{TREE}/", "-I/").replace(f"-I{HOST_TREE}/", "-I/")

    class _RegionsFailed(Exception):
        pass

    def compile_step(cmd: list[str], unit: ProjectFile) -> None:
        code, log = _compile_confined(cmd, tmp, timeout, rt, unit.display, sources.expose())
        if code != 0:
            if any(has_region_code(t) for t in texts.values()) and \
                    region_induced(log, [r for t in texts.values() for r in region_ranges(t)]):
                _note_region_build_failed(exe, log)
                raise _RegionsFailed()
            _raise_for_build_failure(rt, unstaged(log), unit.display, unit.text, displays)

    tmp = Path(tempfile.mkdtemp(prefix=f"vf-build-{kind}-"))
    try:
        _write_tree(tmp, texts)
        objects: list[str] = []
        for i, unit in enumerate(sources.units):
            if unit.kind == "c":
                compile_step([rt.compiler.path, *cflags, "-x", "c", "-c", unit.host_staged, "-o", f"u{i}.o"], unit)
                objects.append(f"u{i}.o")
            elif unit.kind == "c++":
                compile_step([rt.compiler.path, *host, "-x", "c++", "-c", unit.host_staged, "-o", f"u{i}.o"], unit)
                objects.append(f"u{i}.o")
        cuda_units = sources.cuda_units
        first = (cuda_units or sources.units)[0]
        cmd = [rt.compiler.path, *cuda]
        if cuda_units:
            cmd += ["-x", "c++", "-include", str(rt.root / "vf_cuda.h"), *(u.staged for u in cuda_units), "-x", "none"]
        cmd += [*objects, *rt.objects(kind), *rt.link_flags, "-o", "a.out", "-ldl", *links]
        try:
            compile_step(cmd, first)
        except _RegionsFailed:
            return build_project_executable(rt, sources, {k: strip_region_code(t) for k, t in texts.items()},
                                            kind=kind, timeout=timeout)
        return _publish(tmp / "a.out", exe, sign_parts, first.display, "")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- which lines the preprocessor keeps (#if 0, #ifdef __CUDA_ARCH__, unused branches) ---------

_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"')
INCLUDE_MARKER = "vf_unsupported_include_marker_;"


def _kept_lines(output: str) -> dict[str, set[int]]:
    """From ``g++ -E -fdirectives-only`` output: file name -> the line numbers it kept."""
    kept: dict[str, set[int]] = {}
    current, line = "", 0
    for raw in output.split("\n"):
        m = _MARKER.match(raw)
        if m:
            current, line = m.group(2).replace('\\"', '"').replace("\\\\", "\\"), int(m.group(1))
            continue
        if raw.strip():
            kept.setdefault(current, set()).add(line)
        line += 1
    return kept


def active_lines(rt: BuiltRuntime, texts: dict[str, str], units: Sequence[str], flags: Sequence[str] = (),
                 expose: Sequence[str] = (), timeout: float = 120.0) -> dict[str, set[int]] | None:
    """Run the preprocessor (``-E -fdirectives-only``: conditionals evaluated, macros in the text
    left alone) over each translation unit of ``texts`` (staged path -> text, with ``#line``
    naming the user's files) and return, per user file name, the lines it kept; None if the
    preprocessor failed (the caller then keeps its textual answer)."""
    tmp = Path(tempfile.mkdtemp(prefix="vf-pp-"))
    kept: dict[str, set[int]] = {}
    try:
        _write_tree(tmp, texts)
        for i, unit in enumerate(units):
            lang = "c" if unit.endswith(".c") else "c++"
            extra = ["-include", str(rt.root / "vf_cuda.h")] if lang == "c++" else []
            cmd = [rt.compiler.path, *rt.flags, *flags, "-x", lang, *extra, "-E", "-fdirectives-only",
                   unit, "-o", f"pp{i}.i"]
            code, _log = _compile_confined(cmd, tmp, timeout, rt, unit, expose)
            out = tmp / f"pp{i}.i"
            if code != 0 or out.is_symlink() or not out.is_file():
                return None
            for name, lines in _kept_lines(out.read_text(errors="replace")).items():
                kept.setdefault(name, set()).update(lines)
        return kept
    except CompileError:
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
