"""From one record of a public dataset format to an :class:`~veriforge.moa.bench.types.Item`.

One function per suite, each accepting the layouts that suite ships in (field names below). Gold
answers are put in the canonical form their scorer compares against: a normalised number (GSM8K),
the last ``\\boxed{}`` of the solution (MATH), ``True``/``False``/``Uncertain`` (FOLIO, ProntoQA,
StrategyQA), a choice letter (MMLU, MMLU-Pro, CommonsenseQA), the reference program (code suites,
which are scored by running their tests, not by comparing with it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from veriforge.moa.bench.answers.choice import letters_for
from veriforge.moa.bench.answers.latex import extract_boxed
from veriforge.moa.bench.answers.number import normalize_number
from veriforge.moa.bench.errors import DataFormatError
from veriforge.moa.bench.records import Record, require
from veriforge.moa.bench.types import Item

__all__ = ["CONVERTERS", "Converter"]

#: ``convert(record, index, where) -> Item``; ``where`` names the file and record for error messages.
Converter = Callable[[Record, int, str], Item]


def _id(record: Record, index: int, suite: str, *keys: str) -> str:
    for key in (*keys, "id", "_key"):
        if record.get(key) not in (None, ""):
            return str(record[key])
    return f"{suite}-{index}"


def _choices_block(choices: Sequence[str]) -> str:
    return "\n".join(
        f"{letter}. {text}" for letter, text in zip(letters_for(len(choices)), choices, strict=False)
    )


def _truth_label(value: Any, where: str, suite: str, allowed: tuple[str, ...]) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    text = str(value).strip().strip(".").lower()
    mapping = {
        "true": "True",
        "yes": "True",
        "false": "False",
        "no": "False",
        "uncertain": "Uncertain",
        "unknown": "Uncertain",
    }
    label = mapping.get(text)
    if label is None or label not in allowed:
        raise DataFormatError(f"{where}: {suite} label {value!r} is not one of {', '.join(allowed)}")
    return label


def _option_answer(record: Record, where: str, suite: str) -> str:
    """Logic-LM layout: ``options: ["A) True", "B) False", ...]`` and ``answer: "A"`` → the option's text."""
    options = record.get("options")
    answer = str(require(record, "answer", where=where, suite=suite)).strip()
    if isinstance(options, list) and re.fullmatch(r"[A-Z]", answer):
        for opt in options:
            m = re.match(r"\s*\(?([A-Z])[).:]\s*(.+)", str(opt))
            if m and m.group(1) == answer:
                return m.group(2).strip()
        raise DataFormatError(f"{where}: {suite} answer {answer!r} names no entry of options {options!r}")
    return answer


# ----------------------------------------------------------------------------------------------- math
def gsm8k(record: Record, index: int, where: str) -> Item:
    """GSM8K: ``question``, ``answer`` (worked solution ending ``#### N``)."""
    question = require(record, "question", where=where, suite="GSM8K", types=(str,))
    solution = str(require(record, "answer", where=where, suite="GSM8K"))
    m = re.search(r"####\s*(.+?)\s*$", solution)
    raw = m.group(1) if m else solution
    gold = normalize_number(raw)
    if gold is None:
        raise DataFormatError(f"{where}: GSM8K answer has no '#### N' final number: {solution[-80:]!r}")
    return Item(
        id=_id(record, index, "gsm8k"),
        suite="gsm8k",
        domain="math",
        question=question,
        answer=gold,
        meta={"solution": solution},
        instruction="Solve step by step. End with the final answer on its own line as '#### <number>'.",
    )


