"""Curated Diversified Memory Routing: which traces each next-layer agent is shown.

Vanilla MoA shows every agent the same previous-layer answers, so agents converge on the same
references and depth stops helping. Here each agent gets its *own* few strong traces and a few
failed ones (labelled as failed), chosen from the whole ranked memory:

1. **Quality.** The *good pool* is the top ``good_fraction`` of the Reviewer's ranking; the
   *failed pool* is the bottom ``failed_fraction`` — but only traces the Reviewer rated strictly
   below every good-pool trace (a trace that merely tied is not "failed"), plus, when
   ``use_verifier`` is on, traces the verifier rejected (labelled with source ``verifier``).
2. **Diversity.** Each agent's picks are made one at a time by the key (answer this agent has not
   been shown yet, times the trace was given to other agents of this layer, rank, newer layer
   first) — ``diversity="traces"`` drops the answer criterion, ``"none"`` keeps only rank.
3. **Budget.** ``max_reference_tokens`` is enforced by *selection*: a pick that would overflow the
   budget is left out whole, recorded as a :class:`~veriforge.moa.memory.DroppedRef` with the
   reason, and the next candidate is tried. Text is never cut.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from veriforge.moa.config import RoutingConfig
from veriforge.moa.memory import DroppedRef, ReasoningMemory, RefShown, Trace
from veriforge.moa.tokens import TokenCounter, estimate_tokens

__all__ = ["Route", "previous_layer_route", "reference_diversity", "route_layer", "select_within_budget"]


@dataclass
class Route:
    """What one agent is shown: references in prompt order, and the ones dropped for the budget."""

    agent: str
    refs: list[RefShown] = field(default_factory=list)
    dropped: list[DroppedRef] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.refs]

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.refs)


class _Budget:
    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.used = 0

    def fits(self, tokens: int) -> bool:
        return self.limit is None or self.used + tokens <= self.limit

    def reason(self, tokens: int) -> str:
        return (f"{tokens} tokens would exceed the reference budget "
                f"({self.used} of {self.limit} already used)")


def trace_tokens(trace: Trace, count: TokenCounter) -> int:
    """Tokens a trace takes when shown as a reference (its reasoning text)."""
    return count(trace.reasoning)


def select_within_budget(
    candidates: Sequence[Trace], limit: int | None, count: TokenCounter = estimate_tokens,
    label: str = "previous", label_source: str = "layer",
) -> tuple[list[RefShown], list[DroppedRef]]:
    """Take ``candidates`` in order while they fit ``limit``; the rest are dropped whole, with reasons."""
    budget = _Budget(limit)
    refs: list[RefShown] = []
    dropped: list[DroppedRef] = []
    for t in candidates:
        tokens = trace_tokens(t, count)
        if budget.fits(tokens):
            budget.used += tokens
            refs.append(RefShown(id=t.id, label=label, label_source=label_source, tokens=tokens))  # type: ignore[arg-type]
        else:
            dropped.append(DroppedRef(id=t.id, tokens=tokens, reason=budget.reason(tokens)))
    return refs, dropped


def previous_layer_route(
    memory: ReasoningMemory, agents: Sequence[str], layer: int, limit: int | None,
    count: TokenCounter = estimate_tokens,
) -> list[Route]:
    """Vanilla MoA: every agent sees the previous layer's traces (whole ones that fit the budget)."""
    refs, dropped = select_within_budget(memory.layer(layer - 1), limit, count)
    return [Route(agent=a, refs=list(refs), dropped=list(dropped)) for a in agents]


Pool = list[tuple[Trace, str]]


