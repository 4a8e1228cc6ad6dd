"""The Python end of a Module's kernel server process (see runtime/worker_main.cpp).

One server per Module, started lazily and kept alive between launches, so a launch costs a
few pipe writes instead of a process start. Arrays travel through an anonymous shared memory
file (memfd) both processes map. The server runs in its own session: a timeout kills the whole
process group, and a crash (segfault, abort from ``assert``, AddressSanitizer report) only ever
ends the server - it is restarted on the next launch. The server runs the kernels, which are
untrusted code: it is started with :func:`veriforge.sandbox.spawn` (per-run uid, private read-only
filesystem view, no network, scrubbed environment).
"""

from __future__ import annotations

import mmap
import os
import select
import signal
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KernelServer", "ServerCrashed", "ServerTimeout"]

MAGIC = 0x56464331
OP_DESCRIBE, OP_LAUNCH, OP_QUIT, OP_DESCRIBE_FUNCTIONS, OP_CALL = 1, 2, 3, 4, 5
_LAUNCH_HEADER = struct.Struct("<i3I3IIQQIIII")
_CALL_HEADER = struct.Struct("<iIQII")  # function, blob size, shm size, buffers, patches
_BUFFER = struct.Struct("<QQ")
_PATCH = struct.Struct("<Ii")
_REPLY = struct.Struct("<iId")


class ServerCrashed(Exception):
    """The server process died while handling a request."""

    def __init__(self, returncode: int | None, stderr: str) -> None:
        super().__init__(f"kernel server died (exit status {returncode})")
        self.returncode = returncode
        self.stderr = stderr


class ServerTimeout(Exception):
    """A request did not finish within its time limit; the server was killed."""


@dataclass
class Reply:
    status: int
    text: str
    seconds: float
    stdout: str
    raw: bytes = b""  # the reply's bytes before decoding (a call's return value)


