"""What came out of a sandboxed run, and how its ending is classified.

The status answers "why did it stop?" in the five words every caller branches on; ``reason``
says it in a sentence for feedback to a model or a user. The classification rules (documented
in docs/sandbox.md) live in :func:`classify` so they can be tested without running anything.
"""

from __future__ import annotations

import signal as _signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["MEMORY_MARKERS", "STATUSES", "SandboxResult", "Status", "classify", "signal_name"]

Status = Literal["ok", "timeout", "memory", "crashed", "killed"]
STATUSES: tuple[str, ...] = ("ok", "timeout", "memory", "crashed", "killed")

MEMORY_MARKERS: tuple[bytes, ...] = (
    b"MemoryError",  # Python (numpy's _ArrayMemoryError too)
    b"std::bad_alloc",  # C++ new
    b"Cannot allocate memory",  # strerror(ENOMEM): mmap/fork/exec/open failures
    b"can't allocate memory",  # PyTorch's CPU allocator
    b"out of memory",  # Go runtime, CUDA host allocations, many C programs
    b"memory allocation of",  # Rust's alloc error handler ("memory allocation of N bytes failed")
)
"""Bytes in the tail of stderr that mean "an allocation failed" (only trusted if the program
also failed: a program that prints "out of memory" and exits 0 is ``ok``)."""

_FSIZE_MARKERS: tuple[bytes, ...] = (
    b"File too large",  # strerror(EFBIG): Python ignores SIGXFSZ, so its writes fail with this
    b"File size limit exceeded",  # strsignal(SIGXFSZ), printed by a shell whose child died of it
)
_CPU_MARKERS: tuple[bytes, ...] = (b"CPU time limit exceeded",)  # strsignal(SIGXCPU), from a shell


def signal_name(num: int | None) -> str | None:
    """``SIGSEGV`` for 11 (``None`` for no signal; ``SIG<n>`` for unknown numbers)."""
    if num is None:
        return None
    try:
        return _signal.Signals(num).name
    except ValueError:
        return f"SIG{num}"


def classify(
    *,
    exit_code: int | None,
    signal: int | None,
    timed_out: bool,
    stderr: bytes,
    cpu_s: float,
    cpu_limit: float | None,
) -> tuple[Status, str]:
    """Status and reason for how a program ended. Order matters: wall-clock first, then memory
    (its symptoms — SIGABRT from bad_alloc, exit 1 after MemoryError — would otherwise read as a
    crash or a normal failure), then the other limits, then plain signals."""
    tail = stderr[-65536:]
    failed = signal is not None or (exit_code not in (None, 0))
    if timed_out:
        return "timeout", "wall-clock timeout: the whole process tree was killed"
    if failed:
        for marker in MEMORY_MARKERS:
            if marker.lower() in tail.lower():
                return "memory", f"allocation failed under the memory limit ({marker.decode()!s} in stderr)"
    if signal == _signal.SIGXCPU:
        return "killed", "CPU time limit exceeded (SIGXCPU)"
    if signal == _signal.SIGKILL and cpu_limit and cpu_s >= cpu_limit - 0.05:
        return "killed", "CPU time limit exceeded (SIGKILL at the hard limit)"
    if signal == _signal.SIGXFSZ:
        return "killed", "file size limit exceeded (SIGXFSZ)"
    if failed and signal is None and any(m in tail for m in _FSIZE_MARKERS):
        return "killed", "file size limit exceeded (a write was refused or a child died of SIGXFSZ)"
    if failed and signal is None and any(m in tail for m in _CPU_MARKERS):
        return "killed", "CPU time limit exceeded (a child process died of SIGXCPU)"
    if signal == _signal.SIGKILL:
        return "memory", "SIGKILL not sent by the sandbox: most likely the kernel OOM killer"
    if signal is not None:
        return "crashed", f"died from {signal_name(signal)}"
    return "ok", f"exited with code {exit_code}"


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


@dataclass
class SandboxResult:
    """One run's outcome. A program failing is a result, not an exception."""

    status: Status
    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    reason: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stdout_dropped_bytes: int = 0
    stderr_dropped_bytes: int = 0
    isolation: dict[str, Any] = field(default_factory=dict)
    workdir: Path | None = None

    @property
    def signal_name(self) -> str | None:
        return signal_name(self.signal)

    @property
    def ok(self) -> bool:
        """Exited by itself with code 0."""
        return self.status == "ok" and self.exit_code == 0

    @property
    def stdout_text(self) -> str:
        return _text(self.stdout)

    @property
    def stderr_text(self) -> str:
        return _text(self.stderr)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (outputs decoded as UTF-8 with replacement characters)."""
        return {
            "status": self.status,
            "reason": self.reason,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "signal_name": self.signal_name,
            "stdout": self.stdout_text,
            "stderr": self.stderr_text,
            "stdout_truncated": self.stdout_truncated,
            "stderr_truncated": self.stderr_truncated,
            "stdout_dropped_bytes": self.stdout_dropped_bytes,
            "stderr_dropped_bytes": self.stderr_dropped_bytes,
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "peak_rss_mb": self.peak_rss_mb,
            "isolation": dict(self.isolation),
            "workdir": str(self.workdir) if self.workdir else None,
        }
