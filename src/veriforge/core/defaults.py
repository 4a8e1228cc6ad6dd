"""The one default of each setting that several commands share.

These constants are the field defaults of :class:`veriforge.core.config.Settings` and the values
``--help`` shows; nothing else may spell them. They live in a module without imports so that the
command-line help can quote them without loading pydantic (``veriforge --help`` stays fast).
"""

from __future__ import annotations

#: Evaluations (distinct kernels, the start included) of an OptiML-X search: ``optiml.budget``;
#: also the budget of a :class:`veriforge.search.SearchConfig` built without one.
OPTIML_BUDGET = 40
#: Evaluations of the bundled demo (``veriforge optimize`` with no target) unless a budget is
#: given (``--budget`` or an explicitly set ``optiml.budget``): small enough for about a minute.
OPTIML_DEMO_BUDGET = 20
#: Search algorithm of OptiML-X: ``optiml.algorithm``.
OPTIML_ALGORITHM = "mcts"
#: Search seed of OptiML-X: ``optiml.seed``.
OPTIML_SEED = 0
#: Back-end that runs candidates (``cpu``: CPU runtime, estimated times; ``gpu``: measured): ``cuda.backend``.
CUDA_BACKEND = "cpu"
#: GPU the cost model estimates times for: ``cuda.gpu``.
CUDA_GPU = "H100-SXM"
#: nvcc target architecture: ``cuda.arch``.
CUDA_ARCH = "sm_90"
