"""The two nouns of the benchmark layer: an :class:`Item` to answer and the :class:`Score` of an answer.

Every loader turns its public format into :class:`Item` so the engine never sees dataset-specific
fields; every scorer returns :class:`Score`, which keeps *could not read an answer* (``parse_failed``)
apart from *read an answer and it was wrong*: both count as wrong, but only the first points at the
prompt or the extractor rather than at the model's reasoning, so it is reported separately.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Item", "Score", "Summary", "summarize"]


@dataclass(frozen=True)
class Item:
    """One benchmark question.

    ``question`` is the full text to show a model (choices included); ``answer`` is the gold answer in
    canonical form (a number, a LaTeX expression, ``True``/``False``/``Uncertain``, a choice letter, or
    for code the reference solution); ``meta`` keeps what scoring needs (choices, tests, entry point)
    and the dataset's own fields worth keeping (level, subject, ...). ``instruction`` is a one-line
    answer-format hint; :attr:`prompt` is question plus hint.
    """

    id: str
    suite: str
    domain: str
    question: str
    answer: str
    meta: Mapping[str, Any] = field(default_factory=dict)
    instruction: str = ""

    @property
    def prompt(self) -> str:
        """The question followed by the answer-format hint (what a model should be sent)."""
        return f"{self.question}\n\n{self.instruction}" if self.instruction else self.question

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for run stores and result tables)."""
        out = asdict(self)
        out["meta"] = dict(self.meta)
        return out


@dataclass(frozen=True)
class Score:
    """The verdict on one response: ``correct``; ``parsed`` is the answer read from it (``None`` when
    nothing could be read, then ``parse_failed`` is true and ``correct`` false); ``detail`` says why."""

    correct: bool
    parsed: str | None
    parse_failed: bool
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Summary:
    """Accuracy over a set of scores, with parse failures counted (as wrong) and reported."""

    n: int
    correct: int
    parse_failures: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else float("nan")

    @property
    def parse_failure_rate(self) -> float:
        return self.parse_failures / self.n if self.n else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "accuracy": self.accuracy, "parse_failure_rate": self.parse_failure_rate}


def summarize(scores: Iterable[Score]) -> Summary:
    """Count correct answers and parse failures (a parse failure is never correct)."""
    items = list(scores)
    return Summary(
        n=len(items), correct=sum(s.correct for s in items), parse_failures=sum(s.parse_failed for s in items)
    )
