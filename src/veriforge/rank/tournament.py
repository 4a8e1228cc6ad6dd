"""Which pairs to compare, and running the comparisons: all pairs, Swiss rounds, top-k refresh.

Judging a pair with an LLM costs two model calls (both orders), so *which* pairs get judged is the
main cost knob. A scheduler proposes pairs round by round, looking at the outcomes and ratings so
far; :func:`run_tournament` judges each round's pairs concurrently (bounded), refits the ratings
and asks for the next round until the scheduler has nothing left or the budget is spent.

* :class:`AllPairs` — every pair once: n(n−1)/2 comparisons; the most information, the most cost.
* :class:`SwissRounds` — each round pairs items with similar current ratings and never repeats a
  pair, so about ⌈log₂ n⌉+1 rounds of n/2 comparisons separate the top from the rest at a fraction
  of the all-pairs cost (the ranking *within* the tail is coarser).
* :class:`TopKRefresh` — when new items arrive (a new MoA layer), compare them only with the
  current top-k and with each other: the old tail is not re-judged.

A *comparison* is one call of ``compare(a, b)`` (the judge's two orders count as one); ``budget``
caps comparisons made by one run, cutting the last round short when needed (schedulers order each
round by priority so the cut drops the least useful pairs).
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from veriforge.errors import VeriforgeError
from veriforge.llm.types import Usage
from veriforge.rank.errors import ScheduleError
from veriforge.rank.outcomes import Outcome, Source
from veriforge.rank.ratings import Method, Ratings, fit_ratings

__all__ = [
    "AllPairs",
    "Compare",
    "Pair",
    "Scheduler",
    "SwissRounds",
    "TopKRefresh",
    "TournamentResult",
    "TournamentState",
    "run_tournament",
]

Pair = tuple[str, str]
Compare = Callable[[str, str], Awaitable[Outcome]]


def _key(a: str, b: str) -> Pair:
    return (a, b) if a < b else (b, a)


@dataclass
class TournamentState:
    """What a scheduler sees before proposing a round."""

    items: list[str]
    outcomes: list[Outcome]
    ratings: Ratings | None
    round: int = 0
    budget_left: int | None = None
    _counts: Counter[Pair] = field(default_factory=Counter, repr=False)

    def __post_init__(self) -> None:
        for o in self.outcomes:
            self._counts[_key(o.a, o.b)] += 1

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self._counts[_key(outcome.a, outcome.b)] += 1

    def times_compared(self, a: str, b: str) -> int:
        """How often ``a`` and ``b`` have met (either order, failures included)."""
        return self._counts[_key(a, b)]

    def score(self, item: str) -> float:
        """The item's current rating (0 before any fit)."""
        if self.ratings is None:
            return 0.0
        return self.ratings.scores.get(item, 0.0)


class Scheduler(Protocol):
    """Proposes the next round of pairs; an empty list ends the tournament."""

    def next_round(self, state: TournamentState) -> list[Pair]: ...


def _shuffled(items: Sequence[str], seed: int | None) -> list[str]:
    out = list(items)
    if seed is not None:
        random.Random(seed).shuffle(out)
    return out


@dataclass
class AllPairs:
    """Every pair of items once (pairs compared before the run are skipped when ``skip_compared``).

    With a budget smaller than the number of pairs, the pairs are taken in a seeded random order
    (``seed=None`` keeps item order), so the cut does not fall only on the last items.
    """

    seed: int | None = 0
    skip_compared: bool = True

    def next_round(self, state: TournamentState) -> list[Pair]:
        if state.round > 0:
            return []
        pairs = [
            (a, b)
            for p, a in enumerate(state.items)
            for b in state.items[p + 1:]
            if not (self.skip_compared and state.times_compared(a, b))
        ]
        if self.seed is not None:
            random.Random(self.seed).shuffle(pairs)
        return pairs


@dataclass
class SwissRounds:
    """Swiss-system rounds: sort by current rating, pair neighbours that have not met yet.

    ``rounds=None`` plays ⌈log₂ n⌉ + 1 rounds. The first round's order is a seeded shuffle. An item
    left without an opponent it has not met gets a bye that round (a pair is never repeated), so a
    round has at most ⌊n/2⌋ comparisons. Rounds are ordered top first, so a budget cut drops the
    pairings at the bottom of the table.
    """

    rounds: int | None = None
    seed: int | None = 0

    def planned_rounds(self, n: int) -> int:
        return self.rounds if self.rounds is not None else (math.ceil(math.log2(n)) + 1 if n > 1 else 0)

    def next_round(self, state: TournamentState) -> list[Pair]:
        if state.round >= self.planned_rounds(len(state.items)):
            return []
        base = {x: k for k, x in enumerate(_shuffled(state.items, self.seed))}
        table = sorted(state.items, key=lambda x: (-state.score(x), base[x]))
        pairs: list[Pair] = []
        unpaired = table
        while unpaired:
            first, rest = unpaired[0], unpaired[1:]
            partner = next((y for y in rest if not state.times_compared(first, y)), None)
            if partner is not None:
                pairs.append((first, partner))
                rest = [y for y in rest if y != partner]
            unpaired = rest
        return pairs


