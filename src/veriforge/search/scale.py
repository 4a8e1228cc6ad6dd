"""How evaluations become one number to maximise, and how two results are compared.

``value_mode`` picks the quantity that drives the search:

* ``log_objective`` (default): ``-log(objective)``. Objectives are usually times, and what
  matters about a time is the *ratio*: going from 2 ms to 1 ms is as good as 20 ms to 10 ms.
  Needs positive objectives.
* ``objective``: ``-objective`` (objectives that may be zero or negative).
* ``reward``: ``reward`` itself, higher is better (RL-style evaluators).

Tolerances (ties, regressions) are relative to the *natural* quantity (the objective or the
reward), e.g. ``tie_tolerance=0.02`` means "within 2 % of each other's runtime".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from veriforge.search.errors import SearchConfigError, SearchError
from veriforge.search.interfaces import Evaluation

__all__ = ["VALUE_MODES", "Scale"]

VALUE_MODES = ("log_objective", "objective", "reward")


@dataclass(frozen=True)
class Scale:
    """The value function and comparisons of one search."""

    mode: str = "log_objective"

    def __post_init__(self) -> None:
        if self.mode not in VALUE_MODES:
            raise SearchConfigError(f"value_mode must be one of {', '.join(VALUE_MODES)}; got {self.mode!r}")

    @property
    def lower_is_better(self) -> bool:
        return self.mode != "reward"

    def quantity(self, samples: Sequence[Evaluation]) -> float:
        """Mean of the natural quantity over ``samples`` (all must be ok and carry it)."""
        field = "reward" if self.mode == "reward" else "objective"
        values = [getattr(s, field) for s in samples]
        if not values or any(v is None for v in values):
            raise SearchError(f"value_mode {self.mode!r} needs every accepted evaluation to carry a "
                              f"{field}; the evaluator returned {field}=None")
        mean = math.fsum(values) / len(values)  # type: ignore[arg-type]
        if self.mode == "log_objective" and mean <= 0:
            raise SearchError(f"value_mode 'log_objective' needs positive objectives, got {mean!r}; "
                              "use value_mode='objective' for objectives that can be zero or negative")
        return mean

    def value(self, quantity: float) -> float:
        """Higher-is-better value of a natural quantity."""
        if self.mode == "log_objective":
            return -math.log(quantity)
        if self.mode == "objective":
            return -quantity
        return quantity

    def quantity_of(self, value: float) -> float:
        """Inverse of :meth:`value`."""
        if self.mode == "log_objective":
            return math.exp(-value)
        if self.mode == "objective":
            return -value
        return value

    def relative_regression(self, child: float, parent: float) -> float:
        """How much worse ``child`` is than ``parent``, relative to ``parent`` (<= 0: not worse)."""
        worse = child - parent if self.lower_is_better else parent - child
        if worse <= 0:
            return worse / abs(parent) if parent else 0.0
        return worse / abs(parent) if parent else math.inf

    def improvement_factor(self, child: float, parent: float) -> float:
        """How many times better ``child`` is than ``parent`` (2.0 = twice as fast / twice the reward);
        ``inf`` for a perfect score against a positive one, 1.0 when not comparable by ratio."""
        num, den = (parent, child) if self.lower_is_better else (child, parent)
        if num <= 0:
            return 1.0
        return math.inf if den <= 0 else num / den

    def tied(self, a: float, b: float, tolerance: float) -> bool:
        """Whether two natural quantities are within ``tolerance`` of each other (relative)."""
        return abs(a - b) <= tolerance * max(abs(a), abs(b))
