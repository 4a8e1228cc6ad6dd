"""Turning a reasoning trace into an answer, and checking it: the pluggable parts of a run.

An *extractor* reads the final answer out of a model's text; it decides which traces agree
(routing's answer clusters, self-consistency's vote), so each benchmark domain brings its own
(``veriforge.moa.bench``). A *verifier* is a checked fact about an answer (unit tests passed, the
exact answer matched) and is stored beside — never mixed with — the Reviewer's opinion.

:func:`default_extractor` is what ``veriforge moa ask`` uses for free-form questions: an explicit
answer marker if there is one (``#### 42``, ``\\boxed{42}``, ``Answer: 42``, ``[[answer]]``), else
the last number, else the last non-empty line.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = [
    "Extracted",
    "Extractor",
    "Verifier",
    "as_extracted",
    "default_extractor",
    "last_line_extractor",
    "normalize_answer",
]


@dataclass(frozen=True)
class Extracted:
    """An extracted answer; ``parsed=False`` means no answer could be found (``answer`` is ``None``)."""

    answer: str | None
    parsed: bool
    how: str = ""


#: ``extractor(text) -> Extracted | str | None`` (a string is a parsed answer; ``None`` a parse failure).
Extractor = Callable[[str], "Extracted | str | None"]

#: ``verifier(question, answer) -> True | False | None`` (``None``: cannot tell); may be async.
Verifier = Callable[[str, "str | None"], "bool | Awaitable[bool | None] | None"]

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_MARKERS = (
    ("####", re.compile(r"####\s*(.+)")),
    ("boxed", re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")),
    ("[[answer]]", re.compile(r"\[\[\s*([^\[\]]+?)\s*\]\]")),
    ("answer:", re.compile(r"(?i)(?:final answer|answer)\s*(?:is|:)\s*(.+)")),
)


def normalize_answer(text: str) -> str:
    """Canonical form for comparing answers: trimmed, lower-case, no trailing period, numbers
    without thousands separators or a trailing ``.0`` (so ``1,000.0`` equals ``1000``)."""
    s = text.strip().strip("*`$ ").rstrip(".").strip()
    if _NUMBER.fullmatch(s):
        s = s.replace(",", "")
        if "." in s:
            s = s.rstrip("0").rstrip(".") or "0"
        return s
    return " ".join(s.lower().split())


def _last_number(text: str) -> str | None:
    found = _NUMBER.findall(text)
    return normalize_answer(found[-1]) if found else None


def default_extractor(text: str) -> Extracted:
    """Answer marker (last one wins), else last number, else last non-empty line."""
    for name, pattern in _MARKERS:
        hits = pattern.findall(text)
        if hits:
            raw = hits[-1].strip().splitlines()[0] if hits[-1].strip() else ""
            number = _last_number(raw) if name in ("####", "answer:") else None
            value = number if number is not None and _NUMBER.fullmatch(raw.strip().rstrip(".")) else raw
            if value:
                return Extracted(normalize_answer(value), True, name)
    number = _last_number(text)
    if number is not None:
        return Extracted(number, True, "last number")
    return last_line_extractor(text)


def last_line_extractor(text: str) -> Extracted:
    """The last non-empty line, normalised (free-text answers)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return Extracted(None, False, "empty")
    return Extracted(normalize_answer(lines[-1]), True, "last line")


def as_extracted(value: Extracted | str | None) -> Extracted:
    """Accept what an extractor may return: an :class:`Extracted`, a string, or ``None``."""
    if isinstance(value, Extracted):
        return value
    if value is None or (isinstance(value, str) and not value.strip()):
        return Extracted(None, False, "extractor found nothing")
    return Extracted(str(value), True, "extractor")
