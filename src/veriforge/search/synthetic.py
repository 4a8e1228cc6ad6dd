"""Synthetic search problems with known answers, for tests, docs and benchmarks of the engine.

:class:`DeceptiveLattice` is a lattice of integer "tuning parameters" (think tile sizes and
unroll factors) with an objective shaped like a runtime: a steep basin close to the start whose
floor is a *local* optimum, and a wide, gentle basin further away whose floor (the planted global
optimum) is lower. From the start, the steepest first step leads into the local basin, so greedy
hill-climbing is trapped there by construction; a search must keep exploring the less promising
first steps to find the global one. Each step along the way changes the objective by a few
percent, so the default regression guardrail never blocks the route.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from veriforge.core.hashing import content_hash
from veriforge.search.interfaces import Edit, Evaluation
from veriforge.search.tree import Node

__all__ = ["DeceptiveLattice", "LatticeEvaluator", "StepProposer"]

Point = tuple[int, ...]


def _l1(a: Point, b: Point) -> int:
    return sum(abs(x - y) for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class DeceptiveLattice:
    """Points in ``[0, size)^dims``; ``objective(x)`` is lower-is-better and positive.

    ``objective(x) = min(local_floor + local_slope·|x - local|₁, global_floor + global_slope·|x - best|₁)``
    """

    dims: int = 3
    size: int = 10
    start: Point = (5, 5, 5)
    local: Point = (3, 3, 3)
    best: Point = (9, 9, 9)
    local_floor: float = 2.0
    local_slope: float = 0.35
    global_floor: float = 1.0
    global_slope: float = 0.12

    def __post_init__(self) -> None:
        for name in ("start", "local", "best"):
            p = getattr(self, name)
            if len(p) != self.dims or not all(0 <= v < self.size for v in p):
                raise ValueError(f"{name} {p} is not a point of [0, {self.size})^{self.dims}")
        if self.objective(self.best) >= self.objective(self.local):
            raise ValueError("the planted optimum must beat the local one")

    def objective(self, x: Point) -> float:
        return min(self.local_floor + self.local_slope * _l1(x, self.local),
                   self.global_floor + self.global_slope * _l1(x, self.best))

    @property
    def optimum(self) -> float:
        return self.objective(self.best)

    def contains(self, x: Point) -> bool:
        return len(x) == self.dims and all(0 <= v < self.size for v in x)


@dataclass
class StepProposer:
    """Moves one parameter by ``±step`` (every in-range move, in a fixed order)."""

    lattice: DeceptiveLattice
    step: int = 1
    name: str = "step"

    def propose(self, node: Node[Point], k: int) -> list[Edit[Point]]:
        x = node.state
        out = []
        for d in range(self.lattice.dims):
            for delta in (self.step, -self.step):
                y = list(x)
                y[d] += delta
                if self.lattice.contains(tuple(y)):
                    out.append(Edit(tuple(y), description=f"param {d} {'+' if delta > 0 else ''}{delta}",
                                    evidence={"param": d, "delta": delta}))
        return out


@dataclass
class LatticeEvaluator:
    """Evaluates lattice points; counts calls per point; optional noise and failures.

    ``noise`` is a relative Gaussian standard deviation, drawn from a generator seeded by the
    point and how many times it was evaluated, so runs are reproducible. ``invalid`` points
    evaluate as ``ok=False``. ``fail_after`` raises after that many calls (simulates a crash).
    """

    lattice: DeceptiveLattice
    noise: float = 0.0
    seed: int = 0
    invalid: frozenset[Point] = frozenset()
    fail_after: int | None = None
    calls: Counter[Point] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def fingerprint(self) -> str:
        return content_hash("lattice", repr(self.lattice), str(self.noise), str(self.seed),
                            repr(sorted(self.invalid)))

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def evaluate(self, state: Point) -> Evaluation:
        with self._lock:
            if self.fail_after is not None and self.total_calls >= self.fail_after:
                raise RuntimeError(f"simulated crash after {self.fail_after} evaluations")
            self.calls[state] += 1
            count = self.calls[state]
        if state in self.invalid:
            return Evaluation.failed(f"point {state} is invalid", provenance="estimated")
        value = self.lattice.objective(state)
        if self.noise:
            rng = random.Random(f"{self.seed}:{state}:{count}")
            value *= max(0.05, 1.0 + rng.gauss(0.0, self.noise))
        return Evaluation(ok=True, objective=value, provenance="estimated", details={"point": list(state)})

    def as_dict(self) -> dict[str, Any]:
        return {"calls": {str(k): v for k, v in self.calls.items()}}
