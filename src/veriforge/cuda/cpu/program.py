"""Running whole CUDA programs (with ``main``) on the CPU runtime.

The program is compiled once (cached by content) and run as a child process in its own session:
the time limit kills the whole process group, output is captured through files (no pipe
deadlocks, capped size), and core dumps are disabled. Kernel faults inside the program surface
the CUDA way - ``cudaGetLastError()`` returns an error and the runtime prints the reason to
stderr - and a crash or timeout comes back as a result, not an exception.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .build import SHIM_FILE, build_executable, runtime
from .source import args_launch_shims, check_supported, rewrite, scan

__all__ = ["ProgramResult", "build_program", "run_program"]

MAX_OUTPUT = 16 * 1024 * 1024


@dataclass(frozen=True)
class ProgramResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    seconds: float = 0.0

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


def _limit_child() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _read_capped(f) -> str:
    f.seek(0)
    data = f.read(MAX_OUTPUT + 1)
    text = data[:MAX_OUTPUT].decode("utf-8", errors="replace")
    if len(data) > MAX_OUTPUT:
        text += f"\n[veriforge: output truncated at {MAX_OUTPUT} bytes]\n"
    return text


def run_program(source: str, argv: Sequence[str] = (), stdin: bytes | str = b"", timeout: float = 60.0, *,
                defines: Mapping[str, Any] | None = None, sanitize: bool = False, filename: str = "program.cu",
                cwd: str | os.PathLike[str] | None = None) -> ProgramResult:
    """Compile and run a CUDA program with ``main()`` on the CPU; returns its exit status and output.

    Compilation problems raise CompileError / UnsupportedFeatureError; everything that happens
    at run time (non-zero exit, crash, kernel fault, timeout) is reported in the result.
    ``cwd`` defaults to a fresh temporary directory that is removed afterwards.
    """
    exe = build_program(source, defines=defines, sanitize=sanitize, filename=filename)
    env = dict(os.environ)
    if sanitize:
        env["ASAN_OPTIONS"] = "detect_leaks=0:halt_on_error=1:abort_on_error=0:symbolize=1"
    data = stdin.encode() if isinstance(stdin, str) else bytes(stdin)
    with tempfile.TemporaryDirectory(prefix="vf-run-") as tmp, \
            tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as inp:
        inp.write(data)
        inp.seek(0)
        start = time.monotonic()
        proc = subprocess.Popen([str(exe), *map(str, argv)], stdin=inp, stdout=out, stderr=err,
                                cwd=str(cwd) if cwd is not None else tmp, env=env, start_new_session=True,
                                preexec_fn=_limit_child)
        timed_out = False
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            code = proc.wait()
        seconds = time.monotonic() - start
        stdout, stderr = _read_capped(out), _read_capped(err)
    if timed_out:
        stderr += f"\nveriforge: the program did not finish within {timeout:g} s and was killed\n"
    elif code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = "" if sanitize else " (run with sanitize=True to locate an out-of-bounds access)"
        stderr += f"\nveriforge: the program was terminated by {name}{hint}\n"
    return ProgramResult(returncode=code, stdout=stdout, stderr=stderr, timed_out=timed_out, seconds=seconds)
