"""The Ranked Reasoning Memory: every trace of every layer, persisted, with the Reviewer's ranking.

Vanilla MoA forgets: layer *l* sees only layer *l−1*. ReM-MoA keeps every trace (who wrote it, with
which prompt, what it reasoned, what answer was extracted, what it cost) and ranks the whole memory
with the comparative Reviewer, so a good trace from layer 1 can still be shown at layer 6.

Two kinds of evidence sit beside each trace and are never mixed:

* ``Trace.verified`` — a verifier's checked fact (tests passed, exact answer) or ``None``;
* the Reviewer's opinion — pairwise :class:`~veriforge.rank.Outcome` values (``source="reviewer"``)
  and the :class:`~veriforge.rank.Ratings` fitted from them (:meth:`ReasoningMemory.score`).

Persistence: the run store's ``records`` table, keyed by run — namespace ``moa.trace`` (key
``<run>/<trace id>``), ``moa.outcome`` (``<run>/<seq>``), ``moa.ratings`` (``<run>``) and
``moa.pending`` (``<run>/<a>|<b>``: a verdict of a review that has not finished yet) and
``moa.journal`` (``<run>/<request hash>#<occurrence>``: each answered reviewer request, so half of
a both-orders pair is not asked twice) —
so :meth:`ReasoningMemory.load` rebuilds the same memory after a restart, and a resumed run asks
for nothing that was already answered: each agent's traces are stored as its call returns, each
comparison as its verdict arrives.

Order: traces named by the engine (``L<layer>A<agent>s<sample>``, ``final``) are kept in (layer,
agent, sample) order whatever order their calls finished in, so a resumed run ranks ties exactly
like an uninterrupted one; other ids keep the order they were added.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veriforge.rank.outcomes import Outcome
from veriforge.rank.ratings import Ratings

if TYPE_CHECKING:
    from veriforge.core.store import RunStore

__all__ = ["NS_JOURNAL", "NS_OUTCOME", "NS_PENDING", "NS_RATINGS", "NS_TRACE", "DroppedRef", "RankedTrace",
           "ReasoningMemory", "RefShown", "Trace"]

NS_TRACE = "moa.trace"
NS_OUTCOME = "moa.outcome"
NS_RATINGS = "moa.ratings"
NS_PENDING = "moa.pending"
NS_JOURNAL = "moa.journal"

_ENGINE_ID = re.compile(r"L(\d+)A(\d+)s(\d+)")

Label = Literal["good", "failed", "previous"]


class RefShown(BaseModel):
    """A reference trace shown to an agent, and why: ``good`` / ``failed`` (and on whose evidence:
    ``reviewer`` rank or ``verifier`` result) or ``previous`` (vanilla MoA: the previous layer)."""

    model_config = ConfigDict(frozen=True)

    id: str
    label: Label
    label_source: Literal["reviewer", "verifier", "layer"] = "reviewer"
    rank: int | None = None
    tokens: int = 0


class DroppedRef(BaseModel):
    """A reference that was selected but left out whole to respect a context budget."""

    model_config = ConfigDict(frozen=True)

    id: str
    tokens: int
    reason: str


class Trace(BaseModel):
    """One model output of a run (a proposer's answer or the final aggregation).

    ``layer`` counts from 0; the final aggregation has ``role="aggregator"`` and ``layer=depth``.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    layer: int
    agent: str
    model: str
    role: Literal["proposer", "aggregator"] = "proposer"
    system: str | None = None
    prompt: str
    reasoning: str
    answer: str | None = None
    parsed: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    references: list[RefShown] = Field(default_factory=list)
    dropped: list[DroppedRef] = Field(default_factory=list)
    verified: bool | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class RankedTrace(BaseModel):
    """A trace's place in the ranking: reviewer score and rank beside the verifier's result."""

    id: str
    rank: int
    score: float | None
    games: int
    layer: int
    agent: str
    answer: str | None
    verified: bool | None


class ReasoningMemory:
    """All traces of one run, their reviewer outcomes and ratings; persisted when given a store."""

    def __init__(self, run_id: str, store: RunStore | None = None) -> None:
        self.run_id = run_id
        self.store = store
        self._traces: dict[str, Trace] = {}
        self.outcomes: list[Outcome] = []
        self.ratings: Ratings | None = None
        self.pending: dict[str, Outcome] = {}
        self._journal_seen: dict[str, int] = {}

    # ------------------------------------------------------------------ contents

    def __len__(self) -> int:
        return len(self._traces)

    def __contains__(self, trace_id: object) -> bool:
        return trace_id in self._traces

    def __getitem__(self, trace_id: str) -> Trace:
        return self._traces[trace_id]

    @property
    def traces(self) -> list[Trace]:
        """Every trace, in the order they were added."""
        return list(self._traces.values())

    def proposals(self) -> list[Trace]:
        """The proposers' traces (what the Reviewer ranks and routing chooses from)."""
        return [t for t in self._traces.values() if t.role == "proposer"]

    def layer(self, index: int) -> list[Trace]:
        return [t for t in self.proposals() if t.layer == index]

    @property
    def layers_done(self) -> int:
        """How many proposer layers are stored (a resumed run starts after them)."""
        return 1 + max((t.layer for t in self.proposals()), default=-1)

    def score(self, trace_id: str) -> float | None:
        """The Reviewer's rating of a trace (``None`` before any review)."""
        if self.ratings is None:
            return None
        return self.ratings.scores.get(trace_id)

    def ranking(self) -> list[str]:
        """Proposal ids best first by reviewer score; unrated traces after rated ones, oldest first.

        Ties (e.g. no decisive comparison yet) keep the order traces were added, so the ranking
        is deterministic.
        """
        order = {t.id: k for k, t in enumerate(self.proposals())}
        scores = self.ratings.scores if self.ratings is not None else {}
        return sorted(order, key=lambda x: (x not in scores, -scores.get(x, 0.0), order[x]))

    def ranked(self) -> list[RankedTrace]:
        """The ranking with scores, games, answers and verifier results side by side."""
        games = self.ratings.games if self.ratings is not None else {}
        out = []
        for rank, tid in enumerate(self.ranking(), start=1):
            t = self._traces[tid]
            out.append(RankedTrace(id=tid, rank=rank, score=self.score(tid), games=games.get(tid, 0),
                                   layer=t.layer, agent=t.agent, answer=t.answer, verified=t.verified))
        return out

    # ------------------------------------------------------------------- updates

    def add(self, traces: Iterable[Trace], *, persist: bool = True) -> None:
        """Add traces (one store transaction for the batch; ``persist=False``: already stored by
        :meth:`persist`)."""
        batch = list(traces)
        for t in batch:
            self._traces[t.id] = t
        self._sort()
        if persist:
            self.persist(batch)

    def persist(self, traces: Iterable[Trace]) -> None:
        """Write traces to the store only (a layer's agents as each returns; :meth:`add` them later)."""
        batch = list(traces)
        if self.store is not None and batch:
            with self.store.transaction():
                for t in batch:
                    self.store.put_record(NS_TRACE, f"{self.run_id}/{t.id}", t.model_dump(mode="json"),
                                          run_id=self.run_id)

    def _sort(self) -> None:
        """Engine-named traces in (layer, agent, sample) order, ``final`` last; else insertion order."""
        keys = {}
        for tid in self._traces:
            m = _ENGINE_ID.fullmatch(tid)
            if m is None and tid != "final":
                return
            keys[tid] = (1, 0, 0, 0) if m is None else (0, int(m[1]), int(m[2]), int(m[3]))
        self._traces = dict(sorted(self._traces.items(), key=lambda kv: keys[kv[0]]))

    def journal_next(self, request_key: str) -> tuple[str, Any]:
        """The journal key of this occurrence of a request in this attempt, and the answer an earlier
        attempt of the run stored under it (``None``: ask). Occurrences are counted so a request made
        twice is replayed at most as often as it was answered."""
        k = self._journal_seen.get(request_key, 0)
        self._journal_seen[request_key] = k + 1
        key = f"{self.run_id}/{request_key}#{k}"
        return key, (self.store.get_record(NS_JOURNAL, key) if self.store is not None else None)

    def journal_put(self, key: str, value: Any) -> None:
        """Keep an answered request (a reviewer call) so a restart replays it instead of asking."""
        if self.store is not None:
            self.store.put_record(NS_JOURNAL, key, value, run_id=self.run_id)

    def remember_pending(self, key: str, outcome: Outcome) -> None:
        """Keep a verdict of a review in progress, so a restart does not ask for it again."""
        self.pending[key] = outcome
        if self.store is not None:
            self.store.put_record(NS_PENDING, f"{self.run_id}/{key}", outcome.model_dump(mode="json"),
                                  run_id=self.run_id)

    def update(self, trace: Trace) -> None:
        """Replace a stored trace (e.g. after its verifier result arrived)."""
        self.add([trace])

    def add_review(self, outcomes: Iterable[Outcome], ratings: Ratings) -> None:
        """Record new reviewer outcomes and the ratings refitted over all of them."""
        new = list(outcomes)
        start = len(self.outcomes)
        self.outcomes.extend(new)
        self.ratings = ratings
        if self.store is None:
            return
        with self.store.transaction():
            for k, o in enumerate(new, start=start):
                self.store.put_record(NS_OUTCOME, f"{self.run_id}/{k:06d}", o.model_dump(mode="json"),
                                      run_id=self.run_id)
            self.store.put_record(NS_RATINGS, self.run_id, ratings.model_dump(mode="json"), run_id=self.run_id)

    # ------------------------------------------------------------------- loading

    @classmethod
    def load(cls, store: RunStore, run_id: str) -> ReasoningMemory:
        """Rebuild a run's memory from the store (traces in insertion order, outcomes in sequence)."""
        memory = cls(run_id, store)
        for rec in store.records(NS_TRACE, run_id=run_id):
            trace = Trace.model_validate(rec.value)
            memory._traces[trace.id] = trace
        memory._sort()
        outcomes = sorted(store.records(NS_OUTCOME, run_id=run_id), key=lambda r: r.key)
        memory.outcomes = [Outcome.model_validate(r.value) for r in outcomes]
        ratings = store.get_record(NS_RATINGS, run_id)
        memory.ratings = Ratings.model_validate(ratings) if ratings is not None else None
        prefix = f"{run_id}/"
        memory.pending = {r.key[len(prefix):]: Outcome.model_validate(r.value)
                          for r in store.records(NS_PENDING, run_id=run_id)}
        return memory
