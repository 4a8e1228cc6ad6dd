"""The nouns of a search: states, edits, evaluations, proposers, evaluators, codecs.

The search layer knows nothing about CUDA, prompts or models. A *state* is any value (a
:class:`~veriforge.core.types.Candidate`, a tuple of tuning parameters, a dict); an *edit* is a
proposed child state together with the story of where it came from (which proposer, why, with
what prior); an *evaluation* says whether the state is acceptable and how good it is. Proposers
and evaluators may be synchronous or ``async`` (model proposers call LLMs; GPU evaluators wait on
subprocesses), so the engine awaits whatever they return.

States are identified by a content key (:func:`state_key`): two edits that produce the same state
are the same node, and a state is never evaluated twice. A :class:`StateCodec` turns states into
JSON and back so a search tree can be written out and resumed.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from veriforge.core.hashing import canonical_json, content_hash, jsonable
from veriforge.search.errors import SearchError

if TYPE_CHECKING:
    from veriforge.search.tree import Node

__all__ = [
    "CandidateCodec",
    "Edit",
    "Evaluation",
    "Evaluator",
    "FunctionEvaluator",
    "FunctionProposer",
    "JsonCodec",
    "Proposer",
    "StateCodec",
    "as_evaluator",
    "as_proposer",
    "default_codec",
    "evaluator_fingerprint",
    "maybe_await",
    "state_key",
]

S = TypeVar("S")
T = TypeVar("T")


async def maybe_await(value: T | Awaitable[T]) -> T:
    """``value`` itself, or what it resolves to if it is awaitable (sync/async user callbacks)."""
    if inspect.isawaitable(value):
        return await value
    return value


def _finite_or_none(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SearchError(f"evaluation {name} must be a number or None, got {type(value).__name__}")
    if not math.isfinite(value):
        # A NaN objective would poison every comparison in the tree; an evaluator that cannot
        # measure must say so with ok=False and a reason.
        raise SearchError(f"evaluation {name} must be finite, got {value!r} (report failures with ok=False)")
    return float(value)


@dataclass(frozen=True)
class Evaluation:
    """The verdict on one state, from one evaluator call.

    ``objective`` is lower-is-better (e.g. a runtime); ``reward`` higher-is-better (e.g. an RL
    reward in [0, 1]); an evaluator may give either or both, and the search's ``value_mode`` says
    which one drives it. ``ok=False`` means the state is unacceptable (did not compile, wrong
    answer, cheated); ``rejected_reason`` says why and is kept in the tree. ``provenance`` says
    where the number came from (``measured``/``emulated``/``estimated`` in veriforge's CUDA
    layers). ``details`` carries anything JSON-able, e.g. profile evidence for the next proposer.
    """

    ok: bool
    objective: float | None = None
    reward: float | None = None
    provenance: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    rejected_reason: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "objective", _finite_or_none("objective", self.objective))
        object.__setattr__(self, "reward", _finite_or_none("reward", self.reward))
        if not self.ok and not self.rejected_reason:
            object.__setattr__(self, "rejected_reason", "evaluation failed (no reason given)")

    @classmethod
    def failed(cls, reason: str, **fields: Any) -> Evaluation:
        """An unacceptable state, with the reason kept in the tree."""
        return cls(ok=False, rejected_reason=reason, **fields)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form (what the run store and the tree JSON hold)."""
        return {"ok": self.ok, "objective": self.objective, "reward": self.reward,
                "provenance": self.provenance, "details": jsonable(self.details),
                "rejected_reason": self.rejected_reason}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evaluation:
        return cls(ok=bool(data["ok"]), objective=data.get("objective"), reward=data.get("reward"),
                   provenance=data.get("provenance"), details=dict(data.get("details") or {}),
                   rejected_reason=data.get("rejected_reason", ""))


@dataclass(frozen=True)
class Edit(Generic[S]):
    """An action: the child ``state`` it produces and where it came from.

    ``proposer`` names the proposer (filled in by the engine if left empty); ``description`` is
    the human story ("unroll the inner loop by 4"); ``evidence`` is what motivated it (a profile
    finding, a model's rationale; JSON-able); ``prior`` is the proposer's belief that the edit
    helps, used by PUCT (any positive scale: priors are normalised among siblings).
    """

    state: S
    description: str = ""
    proposer: str = ""
    evidence: Any = None
    prior: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.prior is not None and (not math.isfinite(self.prior) or self.prior < 0):
            raise SearchError(f"an edit's prior must be a finite number >= 0, got {self.prior!r}")

    def with_proposer(self, name: str) -> Edit[S]:
        return replace(self, proposer=name)

    def info(self) -> dict[str, Any]:
        """The edit without its state (the tree stores the state once, on the child node)."""
        return {"description": self.description, "proposer": self.proposer,
                "evidence": jsonable(self.evidence), "prior": self.prior,
                "metadata": jsonable(self.metadata)}


@runtime_checkable
class Proposer(Protocol[S]):
    """Suggests edits of a node's state.

    ``propose`` may be a plain function or a coroutine; it receives the evaluated node (its
    ``state``, ``evaluation`` with ``details``/evidence, ``edit``, ``parent``, ``depth``) and a
    hint ``k`` of how many edits are wanted, and returns any number of edits. Returning the same
    edits again is fine (the engine skips states it has seen); returning none means "nothing
    more to try here".
    """

    name: str

    def propose(self, node: Node[S], k: int) -> Sequence[Edit[S]] | Awaitable[Sequence[Edit[S]]]: ...