def _signal_name(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


_PASS_ENV = ("VF_CPU_THREADS", "VF_FIBER_STACK_KB", "ASAN_OPTIONS", "VF_REGIONS")


def _server_env(env: dict[str, str] | None) -> dict[str, str]:
    """The only variables the kernel server sees (runtime knobs; never the caller's secrets)."""
    source = os.environ if env is None else env
    return {k: source[k] for k in _PASS_ENV if k in source}


class KernelServer:
    """A running kernel server for one compiled module executable."""

    def __init__(self, exe: Path, env: dict[str, str] | None = None) -> None:
        self.exe = exe
        self._shm_fd = os.memfd_create("veriforge-kernel-args", os.MFD_CLOEXEC)
        self._shm_size = 0
        self._shm: mmap.mmap | None = None
        cmd_r, self._cmd_w = os.pipe()
        self._reply_r, reply_w = os.pipe()
        self._stdout = tempfile.TemporaryFile()
        self._stderr = tempfile.TemporaryFile()
        self._stdout_pos = 0
        self._stderr_pos = 0
        try:
            # The kernels are untrusted code: the server runs in the sandbox (candidate policy; no
            # address-space limit, the argument buffer can be large), with its executable lent.
            from veriforge.sandbox import Limits, Policy, spawn

            threads = int(os.environ.get("VF_CPU_THREADS") or os.cpu_count() or 1)
            policy = Policy(limits=Limits(timeout_s=None, cpu_s=None, memory_mb=None, file_size_mb=1024,
                                          max_procs=64 + 2 * threads + 512, max_output_bytes=1 << 20),
                            expose=(str(exe),), max_open_files=1024)
            from veriforge.cuda.evaluate.configured import tighten

            policy = tighten(policy, gpu=False)  # the user's sandbox.* settings, as upper bounds
            self.proc = spawn(
                [str(exe), "--cmd-fd", str(cmd_r), "--reply-fd", str(reply_w), "--shm-fd", str(self._shm_fd)],
                policy=policy,
                pass_fds=(cmd_r, reply_w, self._shm_fd),
                stdin=subprocess.DEVNULL,
                stdout=self._stdout,
                stderr=self._stderr,
                env=_server_env(env),
            )
        finally:
            os.close(cmd_r)
            os.close(reply_w)

    # ---- shared memory ------------------------------------------------------------------------
    def ensure_shm(self, size: int) -> mmap.mmap:
        """The argument buffer, grown to at least ``size`` bytes."""
        size = max(size, 4096)
        if self._shm is None or size > self._shm_size:
            new_size = max(size, 2 * self._shm_size)
            new_size = (new_size + 4095) // 4096 * 4096
            os.ftruncate(self._shm_fd, new_size)
            if self._shm is not None:
                self._shm.close()
            self._shm = mmap.mmap(self._shm_fd, new_size)
            self._shm_size = new_size
        return self._shm

    @property
    def shm_size(self) -> int:
        return self._shm_size

    # ---- requests -----------------------------------------------------------------------------
    def describe(self, timeout: float = 30.0) -> str:
        return self._request(struct.pack("<II", MAGIC, OP_DESCRIBE), timeout).text

    def launch(self, kernel_index: int, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int,
               blob: bytes, buffers: list[tuple[int, int]], patches: list[tuple[int, int]], *, reverse: bool,
               timeout: float) -> Reply:
        head = _LAUNCH_HEADER.pack(kernel_index, *grid, *block, 1 if reverse else 0, shared, self._shm_size,
                                   len(blob), len(buffers), len(patches), 0)
        payload = b"".join([struct.pack("<II", MAGIC, OP_LAUNCH), head, blob,
                            *(_BUFFER.pack(o, s) for o, s in buffers), *(_PATCH.pack(o, b) for o, b in patches)])
        return self._request(payload, timeout)

    def describe_functions(self, timeout: float = 30.0) -> str:
        return self._request(struct.pack("<II", MAGIC, OP_DESCRIBE_FUNCTIONS), timeout).text

    def call(self, function_index: int, blob: bytes, buffers: list[tuple[int, int]], patches: list[tuple[int, int]],
             *, timeout: float) -> Reply:
        head = _CALL_HEADER.pack(function_index, len(blob), self._shm_size, len(buffers), len(patches))
        payload = b"".join([struct.pack("<II", MAGIC, OP_CALL), head, blob,
                            *(_BUFFER.pack(o, s) for o, s in buffers), *(_PATCH.pack(o, b) for o, b in patches)])
        return self._request(payload, timeout)

    def _read_new(self, f, pos_attr: str) -> str:
        pos = getattr(self, pos_attr)
        f.seek(pos)
        data = f.read()
        setattr(self, pos_attr, pos + len(data))
        return data.decode("utf-8", errors="replace")

    def _request(self, payload: bytes, timeout: float) -> Reply:
        try:
            self._write_all(payload)
        except (BrokenPipeError, OSError):
            self._crashed()
        deadline = time.monotonic() + timeout
        head = self._read_exact(_REPLY.size, deadline)
        status, length, seconds = _REPLY.unpack(head)
        raw = self._read_exact(length, deadline) if length else b""
        return Reply(status=status, text=raw.decode("utf-8", errors="replace"), seconds=seconds,
                     stdout=self._read_new(self._stdout, "_stdout_pos"), raw=raw)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._cmd_w, view)
            view = view[n:]

    def _read_exact(self, n: int, deadline: float) -> bytes:
        chunks: list[bytes] = []
        while n > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise ServerTimeout()
            ready, _, _ = select.select([self._reply_r], [], [], left)
            if not ready:
                continue
            data = os.read(self._reply_r, n)
            if not data:
                self._crashed()
            chunks.append(data)
            n -= len(data)
        return b"".join(chunks)

    def _crashed(self) -> None:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        stderr = self._read_new(self._stderr, "_stderr_pos")
        self.close()
        raise ServerCrashed(code, stderr + (f"\n(kernel server ended by {_signal_name(code)})" if code else ""))

    def stdout_text(self) -> str:
        """Output written since the last request (still readable after the server died)."""
        return self._read_new(self._stdout, "_stdout_pos")

    def stderr_text(self) -> str:
        return self._read_new(self._stderr, "_stderr_pos")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.close()

    def close(self) -> None:
        """Stop the server (politely if it is idle) and release the pipes and shared memory."""
        if self.proc.poll() is None:
            try:
                os.write(self._cmd_w, struct.pack("<II", MAGIC, OP_QUIT))
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        for fd_attr in ("_cmd_w", "_reply_r", "_shm_fd"):
            fd = getattr(self, fd_attr, -1)
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, fd_attr, -1)
        if self._shm is not None:
            try:
                self._shm.close()
            except BufferError:
                pass  # a numpy view still references it; released when that view dies
            self._shm = None
