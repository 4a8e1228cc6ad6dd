"""The shared feature vocabulary: names, directions and the ncu metric list."""

from __future__ import annotations

import re

from veriforge.cuda.features import FEATURES, ncu_metrics


def test_every_ncu_metric_is_extracted_whole():
    metrics = ncu_metrics()
    # each raw metric must appear verbatim in some expression (no truncated prefixes like "tex__")
    exprs = " ".join(f.ncu for f in FEATURES.values() if f.ncu)
    for m in metrics:
        assert re.search(rf"(?<![A-Za-z0-9_]){re.escape(m)}", exprs), m
    assert "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum" in metrics
    assert "gpu__time_duration.sum" in metrics
    assert not any(m.startswith("tex__") for m in metrics)


def test_feature_names_are_keys_and_directions_known_for_ratios():
    for name, f in FEATURES.items():
        assert f.name == name
        if f.unit == "fraction" and name not in ("dram_throughput",):
            assert f.higher_is_better is not None, name
    assert FEATURES["global_load_efficiency"].higher_is_better is True
    assert FEATURES["time_s"].higher_is_better is False
