"""The comparative Reviewer: an LLM that says which of two responses to one question is better.

LLM judges prefer whichever response is shown first (or second) far more often than chance —
*position bias*. :class:`PairwiseJudge` therefore asks twice, once as (A=a, B=b) and once as
(A=b, B=a), concurrently, and combines the two verdicts (after mapping each back to the items):

=====================================  =========================================
both calls pick the same item           that item wins
both calls say tie                      tie
the calls disagree (incl. tie vs win)   tie — the preference did not survive swapping
either call could not be parsed         failed outcome (``failed=True``, tie), with the reason
=====================================  =========================================

So a judge that always answers "A" produces only ties, and a judge that really prefers the better
response produces wins regardless of order. A parse failure is never a win: it is recorded (both
raw replies are kept in ``Outcome.judgements``) and the rating fits skip it. ``both_orders=False``
asks once (half the cost) and is documented as position-biased; use it only for cheap screening.
Token usage of both calls is summed into ``Outcome.usage``; cost is in the client's totals.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from veriforge.llm.client import LLMClient
from veriforge.llm.types import ChatRequest, Message
from veriforge.rank.errors import RankError
from veriforge.rank.outcomes import Judgement, Outcome, Source, Verdict, Winner
from veriforge.rank.tournament import Compare
from veriforge.rank.verdicts import (
    ParsedVerdict,
    VerdictParser,
    normalize_verdict,
    parse_verdict,
    regex_parser,
)

__all__ = ["DEFAULT_SYSTEM", "DEFAULT_TEMPLATE", "PairwiseJudge", "combine_verdicts"]

DEFAULT_SYSTEM = (
    "You are an impartial judge of answers to questions. You compare two responses to the same "
    "question and decide which is better. Correctness comes first, then the soundness and clarity of "
    "the reasoning. Do not let the order of the responses or their length influence you."
)

DEFAULT_TEMPLATE = """[Question]
{question}

[Response A]
{response_a}

[Response B]
{response_b}

