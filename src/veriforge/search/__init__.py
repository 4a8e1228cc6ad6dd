"""veriforge.search: generic search under verification.

MCTS over edits (UCT/PUCT, progressive widening, dedupe by content hash, noisy rewards,
guardrails, parallel evaluation with virtual loss, resumable from the run store), baselines with
the same interfaces (random, hill-climbing, beam) and the multi-turn refine loop
(``from veriforge.search.refine import refine``; the package exports ``refine_sync``). Domain-free:
OptiML and CudaPerf supply the proposers and evaluators. See docs/search.md.

Names load lazily (PEP 562) so importing the package costs nothing until a name is used.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Edit": "interfaces",
    "Evaluation": "interfaces",
    "Proposer": "interfaces",
    "Evaluator": "interfaces",
    "FunctionProposer": "interfaces",
    "FunctionEvaluator": "interfaces",
    "StateCodec": "interfaces",
    "JsonCodec": "interfaces",
    "CandidateCodec": "interfaces",
    "state_key": "interfaces",
    "SearchConfig": "config",
    "MCTSConfig": "config",
    "Guardrails": "config",
    "SearchEngine": "engine",
    "SearchResult": "engine",
    "SearchStats": "engine",
    "MCTS": "mcts",
    "RandomSearch": "baselines",
    "HillClimb": "baselines",
    "BeamSearch": "baselines",
    "Node": "tree",
    "SearchTree": "tree",
    "load_tree": "persist",
    "uct_score": "selection",
    "puct_score": "selection",
    "max_children": "selection",
    "refine_sync": "refine",
    "RefineResult": "refine",
    "Verification": "refine",
    "SearchError": "errors",
    "SearchConfigError": "errors",
    "ResumeError": "errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'veriforge.search' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"veriforge.search.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
