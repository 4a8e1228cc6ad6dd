"""Run real CUDA C++ on the CPU - no GPU, no nvcc.

    from veriforge.cuda import cpu
    mod = cpu.compile(source)                       # -> cpu.Module; raises cpu.CompileError
    mod.launch("saxpy", grid, block, [n, 2.0, x, y])  # numpy arrays are updated in place
    mod.call("solve", [a, c, n])                    # extern "C" host launcher; mod.functions lists them
    report = mod.race_check("reduce", grid, block, [x, out])   # thread-order dependence
    res = cpu.run_program(source, argv=(), stdin=b"", timeout=60.0)  # whole programs with main()
    proj = cpu.Project.from_args(["main.cu", "kern.cu"], include_dirs=["inc"], defines={"N": 64})
    res = cpu.run_program(proj)                     # several files, -I/-D (also cpu.compile(proj))

How it works and what it cannot do: docs/cpu-runtime.md. The numpy-facing pieces are imported
lazily so ``run_program`` users do not pay for numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    CompileError,
    Diagnostic,
    KernelFault,
    KernelTimeoutError,
    LaunchError,
    ToolchainNotFoundError,
    UnsupportedFeatureError,
)
from .program import ProgramResult, build_program, run_program
from .source import Project

if TYPE_CHECKING:
    from .module import CallResult, FunctionInfo, KernelInfo, LaunchResult, Module, Param, RaceDifference, RaceReport

__all__ = [
    "CallResult",
    "CompileError",
    "Diagnostic",
    "FunctionInfo",
    "KernelFault",
    "KernelInfo",
    "KernelTimeoutError",
    "LaunchError",
    "LaunchResult",
    "Module",
    "Param",
    "ProgramResult",
    "Project",
    "RaceDifference",
    "RaceReport",
    "ToolchainNotFoundError",
    "UnsupportedFeatureError",
    "build_program",
    "compile",
    "run_program",
]

_LAZY = {"CallResult", "FunctionInfo", "KernelInfo", "LaunchResult", "Module", "Param", "RaceDifference", "RaceReport"}


def compile(source: str | Project, *, defines: dict | None = None, sanitize: bool = False,
            filename: str = "kernel.cu", timeout: float = 60.0) -> Module:
    """Compile CUDA C++ for the CPU runtime (see :func:`veriforge.cuda.cpu.module.compile`)."""
    from .module import compile as _compile

    return _compile(source, defines=defines, sanitize=sanitize, filename=filename, timeout=timeout)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import module

        return getattr(module, name)
    raise AttributeError(f"module 'veriforge.cuda.cpu' has no attribute {name!r}")
