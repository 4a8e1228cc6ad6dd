"""Static structure analysis of CUDA kernels: performance insight without a GPU.

>>> from veriforge.cuda import analysis
>>> rep = analysis.analyze(src, kernel="saxpy", grid=4096, block=256, params={"n": 1 << 20})
>>> rep.global_accesses[0].sectors_per_request, rep.features["global_load_efficiency"]

Per launch it evaluates every index expression on the 32 lanes of sampled warps (coalescing,
bank conflicts), every branch condition (divergence), loop trip counts (FLOPs and bytes), and
reads registers from ptxas for the theoretical occupancy. Anything it cannot determine is
reported in ``rep.unknowns`` with the reason, never guessed. ``docs/analysis.md`` explains the
model and its limits.

Modules: :mod:`.parse` (tree-sitter, macros), :mod:`.launch` (sampled warps), :mod:`.evaluate`
(lane values), :mod:`.walk` (the abstract interpreter), :mod:`.memory` (sectors, banks),
:mod:`.control` (divergence, barriers), :mod:`.flops`, :mod:`.resources` (ptxas, occupancy),
:mod:`.report` (the result types), :mod:`.analyze`; :mod:`.host` finds the launch sequence of host
code by interpreting it for concrete scalar arguments (the input of whole-candidate estimates).
"""

from veriforge.cuda.analysis.analyze import analyze
from veriforge.cuda.analysis.launch import LaunchConfigError
from veriforge.cuda.analysis.parse import AnalysisError, KernelNotFoundError
from veriforge.cuda.analysis.report import (
    AnalysisReport,
    Barrier,
    Branch,
    GlobalAccess,
    Loop,
    SharedAccess,
)

__all__ = [
    "AnalysisError",
    "AnalysisReport",
    "Barrier",
    "Branch",
    "GlobalAccess",
    "KernelNotFoundError",
    "LaunchConfigError",
    "Loop",
    "SharedAccess",
    "analyze",
]
