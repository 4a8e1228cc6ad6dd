"""Settings of a search, one dataclass tree with documented defaults.

:class:`SearchConfig` holds what every algorithm shares (budget, noise handling, guardrails, the
final re-measure); :class:`MCTSConfig` what only MCTS uses. Budgets may change when a run is
resumed (to extend it); every other field is part of the run's identity in the store, so a run
cannot silently continue under different rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from veriforge.core import defaults
from veriforge.search.errors import SearchConfigError
from veriforge.search.interfaces import Evaluation
from veriforge.search.scale import VALUE_MODES
from veriforge.search.selection import DEFAULT_C_PUCT, DEFAULT_C_UCT

__all__ = ["BUDGET_FIELDS", "FinalCheck", "Guardrails", "MCTSConfig", "SearchConfig", "SuspiciousCheck"]

SuspiciousCheck = Callable[[Any, Evaluation], "Evaluation | Awaitable[Evaluation]"]
#: ``final_check(state)``: a last verification of a would-be winner (e.g. on inputs the proposers never saw).
FinalCheck = Callable[[Any], "Evaluation | Awaitable[Evaluation]"]
"""``check(state, evaluation) -> Evaluation``: re-verifies a state whose improvement looks too good."""

BUDGET_FIELDS = ("max_evaluations", "max_seconds")


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise SearchConfigError(message)


@dataclass(frozen=True)
class Guardrails:
    """What makes an evaluated child unacceptable or doubtful, relative to its parent.

    * ``ok=False`` from the evaluator always rejects (the node stays in the tree with its reason
      and is never expanded).
    * ``regression_tolerance`` (default 0.25): a child more than 25 % worse than its parent is
      rejected. Loose on purpose: small regressions are often the stepping stone to a bigger
      gain (a deceptive landscape), large ones are almost never worth a visit. ``None`` disables.
    * ``suspicious_factor`` (default 10): a child more than 10× better than its parent is
      re-evaluated before it is accepted (a broken timer, a kernel that skipped the work), with
      ``suspicious_repeats`` extra samples, or by ``check(state, evaluation)`` when given (e.g.
      verify on more inputs); a failed re-check rejects it. ``None`` disables.
    """

    regression_tolerance: float | None = 0.25
    suspicious_factor: float | None = 10.0
    suspicious_repeats: int = 2
    check: SuspiciousCheck | None = None

    def __post_init__(self) -> None:
        _require(self.regression_tolerance is None or self.regression_tolerance >= 0,
                 "regression_tolerance must be >= 0 or None")
        _require(self.suspicious_factor is None or self.suspicious_factor > 1,
                 "suspicious_factor must be > 1 or None")
        _require(self.suspicious_repeats >= 1, "suspicious_repeats must be >= 1")

    def to_json(self) -> dict[str, Any]:
        check = self.check
        return {"regression_tolerance": self.regression_tolerance,
                "suspicious_factor": self.suspicious_factor,
                "suspicious_repeats": self.suspicious_repeats,
                "check": None if check is None else f"{getattr(check, '__module__', '')}."
                                                    f"{getattr(check, '__qualname__', type(check).__name__)}"}


@dataclass(frozen=True)
class SearchConfig:
    """Shared settings of every search algorithm.

    Budget: ``max_evaluations`` counts distinct states evaluated by this search (the initial state
    included), whether computed now or answered by the run store, so algorithms compared on one
    store get equal budgets; re-measurements of a state are not counted (they are bounded by
    ``repeats``, the guardrails and ``final_top_k × final_repeats``). ``max_seconds`` stops
    dispatching new evaluations after that much wall time. At least one must be set.

    Noise: every new state is evaluated ``repeats`` times and its value is the mean. Before the
    winner is declared the ``final_top_k`` best states get ``final_repeats`` more samples each;
    states within ``tie_tolerance`` (relative) of the best count as ties, broken in favour of
    fewer edits, then earlier discovery.

    Proposals: proposers are asked for ``proposals_per_round`` edits at a time; a node whose
    round brings no new state (or after ``max_proposal_rounds`` rounds) is exhausted.

    Final check: ``final_check(state)`` (optional) is run on the would-be winner after the
    re-measurements; a failure rejects that node with the check's reason ("failed the final
    check: ...") and the next best is checked, until one passes (the initial state is not checked:
    it is where the search started, and checks are built to accept it). Results are checkpointed,
    so a resumed search does not check a node twice.
    """

    max_evaluations: int | None = defaults.OPTIML_BUDGET
    max_seconds: float | None = None
    batch_size: int = 1
    seed: int = 0
    value_mode: str = "log_objective"
    repeats: int = 1
    tie_tolerance: float = 0.02
    final_top_k: int = 3
    final_repeats: int = 1
    proposals_per_round: int = 8
    max_proposal_rounds: int | None = None
    guardrails: Guardrails = field(default_factory=Guardrails)
    final_check: FinalCheck | None = None

    def __post_init__(self) -> None:
        _require(self.max_evaluations is not None or self.max_seconds is not None,
                 "a search needs a budget: set max_evaluations and/or max_seconds")
        _require(self.max_evaluations is None or self.max_evaluations >= 1, "max_evaluations must be >= 1")
        _require(self.max_seconds is None or self.max_seconds > 0, "max_seconds must be > 0")
        _require(self.batch_size >= 1, "batch_size must be >= 1")
        _require(self.value_mode in VALUE_MODES, f"value_mode must be one of {', '.join(VALUE_MODES)}")
        _require(self.repeats >= 1, "repeats must be >= 1")
        _require(0 <= self.tie_tolerance < 1, "tie_tolerance must be in [0, 1)")
        _require(self.final_top_k >= 0 and self.final_repeats >= 0, "final_top_k/final_repeats must be >= 0")
        _require(self.proposals_per_round >= 1, "proposals_per_round must be >= 1")
        _require(self.max_proposal_rounds is None or self.max_proposal_rounds >= 1,
                 "max_proposal_rounds must be >= 1 or None")

    def to_json(self, *, identity: bool = False) -> dict[str, Any]:
        """JSON form; ``identity=True`` leaves out the budgets (what must match to resume)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("guardrails", "final_check")}
        out["guardrails"] = self.guardrails.to_json()
        check = self.final_check
        out["final_check"] = None if check is None else (
            f"{getattr(check, '__module__', '')}.{getattr(check, '__qualname__', type(check).__name__)}")
        if identity:
            for name in BUDGET_FIELDS:
                out.pop(name)
        return out


