r"""Math answers in general (MATH, or any math question): boxed, else an answer phrase, else the last number.

MATH solutions box their answer; models mostly do too when asked, but not always. Without a box, an
"answer is ..." / "Answer: ..." clause (up to the end of its line, ``$`` stripped) is taken, then GSM8K-
style extraction. The result is a LaTeX-ish string compared by :func:`~.latex.latex_equal`.
"""

from __future__ import annotations

import re

from veriforge.moa.bench.answers.latex import extract_boxed
from veriforge.moa.bench.answers.number import extract_number

__all__ = ["extract_math"]

_CLAUSE = re.compile(
    r"(?i)(?:final answer|the answer|answer)\s*(?:is|:|=)\s*:?\s*\$*([^\n$]+?)\$*\s*\.?\s*$", re.MULTILINE
)
_HASHES = re.compile(r"####\s*([^\n]+)")


def extract_math(text: str) -> str | None:
    """The final answer of a math reply as a string, or ``None``."""
    boxed = extract_boxed(text)
    if boxed:
        return boxed
    for pattern in (_HASHES, _CLAUSE):
        hits = pattern.findall(text)
        if hits and hits[-1].strip().strip("*").strip():
            return hits[-1].strip().strip("*").strip().rstrip(".")
    return extract_number(text)
