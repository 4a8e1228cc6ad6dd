"""The few types every veriforge system speaks.

A proposer emits :class:`Candidate` programs for a :class:`Task`; a checker turns each into a
:class:`Verdict`; a measurer produces :class:`Measurement` values that always say where they came
from; a multi-turn episode is a :class:`Trajectory`. All are pydantic v2 models that round-trip
through JSON exactly (``Model.from_json(m.to_json()) == m``), because they are stored in the run
store, written to traces and exported as training data.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from veriforge.core.hashing import content_hash

__all__ = [
    "PROVENANCES",
    "Candidate",
    "InputResult",
    "Measurement",
    "Provenance",
    "Step",
    "Task",
    "Trajectory",
    "Verdict",
]

Provenance = Literal["measured", "emulated", "estimated"]
"""Where a number came from: ``measured`` on real hardware, ``emulated`` on the CPU runtime,
``estimated`` by a cost model. Numbers of different provenance are never comparable silently."""

PROVENANCES: tuple[str, ...] = ("measured", "emulated", "estimated")

JSONDict = dict[str, Any]


class _Model(BaseModel):
    """Shared configuration: unknown fields are errors (a typo in stored JSON must not vanish),
    and non-finite floats are refused at validation time because JSON cannot carry them."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def to_json(self) -> str:
        """Compact JSON text of this object (what the store and traces write)."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        """Parse an object written by :meth:`to_json` (validates it)."""
        return cls.model_validate_json(text)


class Task(_Model):
    """One problem to solve, generic across systems.

    ``inputs`` holds the task's input configurations (e.g. problem sizes keyed by a config name);
    ``metadata`` anything else. Later layers specialise tasks (CUDA task folders, MoA questions,
    D3-Gym environments) but can always be reduced to this shape for storage and export.
    """

    id: str = Field(min_length=1)
    family: str = ""
    description: str = ""
    inputs: JSONDict = Field(default_factory=dict)
    metadata: JSONDict = Field(default_factory=dict)


class Candidate(_Model):
    """A proposed program.

    :attr:`hash` covers only ``language`` and ``source``: the same program proposed twice (by a
    different model, at a different temperature, from a different parent) is the same program, and
    must hit the same cached evaluation. Metadata describes *how* it was produced, not *what* it is.
    """

    source: str
    language: str = "cuda"
    metadata: JSONDict = Field(default_factory=dict)
    parent: str | None = None

    @property
    def hash(self) -> str:
        """Content hash of ``(language, source)``; the key of its evaluations."""
        return content_hash(self.language, self.source)


class InputResult(_Model):
    """Outcome of checking a candidate on one input configuration."""

    config: str
    passed: bool
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    message: str = ""

    @field_validator("max_abs_error", "max_rel_error")
    @classmethod
    def _finite_or_none(cls, value: float | None) -> float | None:
        # An error of NaN means the comparison itself broke; say so in `message`, not as a number.
        if value is not None and not math.isfinite(value):
            raise ValueError("error metrics must be finite (use None and a message instead)")
        return value


class Verdict(_Model):
    """Whether a candidate compiled, whether it is correct, on which inputs, and if not, why.

    ``rejected`` marks candidates refused for cheating or policy reasons (e.g. calling a library
    instead of implementing the kernel) as distinct from merely wrong ones.
    """

    compiled: bool
    correct: bool
    results: list[InputResult] = Field(default_factory=list)
    reason: str = ""
    rejected: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.correct and not self.compiled:
            raise ValueError("a verdict cannot be correct without having compiled")
        if self.correct and self.rejected:
            raise ValueError("a rejected candidate cannot be correct")
        if self.correct and any(not r.passed for r in self.results):
            raise ValueError("a verdict with a failed input cannot be correct")
        return self

    @classmethod
    def compile_failed(cls, reason: str) -> Verdict:
        """The candidate did not compile; ``reason`` carries the compiler's message."""
        return cls(compiled=False, correct=False, reason=reason)

    @classmethod
    def passed(cls, results: list[InputResult] | None = None, reason: str = "") -> Verdict:
        """Compiled and correct on every input in ``results``."""
        return cls(compiled=True, correct=True, results=list(results or []), reason=reason)

    @classmethod
    def failed(cls, results: list[InputResult] | None = None, reason: str = "") -> Verdict:
        """Compiled but wrong (or crashed) on at least one input."""
        results = list(results or [])
        if not reason:
            bad = [r.config for r in results if not r.passed]
            reason = f"wrong on {', '.join(bad)}" if bad else "incorrect"
        return cls(compiled=True, correct=False, results=results, reason=reason)

    @classmethod
    def from_results(cls, results: list[InputResult]) -> Verdict:
        """Correct iff every input passed (and there was at least one)."""
        if results and all(r.passed for r in results):
            return cls.passed(results)
        return cls.failed(results, "" if results else "no inputs were checked")

    @classmethod
    def reject(cls, reason: str, compiled: bool = True) -> Verdict:
        """Refused on purpose (cheating, forbidden API); never counts as correct."""
        return cls(compiled=compiled, correct=False, rejected=True, reason=reason)

    @property
    def failed_configs(self) -> list[str]:
        """Names of the input configurations that did not pass."""
        return [r.config for r in self.results if not r.passed]