Which response is better? Explain briefly, then give your verdict on the last line: [[A]] if \
Response A is better, [[B]] if Response B is better, [[tie]] if they are equally good."""

_PLACEHOLDER = re.compile(r"\{(question|response_a|response_b)\}")


def render(template: str, question: str, response_a: str, response_b: str) -> str:
    """Fill ``{question}``, ``{response_a}``, ``{response_b}`` — and nothing else.

    Not ``str.format``: responses (code, JSON) and templates (JSON instructions) contain braces.
    """
    values = {"question": question, "response_a": response_a, "response_b": response_b}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def _winner(verdict: Verdict | None, order: str) -> Winner | None:
    if verdict is None:
        return None
    if verdict == "tie":
        return "tie"
    first_is_a = order == "ab"
    return "a" if (verdict == "A") == first_is_a else "b"


def combine_verdicts(winners: list[Winner | None]) -> tuple[Winner, bool, str]:
    """``(winner, failed, reason)`` from the per-order winners (outcome frame), per the table above."""
    if any(w is None for w in winners):
        return "tie", True, "no usable verdict from at least one order"
    distinct = list(dict.fromkeys(winners))
    if len(distinct) == 1:
        only = distinct[0]
        assert only is not None
        return only, False, "consistent" if len(winners) > 1 else "single order (position bias not cancelled)"
    said = " vs ".join(str(w) for w in winners)
    return "tie", False, f"inconsistent across orders ({said}): counted as a tie"


class PairwiseJudge:
    """Ask ``client`` which of two responses is better, in both orders (see the module docstring).

    ``template`` must contain ``{response_a}`` and ``{response_b}`` (``{question}`` optional).
    ``parse`` is the parse rule: ``None`` for :func:`~veriforge.rank.verdicts.parse_verdict`, a
    regular expression whose group 1 captures the verdict, or a callable ``text -> ParsedVerdict |
    "A" | "B" | "tie" | None``. ``temperature=0`` by default: a reviewer should be repeatable.
    ``request_options`` are further :class:`~veriforge.llm.ChatRequest` fields (``seed``, ``extra``).
    """

    def __init__(
        self,
        client: LLMClient,
        template: str = DEFAULT_TEMPLATE,
        parse: VerdictParser | str | re.Pattern[str] | None = None,
        *,
        system: str | None = DEFAULT_SYSTEM,
        both_orders: bool = True,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        request_options: Mapping[str, Any] | None = None,
        source: Source = "reviewer",
    ) -> None:
        missing = [p for p in ("{response_a}", "{response_b}") if p not in template]
        if missing:
            raise RankError(f"the judge template lacks {', '.join(missing)}")
        self.client = client
        self.template = template
        if parse is None:
            self._parse: VerdictParser = parse_verdict
        elif isinstance(parse, (str, re.Pattern)):
            self._parse = regex_parser(parse)
        else:
            self._parse = parse
        self.system = system
        self.both_orders = both_orders
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.request_options = dict(request_options or {})
        self.source = source

    def messages(self, question: str, first: str, second: str) -> list[Message]:
        """The chat messages for one order (``first`` is shown as Response A)."""
        out = [Message(role="system", content=self.system)] if self.system else []
        out.append(Message(role="user", content=render(self.template, question, first, second)))
        return out

    def parse(self, text: str) -> ParsedVerdict:
        """Apply the parse rule; a rule that raises or returns junk is a parse failure, not a crash."""
        try:
            result = self._parse(text)
        except Exception as exc:  # a user-supplied rule must not take the whole ranking down
            return ParsedVerdict(None, f"parse rule raised {type(exc).__name__}: {exc}")
        if isinstance(result, ParsedVerdict):
            return result
        verdict = normalize_verdict(result) if result is not None else None
        return ParsedVerdict(verdict, "" if verdict else f"parse rule returned {result!r}")

    async def _ask(self, question: str, a: str, b: str, texts: tuple[str, str], order: str) -> Judgement:
        first, second = (texts[0], texts[1]) if order == "ab" else (texts[1], texts[0])
        request = ChatRequest(
            messages=self.messages(question, first, second),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            **self.request_options,
        )
        response = await self.client.chat(request)
        raw = response.text
        parsed = self.parse(raw)
        return Judgement(
            order=order,  # type: ignore[arg-type]
            shown_first=a if order == "ab" else b,
            raw=raw,
            verdict=parsed.verdict,
            winner=_winner(parsed.verdict, order),
            error=parsed.error,
            usage=response.usage,
        )

    async def judge(
        self,
        question: str,
        response_a: str,
        response_b: str,
        *,
        a: str = "a",
        b: str = "b",
        meta: Mapping[str, Any] | None = None,
    ) -> Outcome:
        """Compare ``response_a`` (item ``a``) with ``response_b`` (item ``b``) for ``question``.

        LLM errors (after the client's retries) propagate; :func:`run_tournament` records them as
        failed outcomes.
        """
        orders = ("ab", "ba") if self.both_orders else ("ab",)
        texts = (response_a, response_b)
        judgements = await asyncio.gather(*(self._ask(question, a, b, texts, o) for o in orders))
        winner, failed, reason = combine_verdicts([j.winner for j in judgements])
        if failed:
            reason = "; ".join(f"order {j.order}: {j.error}" for j in judgements if j.winner is None)
        usage = judgements[0].usage
        for j in judgements[1:]:
            usage = usage + j.usage
        return Outcome(a=a, b=b, winner=winner, source=self.source, failed=failed, reason=reason,
                       judgements=tuple(judgements), usage=usage, meta=dict(meta or {}))

    def comparer(self, question: str, responses: Mapping[str, str]) -> Compare:
        """A ``compare(a, b)`` for :func:`~veriforge.rank.tournament.run_tournament` over ``responses``
        (item id → response text) to one ``question``."""

        async def compare(a: str, b: str) -> Outcome:
            return await self.judge(question, responses[a], responses[b], a=a, b=b)

        return compare