@dataclass(frozen=True)
class MCTSConfig:
    """MCTS-only settings.

    * ``selection``: ``uct`` (default; needs no priors) or ``puct`` (uses the edits' priors).
    * ``c_uct`` = 0.1, ``c_puct`` = 0.4 (on values normalised to [0, 1]); why these and not the
      textbook sqrt(2) / 1.25: see :mod:`veriforge.search.selection`.
    * ``widening_k`` = 1, ``widening_alpha`` = 0.5: a node visited n times has at most
      ``ceil(k·n^α)`` children.
    * ``backup``: ``max`` (default) or ``mean``. We optimise for the single best program, not the
      average outcome of a branch, and one excellent descendant makes a branch worth revisiting
      however many poor siblings it has; mean backup would dilute it (single-player MCTS for
      optimisation uses max for this reason). Max is sensitive to lucky noise, which is why
      suspicious gains are re-checked and the final candidates re-measured. ``mean`` is the
      textbook ``Q/n`` and counts rejected children as zero reward.
    * ``virtual_loss`` (default 1): visits added along a path while its leaf is being evaluated,
      so the other leaves of a parallel batch spread out (``batch_size`` > 1).
    """

    selection: str = "uct"
    c_uct: float = DEFAULT_C_UCT
    c_puct: float = DEFAULT_C_PUCT
    widening_k: float = 1.0
    widening_alpha: float = 0.5
    backup: str = "max"
    virtual_loss: int = 1

    def __post_init__(self) -> None:
        _require(self.selection in ("uct", "puct"),
                 f"selection must be 'uct' or 'puct', not {self.selection!r}")
        _require(self.backup in ("max", "mean"), f"backup must be 'max' or 'mean', not {self.backup!r}")
        _require(self.c_uct >= 0 and self.c_puct >= 0, "exploration constants must be >= 0")
        _require(self.widening_k > 0, "widening_k must be > 0")
        _require(0 <= self.widening_alpha <= 1, "widening_alpha must be in [0, 1]")
        _require(self.virtual_loss >= 0, "virtual_loss must be >= 0")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
