"""Resource limits for one sandboxed run, and how they become rlimits.

A frozen dataclass rather than loose keyword arguments so a whole evaluation can carry one
``Limits`` value around (and record it next to its results). ``None`` or ``0`` for a limit
means "unlimited" — needed e.g. for CUDA programs, whose driver reserves tens of GB of virtual
address space and cannot live under an ``RLIMIT_AS``.
"""

from __future__ import annotations

import dataclasses
import math
import resource
from dataclasses import dataclass
from typing import Any

from veriforge.errors import ConfigError

__all__ = ["Limits"]

_INF = resource.RLIM_INFINITY
_MB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """What a sandboxed program may use.

    - ``timeout_s``: wall-clock seconds; the whole process tree is killed when it passes.
    - ``cpu_s``: CPU seconds *per process* (``RLIMIT_CPU``: SIGXCPU, then SIGKILL one second later).
    - ``memory_mb``: address space per process (``RLIMIT_AS``), not resident memory.
    - ``file_size_mb``: largest file a process may write (``RLIMIT_FSIZE``).
    - ``max_procs``: processes *and threads* the run may have at once (``RLIMIT_NPROC``, enforced
      by running under a per-run uid; see docs/sandbox.md).
    - ``max_output_bytes``: bytes kept from stdout and from stderr, each; the rest is counted and
      dropped.
    """

    timeout_s: float | None = 60
    cpu_s: float | None = 60
    memory_mb: int | None = 4096
    file_size_mb: int | None = 256
    max_procs: int | None = 64
    max_output_bytes: int = 1_000_000

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is not None and (not isinstance(value, int | float) or value < 0):
                raise ConfigError(f"sandbox limit {field.name} must be a non-negative number, got {value!r}")

    @classmethod
    def from_settings(cls, settings: Any) -> Limits:
        """Build limits from ``veriforge.core.config.SandboxSettings`` (or the settings root that
        holds one as ``.sandbox``), so the configured limits are the ones every run uses."""
        section = getattr(settings, "sandbox", settings)
        values = {}
        for field in dataclasses.fields(cls):
            if hasattr(section, field.name):
                values[field.name] = getattr(section, field.name)
        if not values:
            raise ConfigError(f"{type(settings).__name__} has no sandbox limits")
        return cls(**values)

    def rlimits(self, *, nproc: int | None) -> dict[str, tuple[int, int]]:
        """The ``setrlimit`` pairs for the program, by short name (see ``_supervisor``).

        ``nproc`` is the value to use for ``RLIMIT_NPROC`` (the caller adjusts it for processes
        the same uid already owns), or ``None`` to leave it unlimited. Core dumps are always off:
        a crashing candidate must not fill the disk.
        """
        out: dict[str, tuple[int, int]] = {"core": (0, 0)}
        if self.cpu_s:
            soft = max(1, math.ceil(self.cpu_s))
            out["cpu"] = (soft, soft + 1)
        if self.memory_mb:
            out["as"] = (int(self.memory_mb * _MB),) * 2
        if self.file_size_mb:
            out["fsize"] = (int(self.file_size_mb * _MB),) * 2
        if nproc:
            out["nproc"] = (int(nproc), int(nproc))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON records of what a result was produced under)."""
        return dataclasses.asdict(self)
