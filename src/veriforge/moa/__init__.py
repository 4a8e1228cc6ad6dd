"""ReM-MoA: Mixture-of-Agents with a Ranked Reasoning Memory and Curated Diversified Memory Routing.

::

    from veriforge.moa import MoAEngine, load_config
    engine = MoAEngine(load_config("moa.toml"), default_model="vllm:Qwen/Qwen2.5-7B-Instruct")
    result = await engine.run("What is 17 * 23?")
    result.answer, result.ranking, result.account

The same engine runs the baselines (``moa``, ``self_moa``, ``self_consistency``, ``single``);
:func:`run_grid` sweeps depth × width over a benchmark suite. See docs/moa.md. Names load on first
use so ``import veriforge.moa`` (and ``veriforge.moa.bench``) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from veriforge.moa.errors import MoAConfigError, MoAError

if TYPE_CHECKING:
    from veriforge.moa.accounting import RunAccount
    from veriforge.moa.config import (
        METHODS,
        AgentConfig,
        FinalConfig,
        MoAConfig,
        ReviewerConfig,
        RoutingConfig,
        load_config,
    )
    from veriforge.moa.engine import LayerStats, MoAEngine, MoAResult, majority_vote
    from veriforge.moa.extract import Extracted, default_extractor, last_line_extractor, normalize_answer
    from veriforge.moa.memory import DroppedRef, RankedTrace, ReasoningMemory, RefShown, Trace
    from veriforge.moa.reviewer import Reviewer
    from veriforge.moa.routing import Route, reference_diversity, route_layer
    from veriforge.moa.scaling import CellResult, parse_int_range, run_grid, write_results
    from veriforge.moa.simulate import SimWorld, sim_config
    from veriforge.moa.tokens import estimate_tokens

_LAZY: dict[str, str] = {
    "RunAccount": "accounting",
    **dict.fromkeys(["METHODS", "AgentConfig", "FinalConfig", "MoAConfig", "ReviewerConfig", "RoutingConfig",
                     "load_config"], "config"),
    **dict.fromkeys(["LayerStats", "MoAEngine", "MoAResult", "majority_vote"], "engine"),
    **dict.fromkeys(["Extracted", "default_extractor", "last_line_extractor", "normalize_answer"], "extract"),
    **dict.fromkeys(["DroppedRef", "RankedTrace", "ReasoningMemory", "RefShown", "Trace"], "memory"),
    "Reviewer": "reviewer",
    **dict.fromkeys(["Route", "reference_diversity", "route_layer"], "routing"),
    **dict.fromkeys(["CellResult", "parse_int_range", "run_grid", "write_results"], "scaling"),
    **dict.fromkeys(["SimWorld", "sim_config"], "simulate"),
    "estimate_tokens": "tokens",
}

__all__ = [
    "METHODS",
    "AgentConfig",
    "CellResult",
    "DroppedRef",
    "Extracted",
    "FinalConfig",
    "LayerStats",
    "MoAConfig",
    "MoAConfigError",
    "MoAEngine",
    "MoAError",
    "MoAResult",
    "RankedTrace",
    "ReasoningMemory",
    "RefShown",
    "Reviewer",
    "ReviewerConfig",
    "Route",
    "RoutingConfig",
    "RunAccount",
    "SimWorld",
    "Trace",
    "default_extractor",
    "estimate_tokens",
    "last_line_extractor",
    "load_config",
    "majority_vote",
    "normalize_answer",
    "parse_int_range",
    "reference_diversity",
    "route_layer",
    "run_grid",
    "sim_config",
    "write_results",
]


def __getattr__(name: str) -> Any:
    """Import the submodule that defines ``name`` on first access."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'veriforge.moa' has no attribute {name!r}")
    return getattr(importlib.import_module(f"veriforge.moa.{module}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