def math(record: Record, index: int, where: str) -> Item:
    """MATH (Hendrycks): ``problem``, ``solution`` with ``\\boxed{}``, ``level``, ``type``; MATH-500 adds
    ``answer`` (used when present) and ``subject``."""
    problem = require(record, "problem", where=where, suite="MATH", types=(str,))
    answer = record.get("answer")
    if answer in (None, ""):
        solution = str(require(record, "solution", where=where, suite="MATH"))
        answer = extract_boxed(solution)
        if answer is None:
            raise DataFormatError(f"{where}: MATH solution has no \\boxed{{}} answer")
    meta = {k: record[k] for k in ("level", "type", "subject", "solution") if record.get(k) is not None}
    return Item(
        id=_id(record, index, "math", "unique_id"),
        suite="math",
        domain="math",
        question=problem,
        answer=str(answer).strip(),
        meta=meta,
        instruction="Solve step by step and put the final answer in \\boxed{}.",
    )


# ---------------------------------------------------------------------------------------------- logic
def folio(record: Record, index: int, where: str) -> Item:
    """FOLIO: ``premises`` (string with one premise per line, or a list), ``conclusion``, ``label``
    True/False/Uncertain (v1's ``Unknown`` too); also Logic-LM's ``context``/``question``/``options``/
    ``answer`` letter layout."""
    if "premises" in record or "conclusion" in record:
        premises = require(record, "premises", where=where, suite="FOLIO", types=(str, list))
        conclusion = require(record, "conclusion", where=where, suite="FOLIO", types=(str,))
        label = require(record, "label", where=where, suite="FOLIO")
        lines = premises if isinstance(premises, list) else [p for p in premises.splitlines() if p.strip()]
        context = "\n".join(str(p).strip() for p in lines)
    else:
        context = require(record, "context", where=where, suite="FOLIO", types=(str,))
        conclusion = require(record, "question", where=where, suite="FOLIO", types=(str,))
        label = _option_answer(record, where, "FOLIO")
    gold = _truth_label(label, where, "FOLIO", ("True", "False", "Uncertain"))
    question = (
        f"Premises:\n{context}\n\nConclusion: {conclusion}\n\nIs the conclusion True, False, or Uncertain?"
    )
    meta = {k: record[k] for k in ("story_id", "premises-FOL", "conclusion-FOL") if k in record}
    return Item(
        id=_id(record, index, "folio", "example_id"),
        suite="folio",
        domain="logic",
        question=question,
        answer=gold,
        meta=meta,
        instruction="End with 'Answer: True', 'Answer: False' or 'Answer: Uncertain'.",
    )


def prontoqa(record: Record, index: int, where: str) -> Item:
    """ProntoQA in its common layouts: flat ``context``/``question``/``answer`` (bool or "True"/"False");
    Logic-LM's ``options``/``answer`` letter; the original generator's ``{"exampleN": {"test_example":
    {"question": theory, "query": "True or false: ...", "answer": ...}}}``."""
    rec = record.get("test_example") if isinstance(record.get("test_example"), dict) else record
    if "query" in rec:
        context = require(rec, "question", where=where, suite="ProntoQA", types=(str,))
        query = require(rec, "query", where=where, suite="ProntoQA", types=(str,))
        label = require(rec, "answer", where=where, suite="ProntoQA")
    else:
        context = require(rec, "context", where=where, suite="ProntoQA", types=(str,))
        query = require(rec, "question", where=where, suite="ProntoQA", types=(str,))
        label = (
            _option_answer(rec, where, "ProntoQA")
            if not isinstance(rec.get("answer"), bool)
            else rec["answer"]
        )
    gold = _truth_label(label, where, "ProntoQA", ("True", "False"))
    return Item(
        id=_id(record, index, "prontoqa"),
        suite="prontoqa",
        domain="logic",
        question=f"{context}\n\n{query}",
        answer=gold,
        meta={},
        instruction="Reason step by step, then end with 'Answer: True' or 'Answer: False'.",
    )


