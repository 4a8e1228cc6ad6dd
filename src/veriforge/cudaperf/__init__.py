"""CudaPerf: training models to write fast CUDA (docs/cudaperf.md).

A model gets a C function or a PyTorch module, writes CUDA, receives a reward that gates on verified
correctness and then scores speed and structure, gets feedback and tries again over several turns.

* :mod:`~veriforge.cudaperf.reward` — the one reward every trainer uses (TRL ``reward_funcs``, verl
  ``compute_score``), computed from the harness's verdict and the cost model's honest estimates.
* :mod:`~veriforge.cudaperf.dataset` — generated C→CUDA and PyTorch→CUDA task families, the verified,
  resumable build, dedup, splits, parquet/JSONL/verl export, KernelBench import/export.
* :mod:`~veriforge.cudaperf.pairs`, :mod:`~veriforge.cudaperf.ranker`, :mod:`~veriforge.cudaperf.lm_ranker`
  — offline pairwise rankers (feature-based and a TRL ``RewardTrainer`` language model).
* :mod:`~veriforge.cudaperf.feedback`, :mod:`~veriforge.cudaperf.refine` — multi-turn refinement with any model.
* :mod:`~veriforge.cudaperf.config`, :mod:`~veriforge.cudaperf.rollout`, :mod:`~veriforge.cudaperf.train`
  — GRPO with multi-turn rollouts on TRL (``veriforge cudaperf train``).
"""

from __future__ import annotations

__all__: list[str] = []
