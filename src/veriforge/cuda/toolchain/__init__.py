"""Drive NVIDIA's CUDA compiler without a GPU: find it, compile, read resources, map errors.

>>> from veriforge.cuda import toolchain
>>> res = toolchain.compile(src, arch="sm_80", flags=["-O3"])
>>> res.kernel("matmul").registers, res.cached

* :mod:`.locate` — :func:`find_toolchain` / :func:`describe` (nvcc, ptxas, version, CUDA root);
* :mod:`.compiler` — :func:`compile` → :class:`CompileResult` (cubin or PTX, cached);
* :mod:`.resources` — :func:`parse_ptxas_verbose` → per-kernel :class:`KernelResources`;
* :mod:`.diagnostics` — :class:`Diagnostic`, :class:`NvccCompileError`;
* :mod:`.arch` — architecture names; :mod:`.cache` — the on-disk artefact cache;
  :mod:`.demangle` — ``cu++filt``/``c++filt`` batching.

Only the standard library is imported here, so importing the toolchain stays cheap.
"""

from veriforge.cuda.toolchain.arch import InvalidArchError, normalize_arch, validate_arch
from veriforge.cuda.toolchain.cache import ArtifactCache
from veriforge.cuda.toolchain.compiler import CompileResult, InvalidFlagsError, compile
from veriforge.cuda.toolchain.diagnostics import CompileTimeoutError, Diagnostic, NvccCompileError
from veriforge.cuda.toolchain.locate import INSTALL_HINT, Toolchain, describe, find_toolchain
from veriforge.cuda.toolchain.resources import (
    FunctionProperties,
    KernelResources,
    PtxasReport,
    find_kernel,
    parse_ptxas_log,
    parse_ptxas_verbose,
)

__all__ = [
    "INSTALL_HINT",
    "ArtifactCache",
    "CompileResult",
    "CompileTimeoutError",
    "Diagnostic",
    "FunctionProperties",
    "InvalidArchError",
    "InvalidFlagsError",
    "KernelResources",
    "NvccCompileError",
    "PtxasReport",
    "Toolchain",
    "compile",
    "describe",
    "find_kernel",
    "find_toolchain",
    "normalize_arch",
    "parse_ptxas_log",
    "parse_ptxas_verbose",
    "validate_arch",
]
