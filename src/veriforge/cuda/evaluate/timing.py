"""Turning raw GPU timings into numbers that can be trusted (or flagged).

Timing rules live here once so the C→CUDA driver and the PyTorch→CUDA loop report the same
statistics and raise the same flags: the median (robust to the odd preempted trial), the IQR and
standard deviation as spread, a *side-stream* check (wall time after ``cudaDeviceSynchronize``
far above the event time means work escaped the timed stream), and a *review* flag for speedups
over 10× against the baseline, which in published benchmarks were far more often a broken
measurement or a cheat than a real kernel.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["REVIEW_SPEEDUP", "TimingStats", "side_stream_suspect", "speedup_review", "summarize"]

REVIEW_SPEEDUP = 10.0
"""Speedups above this (candidate vs baseline) are flagged for a human to look at."""

SIDE_STREAM_ABS_MS = 0.05
SIDE_STREAM_FRACTION = 0.5


@dataclass(frozen=True)
class TimingStats:
    """Summary of one series of timed trials (milliseconds)."""

    n: int
    median_ms: float
    iqr_ms: float
    std_ms: float
    min_ms: float
    max_ms: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(values_ms: Sequence[float]) -> TimingStats:
    """Median, IQR, standard deviation, min and max of ``values_ms`` (at least one value)."""
    if not values_ms:
        raise ValueError("no timings to summarise")
    v = sorted(float(x) for x in values_ms)
    return TimingStats(n=len(v), median_ms=statistics.median(v), iqr_ms=_quantile(v, 0.75) - _quantile(v, 0.25),
                       std_ms=statistics.pstdev(v) if len(v) > 1 else 0.0, min_ms=v[0], max_ms=v[-1])


def side_stream_suspect(event_median_ms: float, wall_median_ms: float) -> bool:
    """True when the wall-clock bracket (ending after ``cudaDeviceSynchronize``) exceeds the event
    time by more than both 0.05 ms and half of the wall time: the call left work running on a
    stream the stop event did not wait for, so the event time under-reports it."""
    gap = wall_median_ms - event_median_ms
    return gap > SIDE_STREAM_ABS_MS and gap > SIDE_STREAM_FRACTION * wall_median_ms


def speedup_review(candidate_ms: float, baseline_ms: float) -> tuple[float | None, bool]:
    """(baseline / candidate, needs review?) — ``None`` when the candidate time is not positive."""
    if candidate_ms <= 0:
        return None, True
    speedup = baseline_ms / candidate_ms
    return speedup, speedup > REVIEW_SPEEDUP
