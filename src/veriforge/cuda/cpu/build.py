"""Building the CPU runtime and user programs with the system C++ compiler.

The runtime's C++ sources ship inside the package (``runtime/``) and are compiled on first use
into ``cache_dir("cpu-runtime")/<key>``, where the key hashes the sources, the compiler's
version, the flags and the CUDA header directory - so upgrading any of them rebuilds, and
nothing else ever does. The same directory holds a precompiled header of the force-included
``vf_cuda.h`` (it pulls in most of the standard library and CUDA's host headers; precompiling
it roughly halves the time to compile a small kernel) and the compiled user executables, keyed
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from veriforge.core import integrity
from veriforge.core.paths import cache_dir
from veriforge.errors import ToolchainNotFoundError, UnsupportedFeatureError

from .errors import CompileError, Diagnostic

__all__ = [
    "BuiltRuntime",
    "HostCompiler",
    "build_executable",
    "find_cuda_include",
    "host_compiler",
    "runtime",
]

RUNTIME_SRC = Path(__file__).parent / "runtime"
_OBJECTS = ("scheduler", "host_api", "worker_main")
_BASE_FLAGS = ["-std=c++20", "-pthread", "-fno-strict-aliasing", "-fdiagnostics-plain-output",
               "-fno-diagnostics-show-caret"]
_FAST_FLAGS = ["-O2", "-g1"]
_ASAN_FLAGS = ["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"]
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
        flags = [*_BASE_FLAGS, *(_ASAN_FLAGS if self.sanitize else _FAST_FLAGS), f"-I{self.root}",
                 f"-I{self.root / 'include'}"]
        if self.cuda_include is not None:
            flags += ["-DVF_HAVE_CUDA_HEADERS", "-isystem", str(self.cuda_include)]
        return flags

    def objects(self, kind: str) -> list[str]:
        names = ["scheduler", "host_api", "fiber"] + (["worker_main"] if kind == "module" else [])
        return [str(self.root / f"{n}.o") for n in names]

    def scrub(self, text: str) -> str:
        """Hide runtime-internal paths from messages shown to users."""
        return text.replace(str(self.root) + "/", "<veriforge-runtime>/").replace(str(self.root), "<veriforge-runtime>")


_runtimes: dict[tuple, BuiltRuntime] = {}


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
    h.update(repr((_BASE_FLAGS, _FAST_FLAGS, _ASAN_FLAGS, sanitize)).encode())
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
        if not rt.sanitize:
            # Precompiled force-include header: only valid with exactly these flags.
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
_UNDEFINED = re.compile(r"undefined reference to `([^'`]+)'")


def parse_diagnostics(log: str, user_file: str) -> list[Diagnostic]:
    """Compiler errors mapped to the user's file and line.

    An error inside a runtime header is attributed to the user line that led there (the
    ``required from here`` instantiation note or the ``#include`` line), never shown as if the
    runtime's internals were the user's code.
    """
    diags: list[Diagnostic] = []
    pending: Diagnostic | None = None
    include_site: tuple[int, int] | None = None
    for raw in log.splitlines():
        inc = _INCLUDED_FROM.match(raw)
        if inc and Path(inc.group("file")).name == user_file:
            include_site = (int(inc.group("line")), 0)
            continue
        req = _REQUIRED.match(raw)
        if req:
            if Path(req.group("file")).name == user_file:
                include_site = (int(req.group("line")), int(req.group("col")))
                if pending is not None and pending.line == 0:
                    pending = Diagnostic(file=user_file, line=include_site[0], column=include_site[1],
                                         severity="error", message=pending.message)
            continue
        m = _DIAG.match(raw)
        if not m:
            continue
        file, sev, msg = m.group("file"), m.group("sev"), m.group("msg").strip()
        line, col = int(m.group("line")), int(m.group("col") or 0)
        is_user = Path(file).name == user_file
        if sev in ("error", "fatal error"):
            if pending is not None:
                diags.append(pending)
            if is_user:
                diags.append(Diagnostic(file=user_file, line=line, column=col, severity="error", message=msg))
                pending = None
            else:
                where = include_site or (0, 0)
                pending = Diagnostic(file=user_file, line=where[0], column=where[1], severity="error", message=msg)
            include_site = None
        elif sev == "note" and pending is not None and is_user and "required from" in msg:
            pending = Diagnostic(file=user_file, line=line, column=col, severity="error", message=pending.message)
        elif sev == "warning" and is_user:
            diags.append(Diagnostic(file=user_file, line=line, column=col, severity="warning", message=msg))
    if pending is not None:
        diags.append(pending)
    return diags


def _where_called(symbol: str, user_file: str, source: str) -> str:
    """``name (file:line: code)`` for the first use of a function the linker could not find."""
    from veriforge.cuda.cpu.source import line_of, mask_source

    name = symbol.split("(")[0].strip()
    m = re.search(r"\b" + re.escape(name) + r"\b", mask_source(source))
    if not m:
        return name
    line = line_of(source, m.start())
    code = source.splitlines()[line - 1].strip()[:100]
    return f"{name} ({user_file}:{line}: {code})"


def _raise_for_build_failure(rt: BuiltRuntime, log: str, user_file: str, source: str) -> None:
    log = rt.scrub(log)
    undefined = sorted(set(_UNDEFINED.findall(log)))
    cuda_missing = [u for u in undefined if re.match(r"(cuda|cu[A-Z]|cublas|cufft|curand|cusparse|nvrtc)", u)]
    if cuda_missing:
        raise UnsupportedFeatureError(
            "CUDA API function(s) not supported by the CPU runtime: "
            + "; ".join(_where_called(u, user_file, source) for u in cuda_missing[:8])
        )
    diags = [d for d in parse_diagnostics(log, user_file) if d.severity == "error"]
    for d in diags:
        if "not supported on the CPU" in d.message or "needs CUDA's headers" in d.message:
            raise UnsupportedFeatureError(f"{d.message.strip(chr(34))} ({user_file}:{d.line})")
    if undefined and not diags:
        raise CompileError(f"link error: undefined reference to {', '.join(undefined[:5])}", [], log)
    if not diags:
        raise CompileError(f"compiling {user_file} failed:\n{log[-2000:]}", [], log)
    lines = source.splitlines()
    first = diags[0]
    code = lines[first.line - 1].strip() if 0 < first.line <= len(lines) else ""
    more = f" (and {len(diags) - 1} more error(s))" if len(diags) > 1 else ""
    text = f"{first.file}:{first.line}:{first.column}: error: {first.message}{more}"
    if code:
        text += f"\n    {first.line} | {code}"
    raise CompileError(text, diags, log)


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
               "-x", "none", *rt.objects(kind), "-o", "a.out", "-ldl"]
        code, log = _compile_confined(cmd, tmp, timeout, rt, user_file)
        if code != 0:
            _raise_for_build_failure(rt, log, user_file, user_source)
        built = tmp / "a.out"
        if built.is_symlink() or not built.is_file():
            raise CompileError(f"compiling {user_file} produced no executable", [], log)
        staged = out_dir / f".{exe.name}.{uuid.uuid4().hex[:8]}"
        shutil.copyfile(built, staged)
        os.chmod(staged, 0o755)
        integrity.sign_file(staged, *sign_parts)
        # signature first: a concurrent reader that finds the executable always finds its signature
        os.replace(integrity.signature_path(staged), integrity.signature_path(exe))
        os.replace(staged, exe)
        return exe
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _compile_confined(cmd: list[str], cwd: Path, timeout: float, rt: BuiltRuntime, user_file: str) -> tuple[int, str]:
    """Run the host compiler on untrusted source in the sandbox (see docs/sandbox.md)."""
    from veriforge.sandbox import ToolTimeoutError, run_tool

    if not rt.shared:
        _make_lendable(rt)
    expose = [str(rt.root)] + ([str(rt.cuda_include)] if rt.cuda_include else [])
    try:
        code, log, _ = run_tool(cmd, cwd=cwd, timeout=timeout, expose=expose, memory_mb=None)
    except ToolTimeoutError as exc:
        raise CompileError(f"compiling {user_file} took longer than {timeout:.0f} s", [], "") from exc
    return code, log
