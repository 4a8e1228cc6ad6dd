"""EvalResult: what one evaluation returns and what the run store keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from veriforge.core.types import Measurement, Verdict

__all__ = ["EvalResult"]


@dataclass
class EvalResult:
    """Verdict + measurements + structure features of one candidate on one task and back-end.

    ``cached`` is True when the result came from the run store without re-running anything.
    ``log`` holds the back-end's output (compiler log, crash report) for humans; ``details``
    machine-readable extras (rejection kind, per-case timings, the cache key).
    """

    verdict: Verdict
    measurements: list[Measurement] = field(default_factory=list)
    features: dict[str, Any] = field(default_factory=dict)
    cached: bool = False
    task_id: str = ""
    backend: str = ""
    candidate_hash: str = ""
    key: str = ""
    seconds: float = 0.0
    log: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.verdict.correct

    def time(self, provenance: str = "estimated", config: str | None = None) -> float | None:
        """The ``time_s`` of ``provenance`` for ``config`` (default: the last configuration, the
        largest by convention), or None if there is none. Never mixes provenances, and never
        answers for another configuration: when the measurements name every configuration
        (``details["configs"]``, estimated times) and the last one has no time, it is None."""
        if config is None:
            named = [m.details["configs"] for m in self.measurements if m.provenance == provenance
                     and isinstance(m.details.get("configs"), list) and m.details["configs"]]
            if named:
                config = str(named[-1][-1])
        hits = [m for m in self.measurements if m.name == "time_s" and m.provenance == provenance
                and (config is None or m.details.get("config") == config)]
        return hits[-1].value if hits else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.model_dump(mode="json"),
            "measurements": [m.model_dump(mode="json") for m in self.measurements],
            "features": self.features,
            "cached": self.cached,
            "task_id": self.task_id,
            "backend": self.backend,
            "candidate_hash": self.candidate_hash,
            "key": self.key,
            "seconds": self.seconds,
            "log": self.log,
            "details": self.details,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        return cls(
            verdict=Verdict.model_validate(data["verdict"]),
            measurements=[Measurement.model_validate(m) for m in data.get("measurements", [])],
            features=dict(data.get("features", {})),
            cached=bool(data.get("cached", False)),
            task_id=data.get("task_id", ""),
            backend=data.get("backend", ""),
            candidate_hash=data.get("candidate_hash", ""),
            key=data.get("key", ""),
            seconds=float(data.get("seconds", 0.0)),
            log=data.get("log", ""),
            details=dict(data.get("details", {})),
        )