def _pools(memory: ReasoningMemory, cfg: RoutingConfig, layer: int) -> tuple[list[Trace], Pool, dict[str, int]]:
    oldest = layer - cfg.max_layer_age if cfg.max_layer_age is not None else 0
    ranking = [memory[i] for i in memory.ranking()]
    eligible = [t for t in ranking if oldest <= t.layer < layer]
    rank = {t.id: k for k, t in enumerate(ranking, start=1)}
    verifier_failed = [t for t in eligible if cfg.use_verifier and t.verified is False]
    rest = [t for t in eligible if t not in verifier_failed]
    n = len(rest)
    n_good = max(1, math.ceil(cfg.good_fraction * n)) if n else 0
    good = rest[:n_good]
    failed: Pool = [(t, "verifier") for t in verifier_failed]
    n_failed = min(n - n_good, round(cfg.failed_fraction * n))
    if memory.ratings is not None and good and n_failed > 0:
        floor = min(memory.score(t.id) or 0.0 for t in good)
        tail = rest[n - n_failed:]
        failed += [(t, "reviewer") for t in tail if (memory.score(t.id) or 0.0) < floor]
    return good, failed, rank


def route_layer(
    memory: ReasoningMemory, agents: Sequence[str], config: RoutingConfig, layer: int,
    count: TokenCounter = estimate_tokens,
) -> list[Route]:
    """One :class:`Route` per agent of ``layer`` (see the module docstring for the rules)."""
    good, failed, rank = _pools(memory, config, layer)
    usage: Counter[str] = Counter()
    routes = []
    for agent in agents:
        route = Route(agent=agent)
        budget = _Budget(config.max_reference_tokens)
        seen_answers: set[str] = set()
        pools: list[tuple[str, list[tuple[Trace, str]], int]] = [
            ("good", [(t, "reviewer") for t in good], config.top_m),
            ("failed", failed, config.failed_f),
        ]
        for label, pool, quota in pools:
            _pick(route, label, pool, quota, budget, usage, seen_answers, rank, config.diversity, count)
        routes.append(route)
    return routes


def _pick(
    route: Route, label: str, pool: list[tuple[Trace, str]], quota: int, budget: _Budget,
    usage: Counter[str], seen_answers: set[str], rank: dict[str, int], diversity: str,
    count: Callable[[str], int],
) -> None:
    remaining = list(pool)
    taken = 0

    def key(item: tuple[Trace, str]) -> tuple[int, ...]:
        t = item[0]
        new_answer = 0 if (t.answer is None or t.answer not in seen_answers) else 1
        spread = usage[t.id]
        if diversity == "none":
            return (rank[t.id], -t.layer)
        if diversity == "traces":
            return (spread, rank[t.id], -t.layer)
        return (new_answer, spread, rank[t.id], -t.layer)

    while taken < quota and remaining:
        best = min(remaining, key=key)
        remaining.remove(best)
        trace, source = best
        tokens = trace_tokens(trace, count)
        if not budget.fits(tokens):
            route.dropped.append(DroppedRef(id=trace.id, tokens=tokens, reason=budget.reason(tokens)))
            continue
        budget.used += tokens
        route.refs.append(RefShown(id=trace.id, label=label, label_source=source,  # type: ignore[arg-type]
                                   rank=rank[trace.id], tokens=tokens))
        usage[trace.id] += 1
        if trace.answer is not None:
            seen_answers.add(trace.answer)
        taken += 1


def reference_diversity(routes: Sequence[Route], memory: ReasoningMemory | None = None) -> dict[str, float]:
    """How different the agents' reference sets are: mean pairwise Jaccard *distance* of the sets
    (0 = everyone saw the same traces), distinct traces shown, and (with ``memory``) distinct
    answers shown and the mean number of distinct answers per agent."""
    sets = [set(r.ids) for r in routes]
    pairs = list(itertools.combinations(sets, 2))

    def distance(a: set[str], b: set[str]) -> float:
        union = a | b
        return 0.0 if not union else 1.0 - len(a & b) / len(union)

    out = {
        "jaccard_distance": sum(distance(a, b) for a, b in pairs) / len(pairs) if pairs else 0.0,
        "distinct_refs": float(len(set().union(*sets))) if sets else 0.0,
    }
    if memory is not None:
        answers = [{memory[i].answer for i in s if memory[i].answer is not None} for s in sets]
        out["distinct_answers"] = float(len(set().union(*answers))) if answers else 0.0
        out["answers_per_agent"] = sum(len(a) for a in answers) / len(answers) if answers else 0.0
    return out
