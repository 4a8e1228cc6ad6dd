"""Token and cost accounting.

Prices come from the settings (``prices``: model name -> USD per million input and output
tokens). A model without a price costs ``None``, not ``0``: a report that says "free" for an
unpriced hosted model would be a silent lie. Running totals say how many calls were not priced.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from veriforge.llm.types import Usage


@dataclass(frozen=True)
class Price:
    """USD per one million prompt (input) and completion (output) tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, usage: Usage) -> float:
        return (usage.prompt_tokens * self.input_per_mtok + usage.completion_tokens * self.output_per_mtok) / 1e6


def _as_price(value: Any) -> Price:
    """Accept ``{"input": x, "output": y}``, ``(x, y)`` or an object with ``input``/``output``."""
    if isinstance(value, Price):
        return value
    if isinstance(value, Mapping):
        inp = value.get("input", value.get("input_per_mtok", value.get("prompt")))
        out = value.get("output", value.get("output_per_mtok", value.get("completion")))
    elif isinstance(value, list | tuple) and len(value) == 2:
        inp, out = value
    else:
        inp = getattr(value, "input", getattr(value, "input_per_mtok", None))
        out = getattr(value, "output", getattr(value, "output_per_mtok", None))
    if inp is None or out is None:
        raise ValueError(f"a price needs input and output USD per 1M tokens, got {value!r}")
    return Price(float(inp), float(out))


class PriceTable:
    """Look up a model's price by any of the names it goes by."""

    def __init__(self, prices: Mapping[str, Any] | None = None) -> None:
        self._prices = {name: _as_price(p) for name, p in (prices or {}).items()}

    def lookup(self, names: Iterable[str | None]) -> Price | None:
        """The first name with a price wins; ``org/model`` also matches a price for ``model``."""
        candidates = [n for n in names if n]
        for name in [*candidates, *(n.rsplit("/", 1)[-1] for n in candidates)]:
            if name in self._prices:
                return self._prices[name]
        return None

    def cost(self, usage: Usage, names: Iterable[str | None]) -> float | None:
        """The cost of ``usage``; ``0.0`` when nothing was spent; ``None`` when unpriced."""
        if usage.total == 0:
            return 0.0
        price = self.lookup(names)
        return None if price is None else price.cost(usage)


@dataclass
class Totals:
    """Running totals of one client (thread-safe updates through :class:`Accountant`)."""

    calls: int = 0
    failed_calls: int = 0
    samples: int = 0
    cached_samples: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    priced_cost_usd: float = 0.0
    unpriced_calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost_usd(self) -> float | None:
        """Total spend, or ``None`` if any call used tokens of a model without a price."""
        return None if self.unpriced_calls else self.priced_cost_usd

    def add(self, *, usage: Usage, cost: float | None, samples: int, cached: int) -> None:
        """Book one successful call (not thread-safe by itself; :class:`Accountant` locks)."""
        self.calls += 1
        self.samples += samples
        self.cached_samples += cached
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.priced_cost_usd += cost

    def add_response(self, response: Any) -> None:
        """Book one :class:`~veriforge.llm.types.ChatResponse` (for callers keeping their own tally,
        e.g. one run's or one role's spend on a shared client)."""
        self.add(usage=response.usage, cost=response.cost_usd, samples=len(response.completions),
                 cached=sum(response.cached))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_tokens": self.total_tokens, "cost_usd": self.cost_usd}


class Accountant:
    """Adds each call's usage and cost to the running totals."""

    def __init__(self, prices: PriceTable) -> None:
        self.prices = prices
        self.totals = Totals()
        self._lock = threading.Lock()

    def record(self, *, usage: Usage, cost: float | None, samples: int, cached: int) -> None:
        with self._lock:
            self.totals.add(usage=usage, cost=cost, samples=samples, cached=cached)

    def record_failure(self) -> None:
        with self._lock:
            self.totals.failed_calls += 1
