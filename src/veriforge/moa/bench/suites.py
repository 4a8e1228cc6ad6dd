"""The registry of benchmark suites: name, domain, answer kind, loader, bundled sample file.

Five domains, two suites each (the issue's list). A suite's *kind* picks its extractor and
comparison; aliases accept the spellings people type (``mmlu-pro``, ``csqa``, ``MATH``).
"""

from __future__ import annotations

from dataclasses import dataclass

from veriforge.moa.bench.convert import CONVERTERS, Converter
from veriforge.moa.bench.errors import UnknownSuiteError

__all__ = ["DOMAINS", "SUITES", "Suite", "get_suite"]


@dataclass(frozen=True)
class Suite:
    """One benchmark: ``kind`` is its answer kind (see :data:`veriforge.moa.bench.answers.KINDS`)."""

    name: str
    domain: str
    kind: str
    title: str
    aliases: tuple[str, ...] = ()

    @property
    def convert(self) -> Converter:
        return CONVERTERS[self.name]


SUITES: dict[str, Suite] = {
    s.name: s
    for s in (
        Suite("gsm8k", "math", "number", "GSM8K", ("gsm-8k",)),
        Suite("math", "math", "latex", "MATH", ("hendrycks_math", "math500", "math-500")),
        Suite("folio", "logic", "truth", "FOLIO"),
        Suite("prontoqa", "logic", "truth", "ProntoQA", ("pronto_qa", "pronto-qa")),
        Suite("humaneval", "code", "code", "HumanEval", ("human_eval", "human-eval", "openai_humaneval")),
        Suite("mbpp", "code", "code", "MBPP"),
        Suite("mmlu", "knowledge", "choice", "MMLU"),
        Suite("mmlu_pro", "knowledge", "choice", "MMLU-Pro", ("mmlu-pro", "mmlupro")),
        Suite(
            "commonsenseqa",
            "commonsense",
            "choice",
            "CommonsenseQA",
            ("csqa", "commonsense_qa", "commonsense-qa"),
        ),
        Suite("strategyqa", "commonsense", "yesno", "StrategyQA", ("strategy_qa", "strategy-qa")),
    )
}

#: Domain → its default answer kind when no suite is named (commonsense: yes/no unless choices are given).
DOMAINS: dict[str, str] = {
    "math": "latex",
    "logic": "truth",
    "code": "code",
    "knowledge": "choice",
    "commonsense": "yesno",
}

_ALIASES = {alias: s.name for s in SUITES.values() for alias in (s.name, *s.aliases)}


def get_suite(name: str) -> Suite:
    """The suite called ``name`` (case-insensitive, aliases accepted) or :class:`UnknownSuiteError`."""
    key = _ALIASES.get(name.strip().lower())
    if key is None:
        raise UnknownSuiteError(f"unknown benchmark suite {name!r} (known: {', '.join(SUITES)})")
    return SUITES[key]
