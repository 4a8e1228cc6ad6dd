"""The Reviewer: ranks the whole reasoning memory with pairwise judgements.

After each layer the new traces are compared with the memory through
:func:`~veriforge.rank.run_tournament`, and the memory's ratings are refitted over *all* outcomes
so far. Who judges a pair is a pluggable back-end (:mod:`veriforge.moa.reviewers`): the LLM judge
(:class:`~veriforge.rank.PairwiseJudge`, each pair judged as A/B *and* B/A; a preference that does
not survive the swap counts as a tie, so position bias cancels), a distilled reward model, or any
``veriforge.rank`` judge. Ratings are Bradley–Terry by default (order-independent, with standard
errors) or Elo (sequential: later judgements weigh more; see docs/moa.md). The comparison budget is
the main cost knob:

* ``all_pairs`` — every pair not yet compared: n(n−1)/2 over the run, exact but quadratic;
* ``swiss`` — ``rounds`` Swiss rounds over the whole memory (default ⌈log₂ n⌉+1), never repeating
  a pair: separates the top from the rest at about n/2 comparisons a round;
* ``topk`` — the new layer against the current top ``k`` and against each other: old tails are
  never re-judged, so cost per layer is about width·k + width²/2.

``max_comparisons`` caps one layer's comparisons (schedulers put the most useful pairs first).
With ``skip_known`` a scheduled pair whose outcome is known — identical responses, or equal parsed
answers — is recorded as a tie without asking the back-end (``Outcome.meta["skipped"]``); it still
counts as one of the layer's scheduled comparisons.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from veriforge.moa.config import ReviewerConfig
from veriforge.moa.memory import ReasoningMemory
from veriforge.moa.reviewers import LLMJudgeBackend, ReviewBackend, known_outcome, skipped_outcome
from veriforge.rank.outcomes import Outcome
from veriforge.rank.tournament import AllPairs, Scheduler, SwissRounds, TopKRefresh, TournamentResult, run_tournament

__all__ = ["Reviewer"]


class Reviewer:
    """Ranks a :class:`ReasoningMemory` for one question.

    ``backend`` judges the pairs (:mod:`veriforge.moa.reviewers`); without one, ``client`` (any
    ``chat``-capable client) is wrapped in the LLM judge, as before back-ends were pluggable.
    """

    def __init__(self, client: Any = None, config: ReviewerConfig | None = None, *, seed: int = 0,
                 backend: ReviewBackend | None = None) -> None:
        self.config = config or ReviewerConfig()
        self.seed = seed
        if backend is None:
            if client is None:
                raise TypeError("Reviewer needs a client (LLM judge) or a backend")
            backend = LLMJudgeBackend(client, self.config)
        self.backend = backend

    def scheduler(self, new_ids: Sequence[str]) -> Scheduler:
        cfg = self.config
        if cfg.budget == "all_pairs":
            return AllPairs(seed=self.seed)
        if cfg.budget == "swiss":
            return SwissRounds(rounds=cfg.rounds, seed=self.seed)
        return TopKRefresh(new_items=list(new_ids), k=cfg.k)

    async def review(self, memory: ReasoningMemory, question: str, new_ids: Sequence[str],
                     checkpoint: Callable[[], None] | None = None, upto_layer: int | None = None) -> TournamentResult:
        """Judge the pairs the budget allows, refit ratings over all outcomes, store both in ``memory``.

        Each verdict is kept in the memory as it arrives (:meth:`ReasoningMemory.remember_pending`,
        then ``checkpoint()``), so a review interrupted by a kill is replayed from those verdicts
        without asking the reviewer again (the schedule is deterministic given the same outcomes).
        Failed judgements are not kept: a restart retries them. ``upto_layer`` leaves later layers out
        (a resumed run may already hold some traces of the next layer; they are reviewed after it).
        """
        traces = {t.id: t for t in memory.proposals() if upto_layer is None or t.layer <= upto_layer}
        judged = await self.backend.comparer(question, traces)
        skip = self.config.skip_known

        async def compare(a: str, b: str) -> Outcome:
            reason = known_outcome(traces[a], traces[b]) if skip else None
            if reason is not None:
                return skipped_outcome(a, b, reason)
            key = f"{a}|{b}"
            if key in memory.pending:
                return memory.pending[key]
            outcome = await judged(a, b)
            if not outcome.failed:
                memory.remember_pending(key, outcome)
                if checkpoint is not None:
                    checkpoint()
            return outcome

        result = await run_tournament(
            list(traces),
            compare,
            self.scheduler(new_ids),
            budget=self.config.max_comparisons,
            concurrency=self.config.concurrency,
            prior=memory.outcomes,
            method=self.config.rating,
            source="reviewer",
        )
        memory.add_review(result.outcomes, result.ratings)
        return result
