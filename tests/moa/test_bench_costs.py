"""Cost next to accuracy in the scaling grid (issue 17 part 6): requests, tokens and time per cell,
every ReM-MoA final policy scored from the same runs, and accuracy-vs-cost plots. Scripted agents
(SimWorld) drive the real engine and client: this is orchestration and bookkeeping under test."""

from __future__ import annotations

import csv
import json

import pytest

from veriforge.moa.engine import MoAEngine
from veriforge.moa.scaling import BenchWriter, run_grid
from veriforge.moa.simulate import SimWorld, sim_config


async def test_rows_carry_requests_tokens_time_and_every_policy(tmp_path):
    pytest.importorskip("matplotlib")
    world = SimWorld(seed=3, p=0.45)
    clients = world.clients()
    items = world.items(8)
    base = sim_config("rem_moa", 1, 3, final={"policy": "weighted_vote", "evaluate_all": True})

    score = world.score

    spent: list[int] = []

    def calls() -> int:
        return sum(c.totals.calls for c in clients.values())

    writer = BenchWriter(tmp_path / "out", title="sim", log=None)
    before = [calls()]

    def on_cell(cell):
        spent.append(calls() - before[0])
        before[0] = calls()
        writer.cell(cell)

    cells = await run_grid(items, base, methods=["single", "self_consistency", "moa", "rem_moa"], depths=[2],
                           widths=[3], score=score, engine_options={"clients": clients}, on_cell=on_cell,
                           on_item=writer.item)
    rows = {c.method: c.row() for c in cells}
    # requests are the calls the clients really served, cell by cell
    assert [c.calls_total for c in cells] == spent
    assert rows["single"]["requests_per_item"] == 1.0
    assert rows["self_consistency"]["requests_per_item"] == 1.0  # one request, depth x width samples
    assert rows["moa"]["requests_per_item"] == 2 * 3 + 1
    rem = next(c for c in cells if c.method == "rem_moa")
    assert rem.requests_per_item > 2 * 3 + 1  # proposers, the Reviewer's comparisons, the aggregator
    assert rows["rem_moa"]["noagg_requests_per_item"] == rem.requests_per_item - 1
    assert rows["rem_moa"]["noagg_tokens_per_item"] < rows["rem_moa"]["tokens_per_item"]
    assert all(c.item_seconds > 0 and c.seconds > 0 and c.errors == 0 for c in cells)
    assert "acc_top" not in rows["moa"]

    # every policy's accuracy equals what the engine's own policy answers give, run by run
    engine = MoAEngine(base.replace(method="rem_moa", depth=2, width=3), clients=clients)
    expected = {p: 0 for p in ("aggregate", "top", "vote", "weighted_vote")}
    for item in items:
        result = await engine.run(item.prompt)
        for policy, answer in result.policy_answers.items():
            expected[policy] += world.correct(item.prompt, answer)
    assert {p: rows["rem_moa"][f"acc_{p}"] for p in expected} == {p: round(k / 8, 4) for p, k in expected.items()}
    assert rows["rem_moa"]["accuracy"] == rows["rem_moa"]["acc_weighted_vote"]  # the configured policy

    paths = writer.finish(cells)
    header = next(csv.reader(paths["csv"].open()))
    assert {"requests_per_item", "tokens_per_item", "item_seconds", "seconds", "errors", "acc_vote"} <= set(header)
    table = list(csv.DictReader(paths["csv"].open()))
    assert table[0]["acc_vote"] == "" and table[-1]["acc_vote"] == str(rows["rem_moa"]["acc_vote"])
    assert "noagg_requests_per_item" in paths["markdown"].read_text()
    progress = [json.loads(x) for x in paths["progress"].read_text().splitlines()]
    assert sum(p["event"] == "item" for p in progress) == 4 * 8 and sum(p["event"] == "cell" for p in progress) == 4
    for name in ("accuracy_vs_requests", "accuracy_vs_tokens", "accuracy_vs_depth", "accuracy_vs_width"):
        png = paths[name].read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
