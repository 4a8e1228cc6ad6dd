"""The Reviewer: ranks the whole reasoning memory with pairwise judgements in both orders.

After each layer the new traces are compared with the memory through
:class:`~veriforge.rank.PairwiseJudge` (each pair judged as A/B *and* B/A; a preference that does
not survive the swap counts as a tie, so position bias cancels) and
:func:`~veriforge.rank.run_tournament`, and the memory's ratings are refitted over *all* outcomes
so far. Ratings are Bradley–Terry by default (order-independent, with standard errors) or Elo
(sequential: later judgements weigh more; see docs/moa.md). The comparison budget is the main cost
knob:

* ``all_pairs`` — every pair not yet compared: n(n−1)/2 over the run, exact but quadratic;
* ``swiss`` — ``rounds`` Swiss rounds over the whole memory (default ⌈log₂ n⌉+1), never repeating
  a pair: separates the top from the rest at about n/2 comparisons a round;
* ``topk`` — the new layer against the current top ``k`` and against each other: old tails are
  never re-judged, so cost per layer is about width·k + width²/2.

``max_comparisons`` caps one layer's comparisons (schedulers put the most useful pairs first).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from veriforge.moa.config import ReviewerConfig
from veriforge.moa.memory import ReasoningMemory
from veriforge.rank.judge import DEFAULT_SYSTEM, DEFAULT_TEMPLATE, PairwiseJudge
from veriforge.rank.tournament import AllPairs, Scheduler, SwissRounds, TopKRefresh, TournamentResult, run_tournament

__all__ = ["Reviewer"]


class Reviewer:
    """Ranks a :class:`ReasoningMemory` for one question; ``client`` is any ``chat``-capable client."""

    def __init__(self, client: Any, config: ReviewerConfig | None = None, *, seed: int = 0) -> None:
        self.config = config or ReviewerConfig()
        self.seed = seed
        self.judge = PairwiseJudge(
            client,
            template=self.config.template or DEFAULT_TEMPLATE,
            system=self.config.system or DEFAULT_SYSTEM,
            both_orders=self.config.both_orders,
            temperature=self.config.temperature,
            max_tokens=self.config.max_tokens,
        )

    def scheduler(self, new_ids: Sequence[str]) -> Scheduler:
        cfg = self.config
        if cfg.budget == "all_pairs":
            return AllPairs(seed=self.seed)
        if cfg.budget == "swiss":
            return SwissRounds(rounds=cfg.rounds, seed=self.seed)
        return TopKRefresh(new_items=list(new_ids), k=cfg.k)

    async def review(self, memory: ReasoningMemory, question: str, new_ids: Sequence[str]) -> TournamentResult:
        """Judge the pairs the budget allows, refit ratings over all outcomes, store both in ``memory``."""
        proposals = memory.proposals()
        items = [t.id for t in proposals]
        responses = {t.id: t.reasoning for t in proposals}
        result = await run_tournament(
            items,
            self.judge.comparer(question, responses),
            self.scheduler(new_ids),
            budget=self.config.max_comparisons,
            concurrency=self.config.concurrency,
            prior=memory.outcomes,
            method=self.config.rating,
            source="reviewer",
        )
        memory.add_review(result.outcomes, result.ratings)
        return result
