"""The OptiML objective: every configuration counts, or the candidate has no score."""

from __future__ import annotations

import math

import pytest

from veriforge.core.types import Measurement
from veriforge.optiml.objective import composite_objective, no_score_reason, score_time, time_of

CONFIGS = ["small", "odd", "large"]
TIMES = {"small": 1e-6, "odd": 4e-6, "large": 16e-6}


def _est(config: str, value: float, name: str = "time_s", **details) -> Measurement:
    return Measurement(name=name, value=value, unit="s", provenance="estimated", backend="cost-model-v2:H100-SXM",
                       details={"config": config, "configs": CONFIGS, **details})


def test_all_configs_give_the_geometric_mean() -> None:
    ms = [_est(c, t) for c, t in TIMES.items()]
    t, per = time_of(ms, "estimated")
    assert t == pytest.approx(math.exp(sum(math.log(v) for v in TIMES.values()) / 3)) == pytest.approx(4e-6)
    assert per == TIMES
    obj = composite_objective(ms, {}, "estimated")
    assert obj is not None and obj.time_s == pytest.approx(4e-6) and obj.config_times == TIMES
    assert no_score_reason(ms, "estimated") is None


def test_two_of_three_configs_give_no_score_with_the_reason() -> None:
    # large's estimate is unknown: the harness emits a lower bound, never a time_s
    ms = [_est("small", 1e-6), _est("odd", 4e-6),
          _est("large", 3e-6, name="time_s_lower_bound", status="unknown",
               unknown=["k<<<1024, 256>>> (line 14): global load of a at line 8: address not determined"])]
    assert time_of(ms, "estimated")[0] is None  # not the (faster-looking) mean of small and odd
    assert composite_objective(ms, {}, "estimated") is None
    ts = score_time(ms, "estimated")
    assert ts.config_times == {"small": 1e-6, "odd": 4e-6} and set(ts.missing) == {"large"}
    assert "config 'large'" in ts.reason and "estimate unknown" in ts.reason
    assert "address not determined" in ts.reason and "lower bound 3.00 µs" in ts.reason


def test_a_config_missing_without_any_trace_still_counts() -> None:
    # only two measurements, but each names all three configurations
    ms = [_est("small", 1e-6), _est("odd", 4e-6)]
    assert composite_objective(ms, {}, "estimated") is None
    assert "config 'large': no estimated time" in no_score_reason(ms, "estimated")
    # the verified configurations count even when no measurement names them
    bare = [Measurement(name="time_s", value=v, unit="s", provenance="measured", backend="gpu:H100",
                        details={"config": c}) for c, v in TIMES.items() if c != "large"]
    assert time_of(bare, "measured")[0] is not None
    assert time_of(bare, "measured", configs=CONFIGS)[0] is None
    assert "config 'large': no measured time" in no_score_reason(bare, "measured", configs=CONFIGS)


def test_the_harness_estimate_record_gives_the_reasons() -> None:
    estimate = {"configs": {"small": {"time_s": 1e-6}, "odd": {"time_s": 4e-6},
                            "large": {"time_s": None, "lower_bound_s": None,
                                      "unknown": ["line 3: which kernels run depends on device data"]}}}
    ms = [Measurement(name="time_s", value=v, unit="s", provenance="estimated", backend="m",
                      details={"config": c}) for c, v in TIMES.items() if c != "large"]
    assert composite_objective(ms, {}, "estimated", estimate=estimate) is None
    why = no_score_reason(ms, "estimated", estimate=estimate)
    assert why == "config 'large': estimate unknown: line 3: which kernels run depends on device data"


def test_a_config_that_launches_nothing_is_present_not_missing() -> None:
    """An entry that launches no kernel for a config (n = 1 sorts in place) is estimated at 0 s: the
    config has a time, it just has no place in the geometric mean."""
    ms = [_est("small", 1e-6), _est("odd", 0.0), _est("large", 16e-6)]
    t, per = time_of(ms, "estimated")
    assert t == pytest.approx(4e-6) and per["odd"] == 0.0
    only_zero = [_est(c, 0.0) for c in CONFIGS]
    assert time_of(only_zero, "estimated")[0] is None
    assert "no configuration does any GPU work" in (no_score_reason(only_zero, "estimated") or "")