# ----------------------------------------------------------------------------------------------- code
def humaneval(record: Record, index: int, where: str) -> Item:
    """HumanEval: ``task_id``, ``prompt``, ``canonical_solution``, ``test`` (defines ``check``),
    ``entry_point``."""
    fields = {
        k: require(record, k, where=where, suite="HumanEval", types=(str,))
        for k in ("task_id", "prompt", "canonical_solution", "test", "entry_point")
    }
    question = (
        "Complete the following Python function. Reply with the complete function in a ```python block."
        f"\n\n```python\n{fields['prompt']}```"
    )
    return Item(
        id=fields["task_id"],
        suite="humaneval",
        domain="code",
        question=question,
        answer=fields["canonical_solution"],
        meta={"prompt": fields["prompt"], "test": fields["test"], "entry_point": fields["entry_point"]},
    )


def mbpp(record: Record, index: int, where: str) -> Item:
    """MBPP: ``text`` (or sanitized MBPP's ``prompt``), ``code``, ``test_list``, ``test_setup_code``."""
    text = record.get("text") if record.get("text") is not None else record.get("prompt")
    if text is None:
        require(record, "text", where=where, suite="MBPP")
    code = require(record, "code", where=where, suite="MBPP", types=(str,))
    tests = require(record, "test_list", where=where, suite="MBPP", types=(list,))
    if not tests:
        raise DataFormatError(f"{where}: MBPP test_list is empty (nothing to score with)")
    m = re.search(r"assert\s+(?:not\s+)?\(?\s*(?:set\()?\s*(?:math\.isclose\()?([A-Za-z_]\w*)\s*\(", tests[0])
    entry = m.group(1) if m else None
    question = f"{text}\nYour code should pass these tests:\n" + "\n".join(tests)
    meta = {
        "test_list": list(tests),
        "test_setup_code": record.get("test_setup_code") or "",
        "entry_point": entry,
    }
    return Item(
        id=_id(record, index, "mbpp", "task_id"),
        suite="mbpp",
        domain="code",
        question=question,
        answer=code,
        meta=meta,
        instruction="Reply with the Python code in a ```python block.",
    )


# ------------------------------------------------------------------------------------------ knowledge
def mmlu(record: Record, index: int, where: str) -> Item:
    """MMLU: ``question``, ``choices`` (4 texts), ``answer`` (index 0-3 or a letter), optional ``subject``;
    or the original CSV rows ``question,A,B,C,D,answer`` (header-less: columns 0-5)."""
    if "question" in record:
        question = require(record, "question", where=where, suite="MMLU", types=(str,))
        if "choices" in record:
            choices = list(require(record, "choices", where=where, suite="MMLU", types=(list, tuple)))
        elif all(k in record for k in "ABCD"):
            choices = [record[k] for k in "ABCD"]
        else:
            require(record, "choices", where=where, suite="MMLU")
        answer = require(record, "answer", where=where, suite="MMLU")
    elif all(str(i) in record for i in range(6)):
        question, choices, answer = record["0"], [record[str(i)] for i in range(1, 5)], record["5"]
    else:
        require(record, "question", where=where, suite="MMLU")
    gold = _letter(answer, len(choices), where, "MMLU")
    text = f"{question}\n\n{_choices_block([str(c) for c in choices])}"
    meta = {
        "choices": [str(c) for c in choices],
        **({"subject": record["subject"]} if "subject" in record else {}),
    }
    return Item(
        id=_id(record, index, "mmlu"),
        suite="mmlu",
        domain="knowledge",
        question=text,
        answer=gold,
        meta=meta,
        instruction="End with 'Answer: <letter>'.",
    )


def mmlu_pro(record: Record, index: int, where: str) -> Item:
    """MMLU-Pro: ``question``, ``options`` (up to 10), ``answer`` (letter) / ``answer_index``,
    ``category``."""
    question = require(record, "question", where=where, suite="MMLU-Pro", types=(str,))
    options = [str(o) for o in require(record, "options", where=where, suite="MMLU-Pro", types=(list, tuple))]
    answer = record.get("answer") if record.get("answer") not in (None, "") else record.get("answer_index")
    if answer is None:
        require(record, "answer", where=where, suite="MMLU-Pro")
    gold = _letter(answer, len(options), where, "MMLU-Pro")
    meta = {"choices": options, **{k: record[k] for k in ("category", "src", "question_id") if k in record}}
    return Item(
        id=_id(record, index, "mmlu_pro", "question_id"),
        suite="mmlu_pro",
        domain="knowledge",
        question=f"{question}\n\n{_choices_block(options)}",
        answer=gold,
        meta=meta,
        instruction="End with 'The answer is (X)' where X is the letter.",
    )


