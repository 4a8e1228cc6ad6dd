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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .build import SHIM_FILE, build_executable, runtime
from .source import args_launch_shims, check_supported, rewrite, scan

__all__ = ["ProgramResult", "build_program", "run_program"]

MAX_OUTPUT = 16 * 1024 * 1024
MEMORY_MB = 16384
FILE_SIZE_MB = 2048
PASS_ENV = ("VF_CPU_THREADS", "VF_FIBER_STACK_KB")
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

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def _program_text(source: str, defines: Mapping[str, Any] | None, filename: str) -> str:
    scanned = scan(source)
    check_supported(scanned, filename)
    parts = []
    for name, value in (defines or {}).items():
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ValueError(f"invalid macro name {name!r}")
        text = "" if value is None else f" {int(value) if isinstance(value, bool) else value}"
        parts.append(f"#define {name}{text}")
    parts.append(f'#line 1 "{filename}"')
    parts.append(rewrite(scanned))
    shims = args_launch_shims(scanned)
    if shims:
        parts.append(f'#line 1 "{SHIM_FILE}"')
        parts.extend(shims)
    return "\n".join(parts) + "\n"


def build_program(source: str, *, defines: Mapping[str, Any] | None = None, sanitize: bool = False,
                  filename: str = "program.cu") -> Path:
    """Compile a whole CUDA program into a cached executable; returns its path.

    Raises CompileError (with the user's lines) or UnsupportedFeatureError.
    """
    if not re.fullmatch(r"[\w.+-]+", filename):
        raise ValueError(f"filename must be a plain file name, got {filename!r}")
    rt = runtime(sanitize)
    return build_executable(rt, _program_text(source, defines, filename), kind="program", user_file=filename,
                            user_source=source)


def _program_policy(timeout: float, sanitize: bool, exe: Path) -> Any:
    """The sandbox policy for a candidate program: the candidate defaults of docs/sandbox.md, with
    room for the runtime's worker threads (NPROC counts threads) and its output files."""
    from veriforge.sandbox import Limits, Policy

    threads = int(os.environ.get("VF_CPU_THREADS") or os.cpu_count() or 1)
    limits = Limits(timeout_s=timeout, cpu_s=None, memory_mb=None if sanitize else MEMORY_MB,
                    file_size_mb=FILE_SIZE_MB, max_procs=64 + threads, max_output_bytes=MAX_OUTPUT)
    return Policy(limits=limits, expose=(str(exe),))


def _program_env(sanitize: bool) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
    if sanitize:
        env["ASAN_OPTIONS"] = "detect_leaks=0:halt_on_error=1:abort_on_error=0:symbolize=1"
    return env


def _text(data: bytes, truncated: bool) -> str:
    text = data.decode("utf-8", errors="replace")
    if truncated:
        text += f"\n[veriforge: output truncated at {MAX_OUTPUT} bytes]\n"
    return text


def run_program(source: str, argv: Sequence[str] = (), stdin: bytes | str = b"", timeout: float = 60.0, *,
                defines: Mapping[str, Any] | None = None, sanitize: bool = False, filename: str = "program.cu",
                cwd: str | os.PathLike[str] | None = None) -> ProgramResult:
    """Compile and run a CUDA program with ``main()`` on the CPU; returns its exit status and output.

    Compilation problems raise CompileError / UnsupportedFeatureError; everything that happens
    at run time (non-zero exit, crash, kernel fault, timeout) is reported in the result.
    The program is untrusted: it runs in :mod:`veriforge.sandbox` under the candidate policy
    (per-run uid, read-only filesystem except its work directory, no network, no secrets, whole
    process tree killed at the end). ``cwd`` (lent to the program for the run) defaults to a
    fresh private directory that is removed afterwards.
    """
    from veriforge.sandbox import run as sandbox_run

    exe = build_program(source, defines=defines, sanitize=sanitize, filename=filename)
    data = stdin.encode() if isinstance(stdin, str) else bytes(stdin)
    where = None if cwd is None else Path(cwd)
    res = sandbox_run([str(exe), *map(str, argv)], cwd=where, stdin=data, env=_program_env(sanitize),
                      policy=_program_policy(timeout, sanitize, exe))
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
