"""The composite objective OptiML-X minimises: runtime, nudged by hardware-bottleneck proxies.

    objective = time_s × (1 + Σ weight_i × penalty_i)           lower is better

``time_s`` is the geometric mean over the task's verified configurations of the kernel time of
ONE provenance: ``measured`` on a GPU back-end, ``estimated`` (the cost model) on the CPU
back-end. A search fixes its provenance at the start and never mixes them: a candidate without a
time of that provenance is rejected, not scored with another kind of number. The CPU runtime's
``emulated`` wall time is never an objective (it says nothing about a GPU).

Every configuration counts: when any configuration of the candidate lacks a time of the search's
provenance (typically an *estimate unknown* because the analysis could not count some work),
the candidate has no score — never a mean over the configurations that happen to have a time,
which would make a candidate whose large configuration is unknown look faster than it is.
:func:`score_time` says which configurations are missing and why (:attr:`TimeScore.reason`).

Each penalty is a fraction in [0, 1] computed from the shared feature vocabulary
(:mod:`veriforge.cuda.features`):

===================  ==============================================================  =======
proxy                penalty                                                         weight
===================  ==============================================================  =======
memory_traffic       wasted fraction of global bytes moved (1 − load/store efficiency)  0.05
occupancy            1 − theoretical (or achieved) occupancy                          0.05
registers            registers/thread ÷ 255, + 0.5 when anything spills (capped at 1)  0.02
bank_conflicts       1 − 1/ways of shared-memory requests                              0.03
===================  ==============================================================  =======

Why multiplicative and small: runtime is what users want, so the proxies together can move the
objective by at most 15 %. They break ties between candidates the timer (or the cost model)
cannot tell apart and prefer the kernel with more headroom (fewer wasted bytes, more resident
warps, fewer registers) — the one more likely to stay fast on other inputs and GPUs. A feature a
source could not determine contributes no penalty (never a guess). Weights are configurable
(:class:`ObjectiveWeights`) and documented in docs/optiml.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["PROVENANCES", "ObjectiveValue", "ObjectiveWeights", "TimeScore", "composite_objective",
           "no_score_reason", "penalties", "provenance_for_backend", "score_time", "time_of"]

PROVENANCES = ("measured", "estimated")


@dataclass(frozen=True)
class ObjectiveWeights:
    """Weight of each bottleneck proxy (0 disables it)."""

    memory_traffic: float = 0.05
    occupancy: float = 0.05
    registers: float = 0.02
    bank_conflicts: float = 0.03

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"objective weight {name} must be a finite number >= 0, not {value!r}")

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class ObjectiveValue:
    """One candidate's objective and what it is made of."""

    value: float
    time_s: float
    provenance: str
    penalties: dict[str, float] = field(default_factory=dict)
    config_times: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def provenance_for_backend(backend: str) -> str:
    """``measured`` for a GPU back-end, ``estimated`` for the CPU back-end."""
    return "measured" if backend == "gpu" else "estimated"


def _merged(features: Mapping[str, Any]) -> dict[str, list[float]]:
    """Features by name; multi-launch results prefix them with ``kernel.`` and are pooled."""
    out: dict[str, list[float]] = {}
    for key, value in features.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            continue
        out.setdefault(key.rsplit(".", 1)[-1], []).append(float(value))
    return out


def penalties(features: Mapping[str, Any]) -> dict[str, float]:
    """The proxy penalties (fractions in [0, 1]) the features determine; missing ones are left out."""
    f = _merged(features)
    out: dict[str, float] = {}
    effs = f.get("global_load_efficiency", []) + f.get("global_store_efficiency", [])
    if effs:
        out["memory_traffic"] = min(1.0, max(0.0, 1.0 - sum(effs) / len(effs)))
    occ = f.get("theoretical_occupancy") or f.get("achieved_occupancy")
    if occ:
        out["occupancy"] = min(1.0, max(0.0, 1.0 - min(occ)))
    regs = f.get("registers_per_thread")
    if regs:
        spill = 0.5 if any(v > 0 for v in f.get("spill_bytes", [])) else 0.0
        out["registers"] = min(1.0, max(regs) / 255.0 + spill)
    ways = f.get("shared_load_bank_conflict_ways", []) + f.get("shared_store_bank_conflict_ways", [])
    if ways:
        out["bank_conflicts"] = min(1.0, max(0.0, 1.0 - 1.0 / max(1.0, max(ways))))
    return out


def _get(m: Any, name: str) -> Any:
    return m.get(name) if isinstance(m, Mapping) else getattr(m, name, None)


@dataclass(frozen=True)
class TimeScore:
    """The time part of the objective: the geometric mean when every configuration has a time of
    the provenance, else ``time_s`` None and ``missing`` (config → why) says what is lacking."""

    time_s: float | None
    config_times: dict[str, float] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    provenance: str = ""

    @property
    def reason(self) -> str | None:
        """Why there is no score (None when there is one)."""
        if self.time_s is not None:
            return None
        if not self.missing:
            return f"no {self.provenance} time"
        return "; ".join(f"config {name!r}: {why}" for name, why in self.missing.items())


