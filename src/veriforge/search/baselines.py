"""Baselines with MCTS's interfaces and budget accounting, for comparisons at equal budget.

All three share :class:`~veriforge.search.engine.SearchEngine`: the same proposers, evaluation
cache, guardrails, noise handling, final re-measure, tree JSON and resume. They differ only in
which edit is evaluated next:

* :class:`RandomSearch`: a uniformly random accepted, non-exhausted node, then a uniformly random
  untried edit of it (random tree growth; what "random search over edits" means when the only
  way to make a state is to edit another).
* :class:`HillClimb`: steepest ascent. Evaluate every edit of the current state, move to the best
  child if it is better beyond ``tie_tolerance``, stop (``converged``) when none is.
* :class:`BeamSearch`: keep the ``width`` best states of each generation, expand them all, the
  next generation is the ``width`` best accepted children; stop when a generation has none.
"""

from __future__ import annotations

from typing import Any, TypeVar

from veriforge.search.engine import Choice, SearchEngine
from veriforge.search.errors import SearchConfigError
from veriforge.search.tree import ACCEPTED, PENDING, Node

__all__ = ["BeamSearch", "HillClimb", "RandomSearch"]

S = TypeVar("S")


class RandomSearch(SearchEngine[S]):
    """Random expansion: random node, random untried edit."""

    algorithm = "random"

    async def select(self) -> Choice | None:
        while True:
            open_nodes = [n for n in self.tree.nodes if n.status == ACCEPTED and not n.exhausted]
            if not open_nodes:
                return None
            node = self.rng.choice(open_nodes)
            picked = await self.next_edit(node, choose=self.rng.randrange)
            if picked is not None:
                return node, picked[0], picked[1]
            node.exhausted = True  # no untried edits left; the draw is repeated among the others


class HillClimb(SearchEngine[S]):
    """Steepest-ascent hill climbing from the initial state."""

    algorithm = "hill-climb"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current = 0

    def policy_state(self) -> dict[str, Any]:
        return {"current": self.current}

    def restore_policy(self, state: dict[str, Any]) -> None:
        self.current = int(state.get("current", 0))

    async def select(self) -> Choice | None:
        while True:
            node = self.tree.nodes[self.current]
            picked = await self.next_edit(node)
            if picked is not None:
                return node, picked[0], picked[1]
            if any(c.status == PENDING for c in node.children):
                return None  # wait for this neighbourhood to finish
            step = self._better_child(node)
            if step is None:
                self.stop_reason = "converged"
                return None
            self.current = step.id

    def _better_child(self, node: Node[S]) -> Node[S] | None:
        good = [c for c in node.children if c.status == ACCEPTED]
        if not good or node.value is None:
            return None
        best = max(good, key=lambda c: (c.value or 0.0, -c.id))
        s = self.scale
        if best.value is None or best.value <= node.value:
            return None
        if s.tied(s.quantity_of(best.value), s.quantity_of(node.value), self.config.tie_tolerance):
            return None
        return best


class BeamSearch(SearchEngine[S]):
    """Beam search of ``width`` states per generation."""

    algorithm = "beam"

    def __init__(self, *args: Any, width: int = 4, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if width < 1:
            raise SearchConfigError("beam width must be >= 1")
        self.width = width
        self.frontier: list[int] = [0]

    def algorithm_config(self) -> dict[str, Any]:
        return {"width": self.width}

    def policy_state(self) -> dict[str, Any]:
        return {"frontier": list(self.frontier)}

    def restore_policy(self, state: dict[str, Any]) -> None:
        self.frontier = [int(i) for i in state.get("frontier", [0])]

    async def select(self) -> Choice | None:
        while True:
            generation = [self.tree.nodes[i] for i in self.frontier]
            for node in generation:
                picked = await self.next_edit(node)
                if picked is not None:
                    return node, picked[0], picked[1]
            children = [c for n in generation for c in n.children]
            if any(c.status == PENDING for c in children):
                return None
            good = sorted((c for c in children if c.status == ACCEPTED),
                          key=lambda c: (-(c.value or 0.0), c.id))
            if not good:
                self.stop_reason = "exhausted"
                return None
            self.frontier = [c.id for c in good[: self.width]]
