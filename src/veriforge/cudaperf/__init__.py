"""CudaPerf: training models to write fast CUDA (issue 14; landing in slices).

Landed: :mod:`veriforge.cudaperf.reward`, the one reward every trainer uses (TRL ``reward_funcs``,
verl ``compute_score``). Not yet: the generated dataset at paper scale, the pairwise rankers, GRPO
training and the ``veriforge cudaperf`` commands (see docs/cudaperf.md).
"""

from __future__ import annotations

__all__: list[str] = []
