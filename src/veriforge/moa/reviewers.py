"""Pluggable Reviewer back-ends: an LLM judge, a distilled reward model, or any ``veriforge.rank`` judge.

The Reviewer's tournament only needs ``compare(a, b) -> Outcome`` for the traces of one question, so
a back-end is a *comparer factory*: :meth:`ReviewBackend.comparer` is awaited once per review with the
question and the memory's traces and returns the ``compare`` the tournament calls. Three kinds:

``llm`` (default)
    :class:`~veriforge.rank.PairwiseJudge` over a chat client, both orders, metered as the
    ``reviewer`` role — two generations per comparison.
``reward``
    a :class:`~veriforge.moa.distill.RewardReviewer` (what ``moa distill`` trains) loaded from a local
    directory: ``[reviewer] reward_model = "runs/distill/reviewer"``. Each trace is scored once per run
    (one forward pass, cached by trace id) and a pair's outcome is the sign of the score difference,
    a tie when it is at most ``tie_margin``. No LLM request; no position bias by construction.
    torch/transformers load only when this kind is used, and a model directory is loaded once per
    process (engines are created per item by the scaling runner).
``judge``
    any object with ``async judge(question, response_a, response_b, *, a, b, meta) -> Outcome``
    named as ``"module:attribute"`` (``[reviewer] judge = "mypkg.judges:exact_match"``); a class, or an
    attribute without a ``judge`` method (a factory), is called with no arguments to make one.

The kind is ``[reviewer] kind`` or inferred from which of ``reward_model`` / ``judge`` is set. On the
command line ``--reviewer SPEC`` overrides it (:func:`reviewer_spec_updates`). A wrong path or an
unimportable judge is a one-line :class:`~veriforge.moa.errors.MoAConfigError` raised when the engine
is created (:func:`check_reviewer`), before any request.

Known outcomes (``skip_known``, issue 17 part 4): :func:`known_outcome` says when a comparison's result
is known without asking — two identical responses, or two parsed and equal extracted answers. The
Reviewer records such a pair as a tie with ``meta={"skipped": reason}`` and sends no request.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from veriforge.moa.config import ReviewerConfig
from veriforge.moa.errors import MoAConfigError
from veriforge.rank.outcomes import Outcome

if TYPE_CHECKING:
    from veriforge.moa.distill import RewardReviewer
    from veriforge.moa.memory import Trace
    from veriforge.rank.tournament import Compare

__all__ = [
    "JudgeBackend",
    "LLMJudgeBackend",
    "LongerResponseJudge",
    "ReviewBackend",
    "RewardBackend",
    "check_reviewer",
    "known_outcome",
    "load_judge",
    "load_reward_reviewer",
    "make_backend",
    "reviewer_spec_updates",
    "skipped_outcome",
]


class ReviewBackend(Protocol):
    """Makes the ``compare(a, b)`` a tournament over one question's traces calls."""

    kind: str

    async def comparer(self, question: str, traces: Mapping[str, Trace]) -> Compare: ...


# --------------------------------------------------------------------------------------- llm
class LLMJudgeBackend:
    """The LLM judge: :class:`~veriforge.rank.PairwiseJudge` over the traces' reasoning texts."""

    kind = "llm"

    def __init__(self, client: Any, config: ReviewerConfig) -> None:
        from veriforge.rank.judge import DEFAULT_SYSTEM, DEFAULT_TEMPLATE, PairwiseJudge

        self.judge = PairwiseJudge(
            client,
            template=config.template or DEFAULT_TEMPLATE,
            system=config.system or DEFAULT_SYSTEM,
            both_orders=config.both_orders,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
        )

    async def comparer(self, question: str, traces: Mapping[str, Trace]) -> Compare:
        return self.judge.comparer(question, {tid: t.reasoning for tid, t in traces.items()})


# ------------------------------------------------------------------------------------ reward
_REWARD_CACHE: dict[tuple[str, int, float], tuple[RewardReviewer, threading.Lock]] = {}
_REWARD_CACHE_LOCK = threading.Lock()


def _reward_dir(path: str | Path) -> Path:
    p = Path(path).expanduser()
    if not (p / "config.json").is_file():
        raise MoAConfigError(f"[reviewer] reward_model: {p}: not a local model directory (no config.json; "
                             "train one with `veriforge moa distill`, nothing is downloaded)")
    return p.resolve()


