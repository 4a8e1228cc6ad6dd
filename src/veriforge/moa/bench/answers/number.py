"""Numeric answers (GSM8K): where models put the number, and when two numbers are the same answer.

Order of trust: GSM8K's own ``#### N`` marker, a ``\\boxed{N}``, an "answer is / Answer:" phrase, and
only then the last number in the text (the GSM8K convention for unmarked outputs). Numbers are
normalised — thousands separators, currency, a trailing period, unicode minus, ``.00`` — and
compared exactly as decimals (``1,234.50`` == ``1234.5``; ``0.3333`` != ``1/3``).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

__all__ = ["extract_number", "normalize_number", "numbers_equal"]

_NUM = r"[-−–]?\s?\$?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?|[-−]?\.\d+"
_NUMBER = re.compile(_NUM)
_HASHES = re.compile(r"####\s*(" + _NUM + ")")
_BOXED = re.compile(r"\\boxed\s*\{\s*(?:\\text\{\s*)?\$?(" + _NUM + r")")
_PHRASE = re.compile(
    r"(?i)(?:final answer|the answer|answer)\s*(?:is|:|=)?\s*(?:[:=]\s*)?(?:\*\*)?\s*(?:approximately\s+)?("
    + _NUM
    + ")"
)


def normalize_number(text: str) -> str | None:
    """Canonical decimal string (``"-1234.5"``), or ``None`` if ``text`` is not a number.

    A fraction ``a/b`` that is an exact decimal is written as one (``3/4`` → ``0.75``); others stay
    ``a/b`` in lowest terms.
    """
    s = text.strip().replace("−", "-").replace("–", "-").replace("$", "").replace(",", "").replace(" ", "")
    s = s.rstrip(".").rstrip("%")
    if "/" in s:
        num, _, den = s.partition("/")
        try:
            from fractions import Fraction

            f = Fraction(int(num), int(den))
        except (ValueError, ZeroDivisionError):
            return None
        d = Decimal(f.numerator) / Decimal(f.denominator)
        if d * f.denominator == f.numerator and len(str(d)) < 20:
            return _fmt(d)
        return f"{f.numerator}/{f.denominator}"
    try:
        return _fmt(Decimal(s))
    except InvalidOperation:
        return None


def _fmt(d: Decimal) -> str:
    if d == d.to_integral_value():
        return str(int(d))
    return format(d.normalize(), "f")


def numbers_equal(a: str, b: str) -> bool:
    """Whether two answers are the same number (after :func:`normalize_number`); never raises."""
    na, nb = normalize_number(a), normalize_number(b)
    return na is not None and na == nb


def extract_number(text: str) -> str | None:
    """The answer number in ``text`` (normalised), or ``None`` when there is none."""
    for pattern in (_HASHES, _BOXED, _PHRASE):
        hits = pattern.findall(text)
        if hits:
            value = normalize_number(hits[-1])
            if value is not None:
                return value
    hits = _NUMBER.findall(text)
    for raw in reversed(hits):
        value = normalize_number(raw)
        if value is not None:
            return value
    return None
