"""Scoring a response to an :class:`Item`: extract the answer, compare it, or run the tests.

Parse failures are wrong and say so (``Score.parse_failed``). Code is scored by executing the item's
tests on the extracted program in :mod:`veriforge.sandbox` (own process group, wall-clock timeout
that kills it, memory cap, no network): an infinite loop is a ``timeout`` failure after
``timeout_s``, never a hang of the benchmark. :func:`score_async` runs that in a worker thread so an
asyncio engine keeps its other calls going.
"""

from __future__ import annotations

from collections.abc import Sequence

from veriforge.moa.bench.answers import extract_by_kind, latex_equal, numbers_equal
from veriforge.moa.bench.answers.code import extract_code, humaneval_program, mbpp_program
from veriforge.moa.bench.errors import UnknownSuiteError
from veriforge.moa.bench.suites import DOMAINS, SUITES, get_suite
from veriforge.moa.bench.types import Item, Score

__all__ = ["answers_match", "code_program", "extract_answer", "kind_of", "score", "score_async"]

DEFAULT_CODE_TIMEOUT_S = 10.0


def kind_of(name: str, *, has_choices: bool = False) -> str:
    """The answer kind for a suite, domain or kind name."""
    from veriforge.moa.bench.answers import KINDS

    key = name.strip().lower()
    if key in KINDS:
        return key
    if key in DOMAINS and key not in SUITES:
        return "choice" if key == "commonsense" and has_choices else DOMAINS[key]
    try:
        return get_suite(key).kind
    except UnknownSuiteError:
        raise UnknownSuiteError(
            f"unknown suite, domain or answer kind {name!r} (suites: {', '.join(SUITES)}; "
            f"domains: {', '.join(DOMAINS)}; kinds: {', '.join(KINDS)})"
        ) from None


def extract_answer(domain_or_suite: str, text: str, *, choices: Sequence[str] = ()) -> str | None:
    """The final answer in ``text`` for a suite, domain or answer kind; ``None`` when none is found.

    ``choices`` (option texts) let multiple-choice extraction match an answer given as text.
    """
    kind = kind_of(domain_or_suite, has_choices=bool(choices))
    return extract_by_kind(kind, text, choices=choices, n_choices=len(choices) or 4)


def answers_match(kind: str, parsed: str, gold: str) -> bool:
    """Whether an extracted answer equals the gold one under the kind's equivalence."""
    if kind == "number":
        return numbers_equal(parsed, gold)
    if kind == "latex":
        return latex_equal(parsed, gold)
    return parsed.strip() == gold.strip()


def _prepare(item: Item, text: str) -> tuple[str, str | None, Score | None]:
    """(kind, parsed, early score) — an early score when no program needs running."""
    kind = get_suite(item.suite).kind if item.suite in SUITES else kind_of(item.domain)
    choices = list(item.meta.get("choices") or ())
    if kind == "code":
        code = extract_code(text)
        if code is None:
            return kind, None, Score(False, None, True, "no Python code found in the response")
        return kind, code, None
    parsed = extract_by_kind(kind, text, choices=choices, n_choices=len(choices) or 4)
    if parsed is None:
        return kind, None, Score(False, None, True, f"no {kind} answer found in the response")
    ok = answers_match(kind, parsed, item.answer)
    detail = f"{'matches' if ok else 'differs from'} gold {item.answer!r}"
    return kind, parsed, Score(ok, parsed, False, detail)


def code_program(item: Item, code: str) -> str:
    """The test script for ``code`` as an answer to a code item (exit status 0 iff all tests pass)."""
    meta = item.meta
    if item.suite == "humaneval" or "test" in meta:
        return humaneval_program(str(meta["prompt"]), code, str(meta["test"]), str(meta["entry_point"]))
    return mbpp_program(code, list(meta["test_list"]), str(meta.get("test_setup_code") or ""))


def _code_score(code: str, result) -> Score:  # type: ignore[no-untyped-def]
    if result.status == "ok" and result.exit_code == 0:
        return Score(True, code, False, f"tests passed in {result.wall_s:.2f}s")
    tail = (result.stderr_text or "").strip().splitlines()[-3:]
    why = result.status if result.status != "ok" else f"exit {result.exit_code}"
    return Score(False, code, False, f"tests failed ({why}): {' | '.join(tail)[:400]}")


def _limits(timeout_s: float):  # type: ignore[no-untyped-def]
    from veriforge.sandbox import Limits

    return Limits(timeout_s=timeout_s, cpu_s=timeout_s + 1, memory_mb=1024, max_output_bytes=100_000)


def score(item: Item, text: str, *, timeout_s: float = DEFAULT_CODE_TIMEOUT_S) -> Score:
    """Score one response; code runs its tests in the sandbox (at most ``timeout_s`` seconds)."""
    _kind, parsed, early = _prepare(item, text)
    if early is not None:
        return early
    assert parsed is not None
    from veriforge.sandbox import run_python

    return _code_score(parsed, run_python(code_program(item, parsed), limits=_limits(timeout_s)))


async def score_async(item: Item, text: str, *, timeout_s: float = DEFAULT_CODE_TIMEOUT_S) -> Score:
    """:func:`score` for asyncio callers: the sandbox run happens in a worker thread."""
    _kind, parsed, early = _prepare(item, text)
    if early is not None:
        return early
    assert parsed is not None
    from veriforge.sandbox import run_python_async

    return _code_score(parsed, await run_python_async(code_program(item, parsed), limits=_limits(timeout_s)))
