"""Running whole CUDA programs (with ``main``) on the CPU runtime.

The program is compiled once (cached by content) and run as an untrusted program in
:mod:`veriforge.sandbox` (candidate policy: per-run uid, private read-only filesystem view, no
network, scrubbed environment, the whole process tree killed at the end; output streamed with a
cap; core dumps off). Kernel faults inside the program surface
the CUDA way - ``cudaGetLastError()`` returns an error and the runtime prints the reason to
stderr - and a crash or timeout comes back as a result, not an exception.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .build import (
    SHIM_FILE,
    build_executable,
    build_project_executable,
    check_source_supported,
    collect_project,
    runtime,
)
from .source import Project, args_launch_shims, rewrite, scan

__all__ = ["DEFAULT_TIMEOUT", "ProgramResult", "build_program", "default_timeout", "run_program"]

DEFAULT_TIMEOUT = 60.0
FLUSH_ENV = "VF_FLUSH_AFTER_MS"
FLUSH_MARGIN_S = 0.5
# Appended to every program: when the run has a time limit, a helper thread starts flushing stdio
# shortly before it (every 10 ms), so the output of a program killed for time is not lost in
# stdio's buffer (the sandbox's kill is a SIGKILL, which no handler can catch).
FLUSH_SHIM = f"""#line 1 "{SHIM_FILE}"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
namespace {{
void* vf_flush_before_deadline_(void* arg) {{
    long ms = (long)(size_t)arg;
    struct timespec t = {{ms / 1000, (ms % 1000) * 1000000L}};
    while (nanosleep(&t, &t) != 0) {{}}
    for (;;) {{
        fflush(stdout);
        fflush(stderr);
        struct timespec tick = {{0, 10000000L}};
        nanosleep(&tick, nullptr);
    }}
    return nullptr;
}}
[[maybe_unused]] const bool vf_flush_started_ = [] {{
    const char* at = getenv("{FLUSH_ENV}");
    if (at == nullptr) return false;
    pthread_t thread;
    if (pthread_create(&thread, nullptr, vf_flush_before_deadline_, (void*)(size_t)atol(at)) == 0)
        pthread_detach(thread);
    return true;
}}();
}}
"""

MAX_OUTPUT = 16 * 1024 * 1024
MEMORY_MB = 16384
FILE_SIZE_MB = 2048
COOPERATIVE_BLOCKS = 512
"""The most blocks a cooperative grid can have (16 SMs x 32 blocks): each runs on its own thread."""
PASS_ENV = ("VF_CPU_THREADS", "VF_FIBER_STACK_KB", "VF_REGIONS")
"""The only variables of the caller's environment a program sees (runtime tuning knobs)."""


@dataclass(frozen=True)
class ProgramResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    seconds: float = 0.0
    isolation: dict[str, Any] = field(default_factory=dict)
    """What the sandbox had in force for the run (see docs/sandbox.md)."""
    race: Any = None
    """``run_program(race_check=True)``: a :class:`~veriforge.cuda.cpu.race.ProgramRace` (``.found``,
    ``.kernel``, ``.location``, ``.allocation``, ...); None when not checked."""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def _program_text(source: str, defines: Mapping[str, Any] | None, filename: str, rt: Any = None, *,
                  probe: bool = False) -> str:
    scanned = scan(source)
    parts = []
    for name, value in (defines or {}).items():
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ValueError(f"invalid macro name {name!r}")
        text = "" if value is None else f" {int(value) if isinstance(value, bool) else value}"
        parts.append(f"#define {name}{text}")
    check_source_supported(rt if rt is not None else runtime(False), scanned, filename,
                           "".join(p + "\n" for p in parts))
    parts.append(f'#line 1 "{filename}"')
    parts.append(rewrite(scanned, probe=probe))
    shims = args_launch_shims(scanned)
    if shims:
        parts.append(f'#line 1 "{SHIM_FILE}"')
        parts.extend(shims)
    parts.append(FLUSH_SHIM)
    return "\n".join(parts) + "\n"


def _project_texts(project: Project, rt: Any, *, probe: bool = False) -> tuple[Any, dict[str, str]]:
    sources = collect_project(project)
    sources.check_supported(rt)
    texts = sources.staged_texts(probe=probe)
    cxx_units = [u for u in sources.units if u.kind != "c"]
    if not cxx_units:
        raise ValueError("a CUDA project needs at least one C++/CUDA source (.cu, .cpp)")
    main_unit = next((u for u in cxx_units if u.scanned.has_main), cxx_units[0])
    for unit in cxx_units:
        shims = args_launch_shims(unit.scanned) if unit.kind == "cuda" else []
        extra = ([f'#line 1 "{SHIM_FILE}"', *shims] if shims else []) + ([FLUSH_SHIM] if unit is main_unit else [])
        if extra:
            texts[unit.staged_as_unit()] += "\n".join(extra) + "\n"
    return sources, texts


