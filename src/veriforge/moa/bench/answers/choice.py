"""Multiple-choice answers (MMLU, MMLU-Pro, CommonsenseQA): a letter, however the model wrote it.

Trust order, last occurrence wins within each rule:

1. an answer phrase: "Answer: B", "the answer is (B)", "The correct option is B.", "Option B",
   "\\boxed{B}", "[[B]]";
2. a marked letter: "(B)", "**B**", "B)" at the start of a line;
3. the whole reply is one letter ("B", "B.");
4. the text of exactly one choice appears in the answer clause (or, failing that, in the last line).

Only letters of the item's choices count (A–D for MMLU, up to J for MMLU-Pro), so the article "A" in
"A good answer ..." is never read as choice A: rules 1–3 need the letter marked off by brackets,
bold, a colon or the end of the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["extract_choice", "letters_for"]


def letters_for(n: int) -> str:
    """The first ``n`` capital letters (choice labels)."""
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n]


def _rules(letters: str) -> list[re.Pattern[str]]:
    L = f"[{letters}]"
    phrase = (
        r"(?:final answer|correct answer|the answer|answer|correct option|correct choice|"
        r"best answer|best option|my answer|choice|option)"
    )
    return [
        re.compile(
            rf"(?i:{phrase})\s*(?:is|:|=|would be|should be)?\s*"
            rf"(?:option\s*|choice\s*)?[\s:*(\[]*({L})(?![A-Za-z])"
        ),
        re.compile(rf"\\boxed\{{\s*(?:\\text\{{)?({L})\b"),
        re.compile(rf"\[\[({L})\]\]"),
        re.compile(rf"\(({L})\)|\*\*\(?({L})\)?[.:)]?\*\*|^\s*({L})[).:](?:\s|$)", re.MULTILINE),
        re.compile(rf"^\W*({L})\W*$"),
    ]


_ANSWER_CLAUSE = re.compile(r"(?i)(?:final answer|answer|option|choice)\s*(?:is|:)\s*([^\n]+)")


def extract_choice(text: str, n_choices: int = 4, choices: Sequence[str] = ()) -> str | None:
    """The chosen letter (``"A"``...) or ``None``; ``choices`` (the option texts) enable rule 4."""
    n = len(choices) or n_choices
    letters = letters_for(n)
    stripped = text.strip()
    for rule in _rules(letters):
        hits = [next(g for g in m.groups() if g) for m in rule.finditer(stripped)]
        if hits:
            return hits[-1].upper()
    if choices:
        return _by_text(stripped, choices)
    return None


def _norm(s: str) -> str:
    return " ".join(re.sub(r"[^\w\s.\-]", " ", s.lower()).split()).rstrip(".")


def _by_text(text: str, choices: Sequence[str]) -> str | None:
    clauses = _ANSWER_CLAUSE.findall(text)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for span in ([clauses[-1]] if clauses else []) + ([lines[-1]] if lines else []):
        target = f" {_norm(span)} "
        hits = [i for i, c in enumerate(choices) if _norm(c) and f" {_norm(c)} " in target]
        if len(hits) > 1:  # prefer the longest when one choice's text contains another's
            longest = max(len(_norm(choices[i])) for i in hits)
            hits = [i for i in hits if len(_norm(choices[i])) == longest]
        if len(hits) == 1:
            return letters_for(len(choices))[hits[0]]
    return None
