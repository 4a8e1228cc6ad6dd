"""The multi-turn refine loop: propose → verify → feedback → revise.

A proposer (usually a model) sees the whole trajectory so far, proposes a candidate; a verifier
checks it and returns ``ok``, a score and feedback text (a compiler error, the inputs it got
wrong, the measured time); the feedback is appended to the trajectory and the proposer tries
again, until a candidate is verified or the turns run out. The trajectory is a
:class:`~veriforge.core.types.Trajectory` (proposals as ``assistant`` steps, feedback as
``user`` steps, so ``trajectory.messages()`` continues the chat directly), which is also what
RL rollouts and dataset exports consume. The best candidate so far is returned even when no turn
succeeded: verified beats unverified, then the higher score, then the earlier turn.

A candidate proposed again verbatim is not verified again: its earlier verification is reused
(the feedback says so), because verification is the expensive part.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from veriforge.core.hashing import canonical_json, content_hash
from veriforge.core.types import Trajectory, Verdict
from veriforge.search.errors import SearchConfigError, SearchError
from veriforge.search.interfaces import maybe_await

__all__ = ["RefineResult", "Verification", "refine", "refine_sync"]

C = TypeVar("C")


@dataclass(frozen=True)
class Verification:
    """What the verifier says about one candidate. ``score`` is higher-is-better (or None)."""

    ok: bool
    score: float | None = None
    feedback: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    verdict: Verdict | None = None

    def __post_init__(self) -> None:
        if self.score is not None and not math.isfinite(self.score):
            raise SearchError(f"a verification score must be finite, got {self.score!r}")


@dataclass
class RefineResult(Generic[C]):
    """The loop's outcome. ``best_turn`` is 0-based; ``turns`` how many proposals were made."""

    success: bool
    best: C | None
    best_turn: int | None
    best_verification: Verification | None
    turns: int
    trajectory: Trajectory
    candidates: list[C] = field(default_factory=list)
    verifications: list[Verification] = field(default_factory=list)


def _as_verification(value: Any) -> Verification:
    if isinstance(value, Verification):
        return value
    if isinstance(value, tuple) and len(value) == 3:
        ok, score, feedback = value
        return Verification(ok=bool(ok), score=None if score is None else float(score),
                            feedback=str(feedback))
    raise SearchError("verify must return a Verification or (ok, score, feedback), "
                      f"got {type(value).__name__}")


def _text_and_key(candidate: Any) -> tuple[str, str]:
    source = getattr(candidate, "source", None)
    if isinstance(source, str):
        key = getattr(candidate, "hash", None)
        return source, key if isinstance(key, str) else content_hash("refine", source)
    if isinstance(candidate, str):
        return candidate, content_hash("refine", candidate)
    text = canonical_json(candidate)
    return text, content_hash("refine", text)


def _rank(v: Verification) -> tuple[bool, float]:
    return v.ok, (-math.inf if v.score is None else v.score)


async def refine(propose: Callable[[Trajectory], C | Awaitable[C]],
                 verify: Callable[[C], Any], *, turns: int, task_id: str = "task",
                 prompt: str | None = None, trajectory_id: str | None = None,
                 stop_on_success: bool = True) -> RefineResult[C]:
    """Run up to ``turns`` rounds of propose → verify → feedback.

    ``propose(trajectory)`` and ``verify(candidate)`` may be sync or async; ``verify`` returns a
    :class:`Verification` or a tuple ``(ok, score, feedback)``. ``prompt`` becomes the first
    (``user``) step. Stops at the first verified candidate unless ``stop_on_success`` is False.
    """
    if turns < 1:
        raise SearchConfigError("refine needs at least one turn")
    traj = Trajectory(id=trajectory_id or f"refine-{uuid.uuid4().hex[:12]}", task_id=task_id)
    if prompt is not None:
        traj.add("user", prompt, kind="prompt")
    seen: dict[str, int] = {}
    candidates: list[C] = []
    verifications: list[Verification] = []
    best: int | None = None
    for turn in range(turns):
        candidate = await maybe_await(propose(traj))
        text, key = _text_and_key(candidate)
        traj.add("assistant", text, kind="proposal", candidate=key, metadata={"turn": turn})
        repeat_of = seen.get(key)
        if repeat_of is None:
            verification = _as_verification(await maybe_await(verify(candidate)))
            seen[key] = turn
            feedback = verification.feedback
        else:
            verification = verifications[repeat_of]
            feedback = f"(same candidate as turn {repeat_of + 1}; not verified again) {verification.feedback}"
        candidates.append(candidate)
        verifications.append(verification)
        traj.add("user", feedback, kind="feedback", candidate=key, verdict=verification.verdict,
                 reward=verification.score,
                 metadata={"turn": turn, "ok": verification.ok, "details": verification.details,
                           **({"repeat_of": repeat_of} if repeat_of is not None else {})})
        if best is None or _rank(verification) > _rank(verifications[best]):
            best = turn
        if verification.ok and stop_on_success:
            break
    assert best is not None
    success = any(v.ok for v in verifications)
    traj.reward = verifications[best].score
    traj.metadata = {"success": success, "best_turn": best, "turns": len(candidates)}
    return RefineResult(success=success, best=candidates[best], best_turn=best,
                        best_verification=verifications[best], turns=len(candidates), trajectory=traj,
                        candidates=candidates, verifications=verifications)


def refine_sync(*args: Any, **kwargs: Any) -> RefineResult[Any]:
    """:func:`refine` for callers without an event loop."""
    return asyncio.run(refine(*args, **kwargs))
