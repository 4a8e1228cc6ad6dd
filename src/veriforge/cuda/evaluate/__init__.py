"""The evaluation harness: is this CUDA candidate correct, and how fast is it?

>>> from veriforge.cuda.evaluate import evaluate
>>> res = evaluate("vector_add", source, backend="cpu", store=RunStore())
>>> res.verdict.correct, res.time("estimated"), res.verdict.reason

:mod:`.harness` decides correctness (inputs, poisoning, tolerance, anti-cheat, caching) for every
back-end; :mod:`.backend` is the interface back-ends implement (:mod:`.cpu` here,
``gpu`` for real GPUs); :mod:`.executor` runs many evaluations in parallel (process pool or Ray).
docs/tasks.md documents the rules.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Backend", "EvalResult", "evaluate", "get_backend"]


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from .harness import evaluate

        return evaluate
    if name == "EvalResult":
        from .result import EvalResult

        return EvalResult
    if name in ("Backend", "get_backend"):
        from . import backend

        return getattr(backend, name)
    raise AttributeError(f"module 'veriforge.cuda.evaluate' has no attribute {name!r}")