class Measurement(_Model):
    """One number with its unit, spread and origin.

    ``provenance`` is mandatory and restricted to :data:`Provenance`, so no code path can produce a
    timing without saying whether it was measured, emulated or estimated; ``backend`` names the
    exact producer (e.g. ``"gpu:H100"``, ``"cpu-runtime"``, ``"cost-model-v2"``).
    """

    name: str
    value: float
    unit: str
    spread: float | None = None
    provenance: Provenance
    backend: str
    samples: int | None = None
    details: JSONDict = Field(default_factory=dict)

    @field_validator("value")
    @classmethod
    def _finite_value(cls, value: float) -> float:
        # NaN/inf would serialise as null and silently fail the round trip; a failed measurement
        # is an error or a Verdict, not a number.
        if not math.isfinite(value):
            raise ValueError("measurement value must be finite")
        return value

    @field_validator("spread")
    @classmethod
    def _valid_spread(cls, value: float | None) -> float | None:
        if value is not None and (not math.isfinite(value) or value < 0):
            raise ValueError("spread must be a finite number >= 0")
        return value

    @field_validator("samples")
    @classmethod
    def _valid_samples(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError("samples must be >= 1")
        return value

    def comparable_with(self, other: Measurement) -> bool:
        """True when both numbers can be compared: same name, unit and provenance."""
        return (self.name, self.unit, self.provenance) == (other.name, other.unit, other.provenance)


class Step(_Model):
    """One turn of a trajectory.

    ``role`` is who acted (``system``, ``user``, ``assistant``, ``tool``, ``environment``);
    ``kind`` what the turn was (``prompt``, ``proposal``, ``feedback``, ``action`` ...).
    ``candidate`` is the :attr:`Candidate.hash` the step proposed or evaluated, if any.
    """

    role: str
    kind: str = ""
    content: str = ""
    candidate: str | None = None
    verdict: Verdict | None = None
    measurements: list[Measurement] = Field(default_factory=list)
    reward: float | None = None
    metadata: JSONDict = Field(default_factory=dict)


class Trajectory(_Model):
    """A multi-turn episode on one task: what was said and done, what it earned.

    Used by CudaPerf RL rollouts and D3-Gym exports; ``reward`` is the episode's final reward
    (per-step rewards live on the steps).
    """

    id: str = Field(min_length=1)
    task_id: str
    steps: list[Step] = Field(default_factory=list)
    reward: float | None = None
    metadata: JSONDict = Field(default_factory=dict)

    def add(self, role: str, content: str = "", **fields: Any) -> Step:
        """Append a step and return it."""
        step = Step(role=role, content=content, **fields)
        self.steps = [*self.steps, step]
        return step

    def messages(self) -> list[dict[str, str]]:
        """The steps as chat messages (``role``/``content``), e.g. to continue the conversation."""
        return [{"role": s.role, "content": s.content} for s in self.steps]

    @property
    def step_rewards(self) -> list[float]:
        """Rewards of the steps that have one, in order."""
        return [s.reward for s in self.steps if s.reward is not None]
