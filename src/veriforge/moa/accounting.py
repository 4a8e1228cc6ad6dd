"""Per-run token and cost accounting, split by role (proposers, aggregator, reviewer).

A client's running totals (:attr:`veriforge.llm.LLMClient.totals`) mix every run that shares the
client, so a run cannot read its own spend from them once runs overlap (the scaling runner, a
server). Instead every response the run receives adds its own ``usage`` and ``cost_usd`` — the
very numbers the client adds to its totals — to a :class:`RunAccount`. The Reviewer's calls go
through :class:`MeteredClient`, a thin proxy, because :class:`~veriforge.rank.PairwiseJudge` calls
the client itself. Cost stays ``None`` once any call of a role had no price (never a silent zero).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from veriforge.core.hashing import content_hash
from veriforge.llm.accounting import Totals
from veriforge.llm.types import ChatResponse

__all__ = ["MeteredClient", "RoleAccount", "RunAccount"]


#: What one role spent: the client's own running-totals type, booked per response.
RoleAccount = Totals


@dataclass
class RunAccount:
    """Spend of one run, by role, and the engine time it took (``prior_seconds``: earlier, interrupted
    attempts of the same run, restored from the run store by :meth:`from_dict`)."""

    roles: dict[str, RoleAccount] = field(default_factory=dict)
    prior_seconds: float = 0.0
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RunAccount:
        """The account :meth:`to_state` wrote (a resumed run continues from it); ``None``: a new one."""
        account = cls()
        if not data:
            return account
        names = {f.name for f in fields(RoleAccount)}
        for role, totals in (data.get("roles") or {}).items():
            account.roles[role] = RoleAccount(**{k: v for k, v in totals.items() if k in names})
        account.prior_seconds = float(data.get("seconds") or 0.0)
        return account

    @property
    def seconds(self) -> float:
        return self.prior_seconds + time.monotonic() - self.started

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

    def to_state(self) -> dict[str, Any]:
        """:meth:`to_dict` plus the engine ``seconds`` so far (what the run store keeps between attempts)."""
        return {**self.to_dict(), "seconds": round(self.seconds, 4)}


class MeteredClient:
    """Forwards ``chat`` to an :class:`~veriforge.llm.LLMClient` and books each response to a role.

    With a ``journal`` (a run's :class:`~veriforge.moa.memory.ReasoningMemory`), each answered
    request is stored and a restarted run gets an earlier attempt's answer back without asking
    (and without booking it again: the restored account already holds it); ``checkpoint`` runs
    after each booked response so the stored spend keeps up.
    """

    def __init__(self, client: Any, account: RunAccount, role: str, *, journal: Any = None,
                 checkpoint: Callable[[], None] | None = None) -> None:
        self.client = client
        self.account = account
        self.role = role
        self.journal = journal
        self.checkpoint = checkpoint

    async def chat(self, request: Any, **params: Any) -> ChatResponse:
        key = None
        if self.journal is not None:
            request_key = content_hash("moa-journal", self.role, request.model_dump_json(),
                                       json.dumps(params, sort_keys=True, default=str))
            key, stored = self.journal.journal_next(request_key)
            if stored is not None:
                return ChatResponse.model_validate(stored)
        response = await self.client.chat(request, **params)
        self.account.add(self.role, response)
        if key is not None:
            self.journal.journal_put(key, response.model_dump(mode="json"))
        if self.checkpoint is not None:
            self.checkpoint()
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)
