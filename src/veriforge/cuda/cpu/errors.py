"""Errors of the CPU runtime.

All derive from :mod:`veriforge.errors`, so callers can catch by layer; the runtime-specific
:class:`CompileError` adds structured diagnostics already mapped to the user's file and line.
"""

from __future__ import annotations

from dataclasses import dataclass

from veriforge import errors as _base
from veriforge.errors import (
    KernelFault,
    KernelTimeoutError,
    LaunchError,
    ToolchainNotFoundError,
    UnsupportedFeatureError,
)

__all__ = [
    "CompileError",
    "Diagnostic",
    "KernelFault",
    "KernelTimeoutError",
    "LaunchError",
    "ToolchainNotFoundError",
    "UnsupportedFeatureError",
]


@dataclass(frozen=True)
class Diagnostic:
    """One compiler message, located in the user's source (never in runtime internals)."""

    file: str
    line: int
    column: int
    severity: str  # "error" | "warning"
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.severity}: {self.message}"


class CompileError(_base.CompileError):
    """The CUDA source did not compile for the CPU runtime.

    ``diagnostics`` is a list of :class:`Diagnostic` with the user's line numbers; ``log`` is the
    compiler output with runtime paths replaced by ``<veriforge-runtime>``.
    """
