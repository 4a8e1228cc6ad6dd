"""Monte Carlo Tree Search over edits.

A node is an evaluated state; an action is an edit producing a child state. Each iteration walks
from the root: at a node that progressive widening allows another child (``ceil(k·n^α)``), the
proposers' next untried edit is taken and its state evaluated; otherwise the walk descends to the
child with the best UCT or PUCT score. The new node's value is backed up to the root (max or mean
backup, see :class:`~veriforge.search.config.MCTSConfig`). There is no random rollout: the
evaluation of the state *is* the simulation, as in MCTS for program optimisation (PG-TD, LATS).

Values are normalised to [0, 1] by the bounds seen in the tree before scoring, so the documented
exploration constants hold for any objective scale. Nodes that can produce nothing new (proposals
exhausted, every child rejected or exhausted) are marked exhausted and never selected again.
With ``batch_size`` > 1 several leaves are chosen before any is evaluated; virtual loss along the
chosen paths spreads them out.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

from veriforge.search.config import MCTSConfig
from veriforge.search.engine import Choice, SearchEngine
from veriforge.search.selection import max_children, puct_score, uct_score
from veriforge.search.tree import ACCEPTED, PENDING, Node

__all__ = ["MCTS"]

S = TypeVar("S")


class MCTS(SearchEngine[S]):
    """MCTS with UCT/PUCT selection, progressive widening and max/mean backup.

    Same constructor as :class:`~veriforge.search.engine.SearchEngine`, plus ``mcts`` settings.
    """

    algorithm = "mcts"

    def __init__(self, proposers: Any, evaluator: Any, config: Any = None, *, mcts: MCTSConfig | None = None,
                 **kwargs: Any) -> None:
        super().__init__(proposers, evaluator, config, **kwargs)
        self.mcts = mcts or MCTSConfig()

    def algorithm_config(self) -> dict[str, Any]:
        return self.mcts.to_json()

    # --- selection ---------------------------------------------------------------------------

    async def select(self) -> Choice | None:
        cfg = self.mcts
        while True:
            node = self.tree.root
            if node.exhausted:
                return None
            restart = False
            while not restart:
                limit = max_children(node.visits + node.virtual, cfg.widening_k, cfg.widening_alpha)
                if not node.proposals_exhausted and len(node.children) < limit:
                    picked = await self.next_edit(node)
                    if picked is not None:
                        return node, picked[0], picked[1]
                choices = [c for c in node.children if c.status == ACCEPTED and not c.exhausted]
                if not choices:
                    # Nothing to descend into: widen beyond the limit rather than waste the visit.
                    picked = await self.next_edit(node)
                    if picked is not None:
                        return node, picked[0], picked[1]
                    if any(c.status == PENDING for c in node.children):
                        return None  # the rest of this subtree is being evaluated in this batch
                    node.exhausted = True  # a dead end: start the walk again without it
                    restart = True
                    continue
                node = self._best_child(node, choices)

    def _best_child(self, parent: Node[S], choices: list[Node[S]]) -> Node[S]:
        scores = [self.score(parent, c) for c in choices]
        top = max(scores)
        best = [c for c, s in zip(choices, scores, strict=True) if s == top]
        return best[0] if len(best) == 1 else self.rng.choice(best)

    def score(self, parent: Node[S], child: Node[S]) -> float:
        """The selection score of ``child`` under ``parent`` (UCT or PUCT on normalised values)."""
        cfg = self.mcts
        n = child.visits + child.virtual
        big_n = parent.visits + parent.virtual
        q = self.q_value(child)
        if cfg.selection == "uct":
            return uct_score(q * n, n, big_n, cfg.c_uct)
        return puct_score(q, self.prior(parent, child), n, big_n, cfg.c_puct)

    def q_value(self, node: Node[S]) -> float:
        """The node's value normalised to [0, 1]: its subtree's best (max backup) or the mean of
        its backups with rejected and in-flight (virtual loss) ones counting as 0 (mean backup)."""
        bounds = self.tree.bounds
        if self.mcts.backup == "max":
            return bounds.normalise(node.best) if node.best is not None else 0.0
        good = node.visits - node.losses
        if good <= 0:
            return 0.0
        mean = node.value_sum / good
        return bounds.normalise(mean) * good / (node.visits + node.virtual)

    def prior(self, parent: Node[S], child: Node[S]) -> float:
        """The child's edit prior normalised over its siblings (missing priors count as the mean of
        the given ones, or 1 when none is given)."""
        raw = [(c.edit or {}).get("prior") for c in parent.children]
        given = [p for p in raw if p is not None]
        default = sum(given) / len(given) if given else 1.0
        values = [default if p is None else p for p in raw]
        total = math.fsum(values)
        mine = (child.edit or {}).get("prior")
        mine = default if mine is None else mine
        return mine / total if total > 0 else 1.0 / len(parent.children)

    # --- virtual loss ------------------------------------------------------------------------

    def on_dispatch(self, node: Node[S]) -> None:
        anc = node.parent
        while anc is not None:
            anc.virtual += self.mcts.virtual_loss
            anc = anc.parent

    def on_complete(self, node: Node[S]) -> None:
        anc = node.parent
        while anc is not None:
            anc.virtual -= self.mcts.virtual_loss
            anc = anc.parent