def build_program(source: str | Project, *, defines: Mapping[str, Any] | None = None, sanitize: bool = False,
                  filename: str = "program.cu", probe: bool = False) -> Path:
    """Compile a whole CUDA program into a cached executable; returns its path.

    ``source`` is the program's text, or a :class:`~veriforge.cuda.cpu.Project` (several files,
    include directories, macros: then ``defines``/``filename`` must not be given - they belong to
    the project). Raises CompileError (with the user's file:line) or UnsupportedFeatureError.
    ``probe``: the race check's interleaving build (kernels' pointer parameters yield at each access;
    runtime/vf_probe.h) - for :mod:`veriforge.cuda.cpu.race` only.
    """
    rt = runtime(sanitize)
    if isinstance(source, Project):
        if defines:
            raise ValueError("give a Project's macros as Project.defines, not defines=")
        sources, texts = _project_texts(source, rt, probe=probe)
        return build_project_executable(rt, sources, texts, kind="program")
    if not re.fullmatch(r"[\w.+-]+", filename):
        raise ValueError(f"filename must be a plain file name, got {filename!r}")
    return build_executable(rt, _program_text(source, defines, filename, rt, probe=probe), kind="program",
                            user_file=filename,
                            user_source=source)


def default_timeout() -> float:
    """The default time limit of a program: ``[cuda] program_timeout_s`` of the settings if that
    setting exists, else 60 s."""
    try:
        from veriforge.core.config import active_settings

        value = getattr(active_settings().cuda, "program_timeout_s", None)
    except Exception:  # a broken config file must not break running a program
        value = None
    return float(value) if value else DEFAULT_TIMEOUT


def _program_policy(timeout: float, sanitize: bool, exe: Path, inputs: Sequence[str] = (),
                    cooperative: bool = False) -> Any:
    """The sandbox policy for a candidate program: the candidate defaults of docs/sandbox.md, with
    room for the runtime's worker threads (NPROC counts threads) and its output files; ``inputs``
    are lent read-only (:mod:`veriforge.cuda.cpu.data`). Only a program that makes cooperative
    launches gets room for one thread per block of such a grid (COOPERATIVE_BLOCKS)."""
    from veriforge.sandbox import Limits, Policy

    threads = int(os.environ.get("VF_CPU_THREADS") or os.cpu_count() or 1)
    limits = Limits(timeout_s=timeout, cpu_s=None, memory_mb=None if sanitize else MEMORY_MB,
                    file_size_mb=FILE_SIZE_MB, max_procs=64 + threads + (COOPERATIVE_BLOCKS if cooperative else 0),
                    max_output_bytes=MAX_OUTPUT)
    from veriforge.cuda.evaluate.configured import tighten

    return tighten(Policy(limits=limits, expose=(str(exe), *inputs)), gpu=False)  # + the user's sandbox.*