@runtime_checkable
class Evaluator(Protocol[S]):
    """Judges a state. Sync or async; give it a ``fingerprint`` attribute (a string naming the
    evaluator *and everything its result depends on*, e.g. task, inputs, backend) when results
    are kept in a shared run store, so a different evaluator never reuses them."""

    def evaluate(self, state: S) -> Evaluation | Awaitable[Evaluation]: ...


@dataclass
class FunctionProposer(Generic[S]):
    """A proposer from a plain (sync or async) function ``fn(node, k) -> list[Edit]``."""

    name: str
    fn: Callable[[Node[S], int], Sequence[Edit[S]] | Awaitable[Sequence[Edit[S]]]]

    def propose(self, node: Node[S], k: int) -> Sequence[Edit[S]] | Awaitable[Sequence[Edit[S]]]:
        return self.fn(node, k)


@dataclass
class FunctionEvaluator(Generic[S]):
    """An evaluator from a plain (sync or async) function ``fn(state) -> Evaluation``."""

    fn: Callable[[S], Evaluation | Awaitable[Evaluation]]
    fingerprint: str = ""

    def __post_init__(self) -> None:
        if not self.fingerprint:
            self.fingerprint = f"{getattr(self.fn, '__module__', '')}.{getattr(self.fn, '__qualname__', '')}"

    def evaluate(self, state: S) -> Evaluation | Awaitable[Evaluation]:
        return self.fn(state)


def as_proposer(obj: Any) -> Proposer[Any]:
    """``obj`` if it already is a proposer; a plain callable becomes one named after it."""
    if callable(getattr(obj, "propose", None)):
        if not getattr(obj, "name", ""):
            raise SearchError(f"proposer {obj!r} needs a non-empty 'name' (it is recorded on every edit)")
        return obj
    if callable(obj):
        return FunctionProposer(getattr(obj, "__name__", "proposer"), obj)
    raise SearchError(f"not a proposer: {obj!r} (needs .name and .propose(node, k), or be a callable)")


def as_evaluator(obj: Any) -> Evaluator[Any]:
    """``obj`` if it already is an evaluator; a plain callable becomes one."""
    if callable(getattr(obj, "evaluate", None)):
        return obj
    if callable(obj):
        return FunctionEvaluator(obj)
    raise SearchError(f"not an evaluator: {obj!r} (needs .evaluate(state), or be a callable)")


def evaluator_fingerprint(evaluator: Any) -> str:
    """The evaluator's ``fingerprint`` attribute, else its class's qualified name."""
    fp = getattr(evaluator, "fingerprint", None)
    if isinstance(fp, str) and fp:
        return fp
    cls = type(evaluator)
    return f"{cls.__module__}.{cls.__qualname__}"


def state_key(state: Any) -> str:
    """The content key of a state: its ``key`` (or ``hash``) string attribute if it has one (a
    :class:`~veriforge.core.types.Candidate` hashes its language and source), else the content
    hash of its canonical JSON."""
    for attr in ("key", "hash"):
        value = getattr(state, attr, None)
        if isinstance(value, str) and value:
            return value
    try:
        return content_hash("veriforge.search.state", canonical_json(state))
    except (TypeError, ValueError) as exc:
        raise SearchError(f"cannot key state of type {type(state).__name__}: give it a 'key' string "
                          f"attribute or pass a StateCodec ({exc})") from exc


class StateCodec(Protocol[S]):
    """How states are keyed, written to JSON and read back (for the tree JSON and resuming)."""

    def key(self, state: S) -> str: ...

    def dump(self, state: S) -> Any: ...

    def load(self, data: Any) -> S: ...


class JsonCodec(Generic[S]):
    """For states that are JSON values (or a model/dataclass written as one).

    ``load`` rebuilds the state from its JSON form (e.g. ``tuple`` for tuple states, which JSON
    writes as lists); without it the JSON value itself is the state.
    """

    def __init__(self, load: Callable[[Any], S] | None = None) -> None:
        self._load = load

    def key(self, state: S) -> str:
        return state_key(state)

    def dump(self, state: S) -> Any:
        return jsonable(state)

    def load(self, data: Any) -> S:
        return self._load(data) if self._load is not None else data


class CandidateCodec:
    """For :class:`~veriforge.core.types.Candidate` states (keyed by ``Candidate.hash``)."""

    def key(self, state: Any) -> str:
        return state.hash

    def dump(self, state: Any) -> Any:
        return state.model_dump(mode="json")

    def load(self, data: Any) -> Any:
        from veriforge.core.types import Candidate

        return Candidate.model_validate(data)


def default_codec(state: Any) -> StateCodec[Any]:
    """A codec that fits ``state``: Candidate, tuple (rebuilt as tuple) or plain JSON value."""
    from veriforge.core.types import Candidate

    if isinstance(state, Candidate):
        return CandidateCodec()
    if isinstance(state, tuple):
        return JsonCodec(load=_deep_tuple)
    return JsonCodec()


def _deep_tuple(data: Any) -> Any:
    return tuple(_deep_tuple(v) for v in data) if isinstance(data, list) else data