def _letter(answer: Any, n: int, where: str, suite: str) -> str:
    letters = letters_for(n)
    if isinstance(answer, bool):
        raise DataFormatError(f"{where}: {suite} answer should be a letter or an index, got {answer!r}")
    if isinstance(answer, int) or (isinstance(answer, str) and answer.strip().isdigit()):
        i = int(answer)
        if 0 <= i < n:
            return letters[i]
    elif isinstance(answer, str) and answer.strip().upper() in letters and answer.strip():
        return answer.strip().upper()
    raise DataFormatError(f"{where}: {suite} answer {answer!r} does not name one of {n} choices")


# ---------------------------------------------------------------------------------------- commonsense
def commonsenseqa(record: Record, index: int, where: str) -> Item:
    """CommonsenseQA: ``question.stem`` + ``question.choices[{label,text}]`` + ``answerKey`` (original JSONL);
    or the Hugging Face layout ``question`` (str) + ``choices{label[], text[]}``."""
    q = require(record, "question", where=where, suite="CommonsenseQA", types=(str, dict))
    if isinstance(q, dict):
        stem = require(q, "stem", where=where, suite="CommonsenseQA", types=(str,))
        raw = require(q, "choices", where=where, suite="CommonsenseQA", types=(list,))
        labels = [str(c.get("label")) for c in raw]
        texts = [str(c.get("text")) for c in raw]
    else:
        stem = q
        raw = require(record, "choices", where=where, suite="CommonsenseQA", types=(dict,))
        labels = [str(x) for x in require(raw, "label", where=where, suite="CommonsenseQA", types=(list,))]
        texts = [str(x) for x in require(raw, "text", where=where, suite="CommonsenseQA", types=(list,))]
    if labels != list(letters_for(len(labels))):
        raise DataFormatError(f"{where}: CommonsenseQA choice labels {labels} are not A, B, C, ...")
    key = require(record, "answerKey", where=where, suite="CommonsenseQA")
    gold = _letter(key, len(texts), where, "CommonsenseQA")
    return Item(
        id=_id(record, index, "commonsenseqa"),
        suite="commonsenseqa",
        domain="commonsense",
        question=f"{stem}\n\n{_choices_block(texts)}",
        answer=gold,
        meta={"choices": texts},
        instruction="End with 'Answer: <letter>'.",
    )


def strategyqa(record: Record, index: int, where: str) -> Item:
    """StrategyQA: ``question``, ``answer`` (bool, or "yes"/"no"/"true"/"false"); ``facts`` and
    ``decomposition`` are kept."""
    question = require(record, "question", where=where, suite="StrategyQA", types=(str,))
    gold = _truth_label(
        require(record, "answer", where=where, suite="StrategyQA"), where, "StrategyQA", ("True", "False")
    )
    meta = {k: record[k] for k in ("term", "description", "facts", "decomposition") if k in record}
    return Item(
        id=_id(record, index, "strategyqa", "qid"),
        suite="strategyqa",
        domain="commonsense",
        question=question,
        answer=gold,
        meta=meta,
        instruction="End with 'Answer: yes' or 'Answer: no'.",
    )


CONVERTERS: dict[str, Converter] = {
    "gsm8k": gsm8k,
    "math": math,
    "folio": folio,
    "prontoqa": prontoqa,
    "humaneval": humaneval,
    "mbpp": mbpp,
    "mmlu": mmlu,
    "mmlu_pro": mmlu_pro,
    "commonsenseqa": commonsenseqa,
    "strategyqa": strategyqa,
}