def load_reward_reviewer(path: str | Path, max_length: int = 512) -> tuple[RewardReviewer, threading.Lock]:
    """The reward model at ``path`` and the lock that serialises its forward passes, loaded once per
    process: the scaling runner builds an engine per item, and reloading weights per question would
    cost more than the reviews. A directory rewritten since (retrained in place) is loaded again."""
    where = _reward_dir(path)
    key = (str(where), max_length, max(f.stat().st_mtime for f in where.iterdir() if f.is_file()))
    with _REWARD_CACHE_LOCK:
        if key not in _REWARD_CACHE:
            from veriforge.moa.distill import DistillError, RewardReviewer

            try:
                reviewer = RewardReviewer.from_pretrained(key[0], max_length=max_length)
            except ImportError as exc:
                raise MoAConfigError(f"[reviewer] reward_model: {key[0]}: a reward reviewer needs torch and "
                                     f"transformers (install veriforge's train extra; {exc})") from exc
            except (OSError, ValueError, DistillError) as exc:
                raise MoAConfigError(f"[reviewer] reward_model: {key[0]}: cannot be loaded "
                                     f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
                                     ) from exc
            _REWARD_CACHE[key] = (reviewer, threading.Lock())
        return _REWARD_CACHE[key]


class RewardBackend:
    """A distilled reward model as the Reviewer: one forward pass per trace, outcomes from score differences.

    Scores are cached by trace id for the life of the backend (one run), so each trace is scored once
    however many comparisons it takes part in. Scoring runs in a worker thread (the event loop keeps
    serving other questions) under the model's lock (one forward pass at a time per model).
    """

    kind = "reward"

    def __init__(self, reviewer: RewardReviewer, *, tie_margin: float = 0.0,
                 lock: threading.Lock | None = None) -> None:
        self.reviewer = reviewer
        self.tie_margin = tie_margin
        self.lock = lock or threading.Lock()
        self.scores: dict[str, float] = {}
        self.forward_passes = 0

    def _score(self, texts: list[str]) -> list[float]:
        with self.lock:
            return self.reviewer.scores(texts)

    async def comparer(self, question: str, traces: Mapping[str, Trace]) -> Compare:
        from veriforge.moa.distill import format_for_reward

        todo = [tid for tid in traces if tid not in self.scores]
        if todo:
            texts = [format_for_reward(question, traces[tid].reasoning) for tid in todo]
            values = await asyncio.to_thread(self._score, texts)
            self.forward_passes += len(todo)
            self.scores.update(zip(todo, values, strict=True))
        scores = dict(self.scores)

        async def compare(a: str, b: str) -> Outcome:
            diff = scores[a] - scores[b]
            winner = "tie" if abs(diff) <= self.tie_margin else ("a" if diff > 0 else "b")
            return Outcome(a=a, b=b, winner=winner, source="reviewer",
                           reason=f"reward {scores[a]:+.4f} vs {scores[b]:+.4f}",
                           meta={"reward_a": scores[a], "reward_b": scores[b]})

        return compare


