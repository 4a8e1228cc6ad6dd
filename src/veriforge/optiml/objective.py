"""The composite objective OptiML-X minimises: runtime, nudged by hardware-bottleneck proxies.

    objective = time_s × (1 + Σ weight_i × penalty_i)           lower is better

``time_s`` is the geometric mean over the task's verified configurations of the kernel time of
ONE provenance: ``measured`` on a GPU back-end, ``estimated`` (the cost model) on the CPU
back-end. A search fixes its provenance at the start and never mixes them: a candidate without a
time of that provenance is rejected, not scored with another kind of number. The CPU runtime's
``emulated`` wall time is never an objective (it says nothing about a GPU).

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

__all__ = ["PROVENANCES", "ObjectiveValue", "ObjectiveWeights", "composite_objective", "penalties",
           "provenance_for_backend", "time_of"]

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


def time_of(measurements: Any, provenance: str) -> tuple[float | None, dict[str, float]]:
    """Geometric mean of the per-configuration ``time_s`` of ``provenance`` (None if there is none)."""
    per: dict[str, float] = {}
    for m in measurements or ():
        name = m.get("name") if isinstance(m, Mapping) else m.name
        prov = m.get("provenance") if isinstance(m, Mapping) else m.provenance
        if name != "time_s" or prov != provenance:
            continue
        details = (m.get("details") if isinstance(m, Mapping) else m.details) or {}
        value = float(m.get("value") if isinstance(m, Mapping) else m.value)
        if value > 0 and math.isfinite(value):
            per[str(details.get("config", len(per)))] = value
    if not per:
        return None, {}
    return math.exp(sum(math.log(v) for v in per.values()) / len(per)), per


def composite_objective(measurements: Any, features: Mapping[str, Any], provenance: str,
                        weights: ObjectiveWeights | None = None) -> ObjectiveValue | None:
    """The objective of one evaluated candidate, or None when it has no time of ``provenance``."""
    if provenance not in PROVENANCES:
        raise ValueError(f"objective provenance must be one of {PROVENANCES}, not {provenance!r}")
    w = weights or ObjectiveWeights()
    t, per = time_of(measurements, provenance)
    if t is None:
        return None
    pens = penalties(features)
    factor = 1.0 + sum(getattr(w, name) * value for name, value in pens.items())
    return ObjectiveValue(value=t * factor, time_s=t, provenance=provenance, penalties=pens, config_times=per)
