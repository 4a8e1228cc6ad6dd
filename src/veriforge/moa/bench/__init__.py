"""ReM-MoA's benchmarks: public-format loaders, per-domain answer extraction, scoring, sample sets.

::

    from veriforge.moa.bench import load_suite, score, extract_answer, SUITES
    items = load_suite("gsm8k")                       # bundled sample; or path="test.jsonl", limit=100
    s = score(items[0], "... so the answer is 18.")   # Score(correct, parsed, parse_failed, detail)
    extract_answer("mmlu", "**B**")                   # "B"

Five domains, two suites each: math (``gsm8k``, ``math``), logic (``folio``, ``prontoqa``), code
(``humaneval``, ``mbpp`` — scored by running tests in the sandbox), knowledge (``mmlu``,
``mmlu_pro``), commonsense (``commonsenseqa``, ``strategyqa``). See docs/moa-bench.md.
"""

from __future__ import annotations

from veriforge.moa.bench.errors import BenchError, DataFormatError, UnknownSuiteError
from veriforge.moa.bench.generate import generate_gsm8k, generate_records
from veriforge.moa.bench.load import bundled_path, load_suite
from veriforge.moa.bench.scoring import (
    answers_match,
    code_program,
    extract_answer,
    kind_of,
    score,
    score_async,
)
from veriforge.moa.bench.suites import DOMAINS, SUITES, Suite, get_suite
from veriforge.moa.bench.types import Item, Score, Summary, summarize

__all__ = [
    "DOMAINS",
    "SUITES",
    "BenchError",
    "DataFormatError",
    "Item",
    "Score",
    "Suite",
    "Summary",
    "UnknownSuiteError",
    "answers_match",
    "bundled_path",
    "code_program",
    "extract_answer",
    "generate_gsm8k",
    "generate_records",
    "get_suite",
    "kind_of",
    "load_suite",
    "score",
    "score_async",
    "summarize",
]