def _program_env(sanitize: bool, timeout: float | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
    if timeout is not None:
        env[FLUSH_ENV] = str(max(0, int((timeout - FLUSH_MARGIN_S) * 1000)))
    if sanitize:
        env["ASAN_OPTIONS"] = "detect_leaks=0:halt_on_error=1:abort_on_error=0:symbolize=1"
    return env


def _text(data: bytes, truncated: bool) -> str:
    text = data.decode("utf-8", errors="replace")
    if truncated:
        text += f"\n[veriforge: output truncated at {MAX_OUTPUT} bytes]\n"
    return text


def run_program(source: str | Project, argv: Sequence[str] = (), stdin: bytes | str = b"",
                timeout: float | None = None, *, defines: Mapping[str, Any] | None = None, sanitize: bool = False,
                filename: str = "program.cu", cwd: str | os.PathLike[str] | None = None,
                race_check: bool = False, data: Sequence[str | os.PathLike[str]] = ()) -> ProgramResult:
    """Compile and run a CUDA program with ``main()`` on the CPU; returns its exit status and output.

    ``source``: the program's text or a :class:`~veriforge.cuda.cpu.Project`. ``timeout`` (wall
    clock, seconds) defaults to the project's ``timeout``, else :func:`default_timeout` (60 s). A
    program killed for time keeps the output it printed before (``timed_out=True``).

    Compilation problems raise CompileError / UnsupportedFeatureError; everything that happens
    at run time (non-zero exit, crash, kernel fault, timeout) is reported in the result.
    The program is untrusted: it runs in :mod:`veriforge.sandbox` under the candidate policy
    (per-run uid, read-only filesystem except its work directory, no network, no secrets, whole
    process tree killed at the end). ``cwd`` (lent to the program for the run) defaults to a
    fresh private directory that is removed afterwards.

    ``race_check``: also run the program in reverse block/thread order and with interleaved threads,
    each with a per-launch trace, and report the first launch whose memory depends on the order
    (:mod:`veriforge.cuda.cpu.race`) in ``.race``; the result is the index-order run's. Costs 3 to 6
    runs, on one worker thread each (deterministic block order), plus a second build.

    ``data``: files or folders outside ``cwd`` the program reads (``../../data``), lent read-only;
    relative paths are taken from ``cwd`` (else the current directory). A ``Project``'s own
    ``data`` is added, and so is every argument that names an existing path
    (:mod:`veriforge.cuda.cpu.data`). Writes stay confined to ``cwd``.
    """
    from .data import exposed_inputs, resolve_data

    where = None if cwd is None else Path(cwd)
    lent = resolve_data(data, where if where is not None else Path.cwd())
    if isinstance(source, Project):
        lent = [*source.data, *lent]
    exe = build_program(source, defines=defines, sanitize=sanitize, filename=filename)
    if timeout is None:
        timeout = source.timeout if isinstance(source, Project) and source.timeout else default_timeout()
    stdin_data = stdin.encode() if isinstance(stdin, str) else bytes(stdin)
    inputs = exposed_inputs([str(p) for p in lent], [str(a) for a in argv], where)
    cooperative = any(_COOPERATIVE.search(t) for t in _source_texts(source))
    name = program_name(source, filename)
    if not race_check:
        return _run_exe(exe, argv, stdin_data, timeout, sanitize, where, inputs=inputs, cooperative=cooperative,
                        name=name)
    from . import race as race_mod
    from .errors import CompileError, UnsupportedFeatureError

    notes: list[str] = []
    try:
        probe_exe: Path | None = build_program(source, defines=defines, sanitize=sanitize, filename=filename,
                                               probe=True)
    except (CompileError, UnsupportedFeatureError) as exc:
        probe_exe = None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        notes.append(f"the interleaving probe could not be built ({first[:200]}); checked in reverse order only")
    verdict, first_run = race_mod.check(
        lambda program, env, run_cwd: _run_exe(program, argv, stdin_data, timeout, sanitize, run_cwd, env,
                                               inputs=exposed_inputs([str(p) for p in lent],
                                                                     [str(a) for a in argv], run_cwd),
                                               cooperative=cooperative, name=name),
        exe, probe_exe, cwd=where, sources=_source_texts(source), notes=notes)
    return replace(first_run, race=verdict)


# A cooperative launch by name or by launch attribute (cudaLaunchKernelEx): the runtime runs every block
# of such a grid on its own thread.
_COOPERATIVE = re.compile(r"\bcudaLaunchCooperativeKernel|\bcudaLaunchAttributeCooperative\b")


def program_name(source: str | Project, filename: str = "program.cu") -> str:
    """The ``argv[0]`` the program sees: ``./`` and its first source's stem, as if built with
    ``nvcc -o stem`` and started from its folder. Programs print it and look for their data beside
    it (the CUDA samples' ``sdkFindFilePath``); the cached executable's path would mean nothing to
    the user and leak veriforge's cache layout."""
    first = Path(source.files[0]).name if isinstance(source, Project) else Path(filename).name
    stem = first.rsplit(".", 1)[0] if "." in first.lstrip(".") else first
    return "./" + (stem or "program")


def _source_texts(source: str | Project) -> list[str]:
    if not isinstance(source, Project):
        return [source]
    texts = []
    root = Path(source.root) if source.root else Path.cwd()
    for f in source.files:
        path = Path(f) if Path(f).is_absolute() else root / f
        try:
            texts.append(path.read_text(errors="replace"))
        except OSError:
            continue
    return texts


def _run_exe(exe: Path, argv: Sequence[str], data: bytes, timeout: float, sanitize: bool, where: Path | None,
             extra_env: Mapping[str, str] | None = None, *, inputs: Sequence[str] = (),
             cooperative: bool = False, name: str | None = None) -> ProgramResult:
    from veriforge.sandbox import run as sandbox_run

    env = {**_program_env(sanitize, timeout), **(extra_env or {})}
    res = sandbox_run([str(exe), *map(str, argv)], cwd=where, stdin=data, env=env, argv0=name,
                      policy=_program_policy(timeout, sanitize, exe, inputs, cooperative))
    timed_out = res.status == "timeout"
    code = -res.signal if res.signal is not None else (res.exit_code if res.exit_code is not None else -9)
    seconds = res.wall_s
    stdout = _text(res.stdout, res.stdout_truncated)
    stderr = _text(res.stderr, res.stderr_truncated)
    if res.status == "memory":
        stderr += f"\nveriforge: {res.reason}\n"
    if timed_out:
        stderr += f"\nveriforge: the program did not finish within {timeout:g} s and was killed\n"
    elif code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = "" if sanitize else " (run with sanitize=True to locate an out-of-bounds access)"
        stderr += f"\nveriforge: the program was terminated by {name}{hint}\n"
    return ProgramResult(returncode=code, stdout=stdout, stderr=stderr, timed_out=timed_out, seconds=seconds,
                         isolation=res.isolation)