@dataclass
class TopKRefresh:
    """Compare ``new_items`` with the current top ``k`` of the other items, and with each other.

    The top k come from the ratings of the outcomes passed to :func:`run_tournament` as ``prior``
    (items without any prior outcome rank last, in item order). One round; pairs already compared
    are skipped. New-vs-top pairs come first (best-rated first), then new-vs-new, so a budget cut
    keeps the comparisons that decide whether a newcomer enters the top.
    """

    new_items: Sequence[str]
    k: int = 3

    def next_round(self, state: TournamentState) -> list[Pair]:
        if state.round > 0:
            return []
        new = list(dict.fromkeys(self.new_items))
        unknown = [x for x in new if x not in state.items]
        if unknown:
            raise ScheduleError(f"new items not among the tournament's items: {', '.join(unknown)}")
        fresh = set(new)
        old = [x for x in state.items if x not in fresh]
        order = {x: p for p, x in enumerate(state.items)}
        top = sorted(old, key=lambda x: (-state.score(x), order[x]))[: max(self.k, 0)]
        pairs = [(n, t) for t in top for n in new]
        pairs += [(a, b) for p, a in enumerate(new) for b in new[p + 1:]]
        return [(a, b) for a, b in pairs if not state.times_compared(a, b)]


@dataclass
class TournamentResult:
    """What a tournament produced: new outcomes, final ratings, the rounds as played."""

    outcomes: list[Outcome]
    ratings: Ratings
    rounds: list[list[Pair]]
    all_outcomes: list[Outcome]

    @property
    def comparisons(self) -> int:
        return len(self.outcomes)

    @property
    def failures(self) -> int:
        return sum(o.failed for o in self.outcomes)

    @property
    def usage(self) -> Usage:
        total = Usage()
        for o in self.outcomes:
            total = total + o.usage
        return total

    def ranking(self) -> list[str]:
        return self.ratings.ranking()


async def run_tournament(
    items: Iterable[str],
    compare: Compare,
    scheduler: Scheduler,
    *,
    budget: int | None = None,
    concurrency: int = 4,
    prior: Iterable[Outcome] = (),
    method: Method = "bradley_terry",
    rating_options: dict[str, Any] | None = None,
    source: Source | None = None,
    on_error: Literal["record", "raise"] = "record",
    failure_source: Source = "reviewer",
) -> TournamentResult:
    """Play ``scheduler``'s rounds, calling ``compare(a, b)`` at most ``concurrency`` at a time.

    ``prior`` outcomes count for the ratings (and for "already compared") but not for the budget.
    Ratings are refitted after every round with ``method`` (``rating_options`` passed on;
    ``source`` as in :func:`~veriforge.rank.ratings.select_outcomes`). Outcomes keep the order the
    pairs were scheduled in, not the order calls finished, so Elo ratings are reproducible.

    With ``on_error="record"`` a :class:`~veriforge.errors.VeriforgeError` from ``compare`` (a model
    server that keeps failing) becomes a failed outcome with the error as its reason; other
    exceptions are bugs and propagate.
    """
    ids = list(dict.fromkeys(items))
    if not ids:
        raise ScheduleError("a tournament needs items")
    if budget is not None and budget < 0:
        raise ScheduleError("the comparison budget cannot be negative")
    if concurrency < 1:
        raise ScheduleError("concurrency must be at least 1")
    options = dict(rating_options or {})
    known = set(ids)

    def fit(outcomes: list[Outcome]) -> Ratings:
        return fit_ratings(outcomes, ids, method, source=source, **options)

    prior_list = list(prior)
    for o in prior_list:
        if o.a not in known or o.b not in known:
            raise ScheduleError(f"a prior outcome compares {o.a!r} and {o.b!r}, not both among the items")
    state = TournamentState(items=ids, outcomes=list(prior_list),
                            ratings=fit(prior_list) if prior_list else None, budget_left=budget)
    semaphore = asyncio.Semaphore(concurrency)
    new: list[Outcome] = []
    rounds: list[list[Pair]] = []

    async def one(a: str, b: str) -> Outcome:
        async with semaphore:
            try:
                outcome = await compare(a, b)
            except VeriforgeError as exc:
                if on_error == "raise":
                    raise
                return Outcome(a=a, b=b, winner="tie", failed=True, source=failure_source,
                               reason=f"comparison failed: {type(exc).__name__}: {exc}")
        if (outcome.a, outcome.b) == (b, a):
            outcome = outcome.flipped()
        if (outcome.a, outcome.b) != (a, b):
            raise ScheduleError(f"compare({a!r}, {b!r}) returned an outcome for "
                                f"{outcome.a!r} vs {outcome.b!r}")
        return outcome

    while state.budget_left is None or state.budget_left > 0:
        pairs = scheduler.next_round(state)
        for a, b in pairs:
            if a not in known or b not in known or a == b:
                raise ScheduleError(f"scheduler proposed an invalid pair ({a!r}, {b!r})")
        if state.budget_left is not None:
            pairs = pairs[: state.budget_left]
        if not pairs:
            break
        results = await asyncio.gather(*(one(a, b) for a, b in pairs))
        for outcome in results:
            state.add(outcome)
            new.append(outcome)
        rounds.append(list(pairs))
        state.round += 1
        if state.budget_left is not None:
            state.budget_left -= len(pairs)
        state.ratings = fit(state.outcomes)
    ratings = state.ratings if state.ratings is not None else fit(state.outcomes)
    return TournamentResult(outcomes=new, ratings=ratings, rounds=rounds, all_outcomes=state.outcomes)
