"""The error hierarchy shared by every layer.

Every failure a user can cause (bad configuration, a program that does not compile, a kernel
that hangs, a model server that refuses) is a subclass of :class:`VeriforgeError`, so the CLI
can print it as a clear message instead of a traceback, and callers can catch by layer.
Subsystems add narrower subclasses in their own modules, always deriving from one of these.
"""

from __future__ import annotations


class VeriforgeError(Exception):
    """Base of every error veriforge raises on purpose."""


class ConfigError(VeriforgeError):
    """Invalid or inconsistent configuration (file, environment or flags)."""


class InputFileError(ConfigError):
    """A file the user named cannot be read as source text (missing, unreadable, not UTF-8)."""


class StoreError(VeriforgeError):
    """The run store could not be opened, migrated or written."""


class LLMError(VeriforgeError):
    """A language-model back-end failed or is misconfigured."""


class SandboxError(VeriforgeError):
    """The sandbox could not start or supervise a program (not: the program failed)."""


class CudaError(VeriforgeError):
    """Base of everything that goes wrong compiling, running or checking CUDA code."""


class ToolchainNotFoundError(CudaError):
    """nvcc/ptxas (or the system C++ compiler the CPU runtime needs) is not available."""


class CompileError(CudaError):
    """Source failed to compile; carries diagnostics mapped to the user's file and line."""

    def __init__(self, message: str, diagnostics: list | None = None, log: str = "") -> None:
        super().__init__(message)
        self.diagnostics = list(diagnostics or [])
        self.log = log


class LaunchError(CudaError):
    """A kernel launch was rejected (bad grid/block/shared memory, unknown kernel, bad args)."""


class KernelFault(CudaError):
    """A kernel failed while running: deadlock, divergent barrier, out-of-bounds access, trap."""


class KernelTimeoutError(KernelFault):
    """A kernel or program ran past its time limit and was killed."""


class UnsupportedFeatureError(CudaError):
    """The source uses a CUDA feature this back-end cannot execute (named in the message)."""