# ------------------------------------------------------------------------------------- judge
def load_judge(spec: str) -> Any:
    """The judge named by ``"module:attribute"`` (a class or a factory is called to make one)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise MoAConfigError(f"[reviewer] judge: {spec!r} is not 'module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise MoAConfigError(f"[reviewer] judge: cannot import {module_name!r} ({exc})") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise MoAConfigError(f"[reviewer] judge: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if inspect.isclass(obj) or not callable(getattr(obj, "judge", None)):
        if not callable(obj):
            raise MoAConfigError(f"[reviewer] judge: {spec} has no judge() method and is not callable")
        try:
            obj = obj()
        except TypeError as exc:  # needs arguments: not a judge factory
            raise MoAConfigError(f"[reviewer] judge: {spec} has no judge() method and {spec}() failed "
                                 f"({exc})") from exc
        if not callable(getattr(obj, "judge", None)):
            raise MoAConfigError(f"[reviewer] judge: {spec}() returned {type(obj).__name__}, "
                                 "which has no judge() method")
    return obj


class JudgeBackend:
    """Any ``veriforge.rank``-style judge: ``judge(question, response_a, response_b, a=, b=, meta=)``.

    ``meta`` carries the traces' extracted answers (``answer_a``, ``answer_b``; ``None`` when not
    parsed), so an exact-match or verifier-backed judge need not re-parse the texts. A
    :class:`~veriforge.errors.VeriforgeError` from the judge becomes a failed outcome (as for the
    LLM judge); any other exception is a bug and propagates.
    """

    kind = "judge"

    def __init__(self, judge: Any) -> None:
        self.judge = judge

    async def comparer(self, question: str, traces: Mapping[str, Trace]) -> Compare:
        async def compare(a: str, b: str) -> Outcome:
            out = self.judge.judge(question, traces[a].reasoning, traces[b].reasoning, a=a, b=b,
                                   meta={"answer_a": traces[a].answer, "answer_b": traces[b].answer})
            if inspect.isawaitable(out):
                out = await out
            if not isinstance(out, Outcome):  # a bug in the judge: propagates (not a failed comparison)
                raise TypeError(f"[reviewer] judge {type(self.judge).__name__}.judge returned "
                                f"{type(out).__name__}, not a veriforge.rank.Outcome")
            return out

        return compare


class LongerResponseJudge:
    """A content-blind baseline judge: the longer response wins (equal length: tie).

    A sanity floor for reviewer benchmarks (``judge = "veriforge.moa.reviewers:LongerResponseJudge"``):
    a learned reviewer that does not beat it has learned nothing about correctness.
    """

    async def judge(self, question: str, response_a: str, response_b: str, *, a: str = "a", b: str = "b",
                    meta: Mapping[str, Any] | None = None) -> Outcome:
        diff = len(response_a) - len(response_b)
        winner = "tie" if diff == 0 else ("a" if diff > 0 else "b")
        return Outcome(a=a, b=b, winner=winner, reason=f"length {len(response_a)} vs {len(response_b)}",
                       meta=dict(meta or {}))


# ---------------------------------------------------------------------------------- selection
def check_reviewer(config: ReviewerConfig) -> None:
    """Fail fast (before any request) when the configured reward model or judge cannot be used."""
    if config.kind == "reward":
        load_reward_reviewer(config.reward_model or "", config.reward_max_length)
    elif config.kind == "judge":
        load_judge(config.judge or "")


def make_backend(config: ReviewerConfig, client: Callable[[], Any]) -> ReviewBackend:
    """The back-end ``config`` selects; ``client()`` (called only for the ``llm`` kind) gives the chat client."""
    if config.kind == "reward":
        reviewer, lock = load_reward_reviewer(config.reward_model or "", config.reward_max_length)
        return RewardBackend(reviewer, tie_margin=config.tie_margin, lock=lock)
    if config.kind == "judge":
        return JudgeBackend(load_judge(config.judge or ""))
    return LLMJudgeBackend(client(), config)


def reviewer_spec_updates(spec: str) -> dict[str, Any]:
    """``[reviewer]`` fields for a ``--reviewer SPEC`` (the other kinds' fields are cleared).

    ``reward:PATH`` — a distilled reward model; ``judge:module:attribute`` — a rank judge; ``llm`` —
    the LLM judge on the aggregator's model; anything else is a model string for the LLM judge.
    """
    spec = spec.strip()
    cleared: dict[str, Any] = {"model": None, "reward_model": None, "judge": None}
    head, sep, rest = spec.partition(":")
    if sep and head == "reward":
        if not rest:
            raise MoAConfigError("--reviewer reward:PATH needs a path")
        return {**cleared, "kind": "reward", "reward_model": rest}
    if sep and head == "judge":
        if not rest:
            raise MoAConfigError("--reviewer judge:module:attribute needs a judge")
        return {**cleared, "kind": "judge", "judge": rest}
    if spec in ("", "llm"):
        return {**cleared, "kind": "llm"}
    return {**cleared, "kind": "llm", "model": spec}


# ------------------------------------------------------------------------------ known outcomes
def known_outcome(a: Trace, b: Trace) -> str | None:
    """Why the comparison of ``a`` with ``b`` is a tie without asking, or ``None`` when it must be judged.

    Identical texts are a tie for any judge that cannot see which is which. Two parsed, equal extracted
    answers are a tie *for correctness*: the reviewer is asked which response is right, and both are
    equally right or equally wrong (see docs/moa.md on what this does to Bradley–Terry).
    """
    if a.reasoning == b.reasoning:
        return "identical responses"
    if a.parsed and b.parsed and a.answer is not None and a.answer == b.answer:
        return "identical answers"
    return None


def skipped_outcome(a: str, b: str, reason: str) -> Outcome:
    """The tie recorded for a known-outcome pair (no request; ``meta["skipped"]`` says why)."""
    return Outcome(a=a, b=b, winner="tie", source="reviewer", reason=f"known outcome: {reason}",
                   meta={"skipped": reason})

