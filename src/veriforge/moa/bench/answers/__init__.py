"""Reading the final answer out of a model's reply, per answer kind (see each module for its rules).

:func:`extract_answer` dispatches on a suite name (``gsm8k``, ``mmlu_pro``, ...), a domain name
(``math``, ``logic``, ``code``, ``knowledge``, ``commonsense``) or an answer kind (``number``,
``latex``, ``truth``, ``yesno``, ``choice``, ``code``). ``None`` always means *no answer found* — a
parse failure, which scoring counts as wrong and reports.
"""

from __future__ import annotations

from collections.abc import Sequence

from veriforge.moa.bench.answers.choice import extract_choice
from veriforge.moa.bench.answers.code import extract_code
from veriforge.moa.bench.answers.latex import extract_boxed, latex_equal, normalize_latex
from veriforge.moa.bench.answers.logic import extract_truth
from veriforge.moa.bench.answers.math_answer import extract_math
from veriforge.moa.bench.answers.number import extract_number, normalize_number, numbers_equal

__all__ = [
    "KINDS",
    "extract_boxed",
    "extract_by_kind",
    "extract_choice",
    "extract_code",
    "extract_math",
    "extract_number",
    "extract_truth",
    "latex_equal",
    "normalize_latex",
    "normalize_number",
    "numbers_equal",
]

KINDS = ("number", "latex", "truth", "yesno", "choice", "code")


def extract_by_kind(kind: str, text: str, *, choices: Sequence[str] = (), n_choices: int = 4) -> str | None:
    """The answer of kind ``kind`` in ``text``, or ``None``; ``kind`` must be one of :data:`KINDS`."""
    if kind == "number":
        return extract_number(text)
    if kind == "latex":
        return extract_math(text)
    if kind == "truth":
        return extract_truth(text)
    if kind == "yesno":
        return extract_truth(text, yes_no=True)
    if kind == "choice":
        return extract_choice(text, n_choices, choices)
    if kind == "code":
        return extract_code(text)
    raise ValueError(f"unknown answer kind {kind!r} (one of {', '.join(KINDS)})")
