"""The scaling runner: depth × width grid over a suite, results table and plots; the depth simulation."""

from __future__ import annotations

import csv
import json

import pytest

from veriforge.moa.errors import MoAConfigError
from veriforge.moa.scaling import grid_cells, parse_int_range, run_grid, write_results
from veriforge.moa.simulate import SimWorld, sim_config


def test_parse_int_range_and_cells():
    assert parse_int_range("1..4") == [1, 2, 3, 4] and parse_int_range("5,1,3") == [1, 3, 5]
    with pytest.raises(MoAConfigError):
        parse_int_range("0..2")
    with pytest.raises(MoAConfigError):
        parse_int_range("a..b")
    cells = grid_cells(["single", "moa"], [1, 2], [2, 3])
    assert cells == [("single", 1, 1), ("moa", 1, 2), ("moa", 1, 3), ("moa", 2, 2), ("moa", 2, 3)]
    with pytest.raises(MoAConfigError, match="unknown method"):
        grid_cells(["nope"], [1], [1])


async def test_grid_writes_table_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    world = SimWorld(seed=0)
    items = world.items(6)

    score = world.score

    cells = await run_grid(items, sim_config("rem_moa", 1, 2), methods=["single", "self_consistency", "moa",
                                                                        "rem_moa"],
                           depths=[1, 2], widths=[2, 3], score=score, engine_options={"clients": world.clients()})
    assert len(cells) == 1 + 3 * 4 and all(c.n == 6 for c in cells)
    sc = next(c for c in cells if (c.method, c.depth, c.width) == ("self_consistency", 2, 3))
    assert sc.tokens_total > next(c for c in cells if c.method == "single").tokens_total > 0
    paths = write_results(cells, tmp_path / "out", title="sim")
    rows = list(csv.DictReader(paths["csv"].open()))
    assert len(rows) == 13 and {r["method"] for r in rows} == {"single", "self_consistency", "moa", "rem_moa"}
    assert float(rows[0]["accuracy"]) == pytest.approx(cells[0].accuracy, abs=1e-4)
    data = json.loads(paths["json"].read_text())
    assert len(data["cells"][0]["items"]) == 6
    assert "| method |" in paths["markdown"].read_text()
    for name in ("accuracy_vs_depth", "accuracy_vs_width", "accuracy_vs_tokens"):
        png = paths[name].read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


async def test_depth_simulation_rem_moa_beats_moa_at_depth():
    """A small version of benchmarks/moa_depth_sim.py: with an informative reviewer, ReM-MoA at depth 4
    beats vanilla MoA at depth 4, and its agents' references differ where MoA's are identical."""
    from veriforge.moa.engine import MoAEngine

    world = SimWorld(seed=0, p=0.4, q=0.6, r=0.85)
    clients = world.clients()
    acc = {}
    diversity = {}
    for method in ("moa", "rem_moa"):
        engine = MoAEngine(sim_config(method, 4, 3), clients=clients)
        results = [await engine.run(world.question(i)) for i in range(24)]
        acc[method] = sum(world.correct(world.question(i), r.answer) for i, r in enumerate(results)) / 24
        diversity[method] = results[0].layers[-1].diversity["jaccard_distance"]
    assert acc["rem_moa"] > acc["moa"] + 0.15, acc
    assert diversity["moa"] == 0.0 and diversity["rem_moa"] > 0.3