def _why_missing(name: str, provenance: str, measurements: list[Any], estimate: Mapping[str, Any] | None) -> str:
    rec = ((estimate or {}).get("configs") or {}).get(name) if provenance == "estimated" else None
    if isinstance(rec, Mapping) and rec.get("time_s") is None:
        unknown = "; ".join(str(u) for u in rec.get("unknown") or []) or "unknown"
        lb = rec.get("lower_bound_s")
        bound = f" (lower bound {float(lb) * 1e6:.2f} µs)" if isinstance(lb, int | float) else ""
        return f"estimate unknown: {unknown}{bound}"
    for m in measurements:
        d = _get(m, "details") or {}
        if (_get(m, "name") == "time_s_lower_bound" and _get(m, "provenance") == provenance
                and d.get("config") == name):
            unknown = "; ".join(str(u) for u in d.get("unknown") or []) or "unknown"
            return f"estimate unknown: {unknown} (lower bound {float(_get(m, 'value')) * 1e6:.2f} µs)"
    return f"no {provenance} time"


def score_time(measurements: Any, provenance: str, configs: Any = None,
               estimate: Mapping[str, Any] | None = None, only: Any = None) -> TimeScore:
    """The geometric mean of the per-configuration ``time_s`` of ``provenance`` — only when every
    configuration has one.

    The configurations that must have a time are ``configs`` (e.g. the verified ones) plus every
    configuration any measurement names (``details["config"]``, and ``details["configs"]``: the
    estimator lists all of them on each time it emits) and every one in ``estimate`` (the
    harness's ``details["estimate"]``, which also gives the reasons of unknown estimates).
    ``only`` restricts the score to those configurations (a task's ``[[timing]]`` sizes: where
    strategies differ, instead of small verification sizes dominated by launch overhead); each of
    them must still have a time.
    """
    ms = list(measurements or ())
    per: dict[str, float] = {}
    expected: dict[str, None] = dict.fromkeys(str(c) for c in (configs or ()))
    anonymous = 0
    for m in ms:
        details = _get(m, "details") or {}
        if isinstance(details.get("configs"), list):
            expected.update(dict.fromkeys(str(c) for c in details["configs"]))
        if details.get("config") is not None:
            expected[str(details["config"])] = None
        if _get(m, "name") != "time_s" or _get(m, "provenance") != provenance:
            continue
        value = float(_get(m, "value"))
        if value >= 0 and math.isfinite(value):
            key = details.get("config")
            if key is None:
                key, anonymous = anonymous, anonymous + 1
            per[str(key)] = value
    if provenance == "estimated" and isinstance(estimate, Mapping):
        expected.update(dict.fromkeys(str(c) for c in (estimate.get("configs") or {})))
    if only:
        keep = [str(c) for c in only]
        expected = dict.fromkeys(keep)
        per = {k: v for k, v in per.items() if k in expected}
    missing = {name: _why_missing(name, provenance, ms, estimate) for name in expected if name not in per}
    # A configuration whose entry launches no kernel has a time of 0: it is present (not missing)
    # but has no place in a geometric mean; it only counts when nothing else does.
    positive = [v for v in per.values() if v > 0]
    if not per or missing or not positive:
        if per and not missing:
            missing = {"*": "no configuration does any GPU work (every time is 0)"}
        return TimeScore(None, per, missing, provenance)
    return TimeScore(math.exp(sum(math.log(v) for v in positive) / len(positive)), per, {}, provenance)


def time_of(measurements: Any, provenance: str, configs: Any = None,
            estimate: Mapping[str, Any] | None = None) -> tuple[float | None, dict[str, float]]:
    """Geometric mean of the per-configuration ``time_s`` of ``provenance``, or None when any
    configuration lacks one (:func:`score_time` says which and why)."""
    ts = score_time(measurements, provenance, configs, estimate)
    return ts.time_s, ts.config_times


def no_score_reason(measurements: Any, provenance: str, configs: Any = None,
                    estimate: Mapping[str, Any] | None = None) -> str | None:
    """Why a candidate has no objective (None when it has one)."""
    return score_time(measurements, provenance, configs, estimate).reason


def composite_objective(measurements: Any, features: Mapping[str, Any], provenance: str,
                        weights: ObjectiveWeights | None = None, *, configs: Any = None,
                        estimate: Mapping[str, Any] | None = None) -> ObjectiveValue | None:
    """The objective of one evaluated candidate, or None when any configuration lacks a time of
    ``provenance`` (:func:`no_score_reason` says why)."""
    if provenance not in PROVENANCES:
        raise ValueError(f"objective provenance must be one of {PROVENANCES}, not {provenance!r}")
    w = weights or ObjectiveWeights()
    t, per = time_of(measurements, provenance, configs, estimate)
    if t is None:
        return None
    pens = penalties(features)
    factor = 1.0 + sum(getattr(w, name) * value for name, value in pens.items())
    return ObjectiveValue(value=t * factor, time_s=t, provenance=provenance, penalties=pens, config_times=per)
