"""Per-run token and cost accounting, split by role (proposers, aggregator, reviewer).

A client's running totals (:attr:`veriforge.llm.LLMClient.totals`) mix every run that shares the
client, so a run cannot read its own spend from them once runs overlap (the scaling runner, a
server). Instead every response the run receives adds its own ``usage`` and ``cost_usd`` — the
very numbers the client adds to its totals — to a :class:`RunAccount`. The Reviewer's calls go
through :class:`MeteredClient`, a thin proxy, because :class:`~veriforge.rank.PairwiseJudge` calls
the client itself. Cost stays ``None`` once any call of a role had no price (never a silent zero).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from veriforge.llm.accounting import Totals
from veriforge.llm.types import ChatResponse

__all__ = ["MeteredClient", "RoleAccount", "RunAccount"]


#: What one role spent: the client's own running-totals type, booked per response.
RoleAccount = Totals


@dataclass
class RunAccount:
    """Spend of one run, by role."""

    roles: dict[str, RoleAccount] = field(default_factory=dict)

    def add(self, role: str, response: ChatResponse) -> None:
        self.roles.setdefault(role, RoleAccount()).add_response(response)

    @property
    def total_tokens(self) -> int:
        return sum(r.total_tokens for r in self.roles.values())

    @property
    def calls(self) -> int:
        return sum(r.calls for r in self.roles.values())

    @property
    def cost_usd(self) -> float | None:
        costs = [r.cost_usd for r in self.roles.values()]
        return None if any(c is None for c in costs) else float(sum(c for c in costs if c is not None))

    def to_dict(self) -> dict[str, Any]:
        return {"total_tokens": self.total_tokens, "calls": self.calls, "cost_usd": self.cost_usd,
                "roles": {name: acc.to_dict() for name, acc in sorted(self.roles.items())}}


class MeteredClient:
    """Forwards ``chat`` to an :class:`~veriforge.llm.LLMClient` and books each response to a role."""

    def __init__(self, client: Any, account: RunAccount, role: str) -> None:
        self.client = client
        self.account = account
        self.role = role

    async def chat(self, request: Any, **params: Any) -> ChatResponse:
        response = await self.client.chat(request, **params)
        self.account.add(self.role, response)
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)
