"""The result of comparing two items, and where that result came from.

Every rater in this package (Bradley–Terry, Elo, win rate) reads :class:`Outcome` values, whoever
produced them: an LLM Reviewer judging two reasoning traces, a verifier that ran both programs'
tests, or measured run times. The ``source`` field keeps *opinions* (``"reviewer"``) apart from
*checked facts* (``"verifier"``): ReM-MoA stores both beside each trace and must never let a
reviewer's taste pass for a passed test, so the fits refuse to mix them unless told which one to use.

A comparison that produced no usable verdict (unparseable judge output, a failed call) is kept as
an outcome with ``failed=True`` and ``winner="tie"`` so it is visible and counted, but the fits skip
it by default: a failure is missing information, not evidence that the two items are equal, and
certainly never a silent win.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from veriforge.llm.types import Usage

__all__ = ["SOURCES", "Judgement", "Outcome", "Source", "Verdict", "Winner"]

Source = Literal["reviewer", "verifier"]
"""``reviewer``: a comparative judge's opinion; ``verifier``: a checked fact (tests, exact answer)."""

SOURCES: tuple[str, ...] = ("reviewer", "verifier")

Winner = Literal["a", "b", "tie"]
"""Who won, in the outcome's own frame (``a`` and ``b`` are item ids)."""

Verdict = Literal["A", "B", "tie"]
"""What a judge said, in the frame of the prompt it saw (``A`` = the response shown first)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_json(self) -> str:
        """Compact JSON (for the run store and traces)."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        """Parse what :meth:`to_json` wrote."""
        return cls.model_validate_json(text)


class Judgement(_Model):
    """One judge call: which item was shown first, what the model wrote, what that was read as.

    ``verdict`` is in the prompt's frame (``A`` = ``shown_first``); ``winner`` is the same verdict
    in the outcome's frame (``a``/``b``/``tie``; ``None`` when the text could not be parsed, with
    ``error`` saying why). ``order="ba"`` means item ``b`` was shown as Response A.
    """

    order: Literal["ab", "ba"]
    shown_first: str
    raw: str
    verdict: Verdict | None
    winner: Winner | None
    error: str = ""
    usage: Usage = Field(default_factory=Usage)


class Outcome(_Model):
    """One comparison of item ``a`` with item ``b``.

    ``winner`` is ``"a"``, ``"b"`` or ``"tie"``; :attr:`score_a` turns it into 1, 0 or ½ (ties
    count half in every rater). ``judgements`` holds the raw judge calls behind a reviewer outcome
    and ``usage`` their summed tokens; ``meta`` is free-form (task, layer, ...).
    """

    a: str
    b: str
    winner: Winner
    source: Source = "reviewer"
    failed: bool = False
    reason: str = ""
    judgements: tuple[Judgement, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> Outcome:
        if self.a == self.b:
            raise ValueError(f"an outcome compares two different items, got {self.a!r} twice")
        if self.failed and self.winner != "tie":
            raise ValueError("a failed comparison has no winner (winner must be 'tie')")
        return self

    @property
    def score_a(self) -> float:
        """1.0 if ``a`` won, 0.0 if ``b`` won, 0.5 for a tie."""
        return {"a": 1.0, "b": 0.0, "tie": 0.5}[self.winner]

    @property
    def winner_id(self) -> str | None:
        """The winning item's id, ``None`` for a tie or a failure."""
        return {"a": self.a, "b": self.b}.get(self.winner)

    @property
    def decisive(self) -> bool:
        """A real win for one side (not a tie, not a failure)."""
        return not self.failed and self.winner != "tie"

    @property
    def consistent(self) -> bool | None:
        """Did the judge calls behind this outcome agree? ``None`` unless two or more were parsed.

        ``False`` is the signature of position bias (the judge preferred whichever was shown first).
        """
        winners = [j.winner for j in self.judgements if j.winner is not None]
        return None if len(winners) < 2 else len(set(winners)) == 1

    def flipped(self) -> Outcome:
        """The same comparison with ``a`` and ``b`` swapped (winner mapped accordingly)."""
        swap: dict[str | None, Any] = {"a": "b", "b": "a", "tie": "tie", None: None}
        order = {"ab": "ba", "ba": "ab"}
        judgements = tuple(j.model_copy(update={"order": order[j.order], "winner": swap[j.winner]})
                           for j in self.judgements)
        return self.model_copy(update={"a": self.b, "b": self.a, "winner": swap[self.winner],
                                       "judgements": judgements})

    @classmethod
    def from_score(cls, a: str, b: str, score_a: float, **fields: Any) -> Outcome:
        """An outcome from ``a``'s score: 1 (win), 0 (loss) or 0.5 (tie)."""
        winner = {1.0: "a", 0.0: "b", 0.5: "tie"}.get(float(score_a))
        if winner is None:
            raise ValueError(f"score_a must be 1, 0 or 0.5, got {score_a!r}")
        return cls(a=a, b=b, winner=winner, **fields)

    @classmethod
    def from_verifier(cls, a: str, b: str, a_passed: bool, b_passed: bool, **fields: Any) -> Outcome:
        """A ``verifier`` outcome: the item that passed beats the one that did not; same result → tie."""
        winner = "tie" if a_passed == b_passed else ("a" if a_passed else "b")
        reason = fields.pop("reason", f"verifier: a {'passed' if a_passed else 'failed'}, "
                                      f"b {'passed' if b_passed else 'failed'}")
        return cls(a=a, b=b, winner=winner, source="verifier", reason=reason, **fields)
