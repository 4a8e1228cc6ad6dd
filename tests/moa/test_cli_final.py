"""`moa ask --final` and `moa bench --all-policies/--configured-policy` (issue 17 part 3) over real HTTP."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from veriforge.cli.moa_cmd import app
from veriforge.llm.testing import FakeOpenAIServer


@pytest.fixture
def server(tmp_path, monkeypatch, gsm_reply):
    monkeypatch.chdir(tmp_path)
    with FakeOpenAIServer(replies=gsm_reply) as srv:
        (tmp_path / "moa.toml").write_text(f'[[proposers]]\nmodel = "fake-model@{srv.base_url}"\n')
        yield srv


def _aggregator_calls(srv: FakeOpenAIServer) -> int:
    return sum("final aggregator" in r.body["messages"][0]["content"] for r in srv.chat_requests)


def test_ask_final_policy_from_the_command_line(server):
    result = CliRunner().invoke(app, ["ask", "What is 2 + 2?", "--config", "moa.toml", "--depth", "2",
                                      "--width", "3", "--final", "top", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["answer"] == data["policy_answers"]["top"] == data["ranking"][0]["answer"]
    assert "aggregator" not in data["account"]["roles"] and _aggregator_calls(server) == 0
    bad = CliRunner().invoke(app, ["ask", "What is 2 + 2?", "--config", "moa.toml", "--final", "best"])
    assert bad.exit_code == 2 and "choose one of aggregate, top, vote, weighted_vote" in bad.output


@pytest.mark.parametrize("flag", ["--all-policies", "--configured-policy"])
def test_bench_scores_every_policy_unless_told_not_to(server, flag):
    result = CliRunner().invoke(app, ["bench", "--suite", "gsm8k", "--limit", "2", "--depth", "2", "--width", "2",
                                      "--methods", "rem_moa", "--config", "moa.toml", "--out", "out", "--no-plots",
                                      flag])
    assert result.exit_code == 0, result.output
    row = next(csv.DictReader(open("out/results.csv", encoding="utf-8")))
    if flag == "--all-policies":  # the default: the aggregator runs too, booked apart from the free policies
        assert _aggregator_calls(server) == 2 and row["acc_aggregate"] != ""
        assert float(row["noagg_requests_per_item"]) == float(row["requests_per_item"]) - 1
    else:
        assert _aggregator_calls(server) == 0 and not row.get("acc_aggregate")
        assert float(row["noagg_requests_per_item"]) == float(row["requests_per_item"])
    assert row["acc_top"] != "" and row["acc_weighted_vote"] != ""
