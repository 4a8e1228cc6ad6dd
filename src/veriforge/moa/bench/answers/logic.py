"""Truth-value answers (FOLIO True/False/Uncertain, ProntoQA True/False, StrategyQA yes/no).

Models rarely answer with a bare label. They write "the conclusion is uncertain", "this is not
true", "the statement cannot be determined from the premises", "**False**". The extractor scans for
verdict *phrases*, longest first at each position, so "not true" is False (not True), "not
necessarily true" and "neither true nor false" are Uncertain, and "not false" is True. If the text has
an answer clause ("Answer: ...", "the answer is ...", "the conclusion is ...", "**...**" at the end),
the verdict in the last such clause wins; otherwise the last verdict phrase in the text does —
reasoning comes first and the conclusion last. An echo of the instruction ("True, False, or
Uncertain") is ignored. Yes/no count only where the suite allows them (``yes_no=True``).
"""

from __future__ import annotations

import re

__all__ = ["extract_truth"]

_UNCERTAIN = [
    r"neither true nor false",
    r"not necessarily (?:true|false)",
    r"cannot be (?:determined|decided|"
    r"concluded|inferred|proven|proved|known)(?: (?:to be )?(?:true|false))?",
    r"can ?not be (?:determined|decided)",
    r"can't be (?:determined|decided|concluded|known)",
    r"impossible to (?:determine|tell|know)",
    r"not (?:enough|sufficient) information",
    r"insufficient information",
    r"undetermined",
    r"indeterminate",
    r"uncertain",
    r"unknown",
    r"undecidable",
    r"unclear",
]
_FALSE = [r"not true", r"isn't true", r"is not correct", r"untrue", r"false"]
_TRUE = [r"not false", r"isn't false", r"true"]
_YES_NO = {"yes": "True", "no": "False"}

_ECHO = re.compile(
    r"(?i)\b(?:true|yes)\s*(?:,|/|or)\s*(?:false|no)(?:\s*(?:,|/|or)\s*(?:uncertain|unknown))?(?:\s*,?\s*or\s*"
    r"(?:uncertain|unknown))?\b"
)
_CLAUSE = re.compile(
    r"(?i)(?:final answer|answer|verdict|conclusion|the statement|the claim|label)\s*"
    r"(?:is|:|=|would be|should be)\s*"
    r"([^\n]*)"
)
_BOLD = re.compile(r"\*\*([^*\n]{1,60})\*\*")


def _pattern(yes_no: bool) -> tuple[re.Pattern[str], list[tuple[str, str]]]:
    alts = (
        [(p, "Uncertain") for p in _UNCERTAIN] + [(p, "False") for p in _FALSE] + [(p, "True") for p in _TRUE]
    )
    if yes_no:
        alts += [(w, label) for w, label in _YES_NO.items()]
    alts.sort(key=lambda pl: -len(pl[0]))
    return re.compile("|".join(f"(?P<g{i}>\\b{p}\\b)" for i, (p, _) in enumerate(alts)), re.IGNORECASE), alts


_PATTERNS = {flag: _pattern(flag) for flag in (False, True)}


def _verdicts(text: str, yes_no: bool) -> list[str]:
    pattern, alts = _PATTERNS[yes_no]
    text = _ECHO.sub(" ", text)
    out = []
    for m in pattern.finditer(text):
        index = int(m.lastgroup[1:]) if m.lastgroup else -1
        out.append(alts[index][1])
    return out


def extract_truth(text: str, *, yes_no: bool = False) -> str | None:
    """``"True"``, ``"False"`` or ``"Uncertain"`` read from ``text`` (see the module docstring), or ``None``.

    "Uncertain" is returned even for two-way tasks (ProntoQA): it is what the model said, and scoring
    counts it wrong there rather than as a parse failure.
    """
    clauses = _CLAUSE.findall(text) + _BOLD.findall(text)
    for clause in reversed(_ordered_clauses(text, clauses)):
        found = _verdicts(clause, yes_no)
        if found:
            return found[0]
    found = _verdicts(text, yes_no)
    return found[-1] if found else None


def _ordered_clauses(text: str, clauses: list[str]) -> list[str]:
    """Clauses in the order they appear in ``text`` (answer clauses and bold spans are found separately)."""
    return sorted(clauses, key=lambda c: text.rfind(c))
