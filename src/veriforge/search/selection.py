"""Selection and widening formulas, written once and tested against their textbook forms.

* UCT (UCB1 applied to trees, Kocsis & Szepesvári 2006): ``Q/n + c·sqrt(ln N / n)`` with ``Q`` the
  child's total reward, ``n`` its visits and ``N`` its parent's visits. Default ``c = 0.1``.
* PUCT (AlphaZero; used by PG-TD and LATS): ``Q + c·P·sqrt(N)/(1+n)`` with ``Q`` the child's mean
  reward and ``P`` its prior. Default ``c = 0.4``.

  Why smaller than the textbook constants (UCB1's sqrt(2), AlphaZero's 1.25): values are
  normalised to [0, 1] over the *whole* range seen in the tree, so the gap between two sibling
  edits is a small fraction of 1, and evaluations are nearly deterministic, so the exploration
  that sqrt(2) buys for stochastic rewards is mostly wasted. Measured on the deceptive lattices
  of :mod:`veriforge.search.synthetic` (see docs/search.md): with sqrt(2) or 1.25 the search
  turned breadth-first and found the planted optimum on 0 of 8 seeds at 150 evaluations; with
  0.1 / 0.4 on 5 of 5 for all three lattices, still escaping the deceptive local optimum.
* Progressive widening (Coulom 2007; Chaslot et al. 2008): a node visited ``n`` times may have
  at most ``ceil(k·n^α)`` children. Defaults ``k = 1``, ``α = 0.5``: one child on the first visit,
  then about ``sqrt(n)``, so the search deepens instead of spending its budget on the first
  node's edits (an LLM proposer can always produce another edit).
"""

from __future__ import annotations

import math

__all__ = ["DEFAULT_C_PUCT", "DEFAULT_C_UCT", "MinMax", "max_children", "puct_score", "uct_score"]

DEFAULT_C_UCT = 0.1
DEFAULT_C_PUCT = 0.4


def uct_score(total: float, visits: float, parent_visits: float, c: float = DEFAULT_C_UCT) -> float:
    """``total/visits + c·sqrt(ln(parent_visits)/visits)``; ``inf`` for an unvisited child."""
    if visits <= 0:
        return math.inf
    return total / visits + c * math.sqrt(math.log(max(parent_visits, 1.0)) / visits)


def puct_score(mean: float, prior: float, visits: float, parent_visits: float,
               c: float = DEFAULT_C_PUCT) -> float:
    """``mean + c·prior·sqrt(parent_visits)/(1+visits)``."""
    return mean + c * prior * math.sqrt(max(parent_visits, 0.0)) / (1.0 + visits)


def max_children(visits: float, k: float = 1.0, alpha: float = 0.5) -> int:
    """Progressive widening: how many children a node visited ``visits`` times may have."""
    if visits <= 0:
        return 0
    # The tiny slack keeps float error from turning an exact power like 4**0.5 into 3 children.
    return max(1, math.ceil(k * visits ** alpha - 1e-9))


class MinMax:
    """Running bounds of the values seen in a tree, mapping them to [0, 1].

    Objectives come in any scale (microseconds, log-speedups, raw rewards); UCT's constant only
    means something for rewards in [0, 1]. Normalising by the bounds seen so far (as MuZero does)
    keeps one documented constant valid for every problem.
    """

    def __init__(self) -> None:
        self.low = math.inf
        self.high = -math.inf

    def update(self, value: float) -> None:
        self.low = min(self.low, value)
        self.high = max(self.high, value)

    def normalise(self, value: float) -> float:
        if self.high > self.low:
            return (value - self.low) / (self.high - self.low)
        return 0.5  # one distinct value seen so far: nothing to prefer
