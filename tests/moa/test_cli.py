"""``veriforge moa ask`` / ``bench`` through typer's runner, with scripted models from files."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from veriforge.cli.moa_cmd import app

REPLIES = [
    {"text": "Both are fine.\n[[tie]]", "match": "Which response is better"},
    {"text": "Monday 14, Tuesday 28, so 42 muffins at $3: 126.\n#### 126"},
]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no stray ./veriforge.toml
    script = tmp_path / "replies.jsonl"
    script.write_text("\n".join(json.dumps(r) for r in REPLIES) + "\n")
    (tmp_path / "moa.toml").write_text(
        f'method = "rem_moa"\ndepth = 2\nwidth = 2\n\n[[proposers]]\nmodel = "scripted:{script}"\n'
    )
    return tmp_path


def test_ask_without_a_model_points_to_the_configuration(workdir):
    (workdir / "empty.toml").write_text("depth = 2\n")
    result = CliRunner().invoke(app, ["ask", "What is 2+2?", "--config", str(workdir / "empty.toml")])
    assert result.exit_code == 2
    assert "error:" in result.output and "no model" in result.output and "[[proposers]]" in result.output


def test_ask_prints_answer_ranking_and_exports_traces(workdir):
    traces = workdir / "traces.jsonl"
    result = CliRunner().invoke(app, ["ask", "How many dollars?", "--config", "moa.toml", "--run-id", "cli-1",
                                      "--traces-out", str(traces)])
    assert result.exit_code == 0, result.output
    assert "ANSWER: 126" in result.output and "ranked reasoning memory" in result.output
    lines = [json.loads(x) for x in traces.read_text().splitlines()]
    assert len(lines) == 4 and {x["question_id"] for x in lines} == {"cli-1"}
    as_json = CliRunner().invoke(app, ["ask", "How many dollars?", "--config", "moa.toml", "--method", "single",
                                       "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output)
    assert data["answer"] == "126" and data["method"] == "single" and data["account"]["calls"] == 1


def test_bench_writes_table_and_plots(workdir):
    pytest.importorskip("matplotlib")
    out = workdir / "out"
    result = CliRunner().invoke(app, ["bench", "--suite", "gsm8k", "--limit", "2", "--depth", "1..2", "--width", "2",
                                      "--methods", "single,rem_moa", "--config", "moa.toml", "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = (out / "results.csv").read_text().splitlines()
    assert rows[0].startswith("method,depth,width") and len(rows) == 1 + 1 + 2
    assert all((out / f"{n}.png").stat().st_size > 1000 for n in
               ("accuracy_vs_depth", "accuracy_vs_width", "accuracy_vs_tokens"))
    meta = json.loads((out / "results.json").read_text())["meta"]
    assert meta["suite"] == "gsm8k" and meta["items"] == 2


def test_bench_rejects_bad_ranges(workdir):
    result = CliRunner().invoke(app, ["bench", "--suite", "gsm8k", "--depth", "x", "--out", "o",
                                      "--config", "moa.toml"])
    assert result.exit_code == 2 and "expected a range" in result.output
