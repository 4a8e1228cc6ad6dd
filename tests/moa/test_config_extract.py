"""Config loading (TOML, [moa] table, clear errors) and the default answer extractor."""

from __future__ import annotations

import pytest

from veriforge.moa.config import MoAConfig, load_config
from veriforge.moa.errors import MoAConfigError
from veriforge.moa.extract import as_extracted, default_extractor, normalize_answer


def test_toml_round_trip(tmp_path):
    path = tmp_path / "moa.toml"
    path.write_text(
        'method = "moa"\ndepth = 4\nwidth = 5\n\n[[proposers]]\nname = "a"\nmodel = "scripted:x.jsonl"\n'
        'temperature = 0.3\n\n[[proposers]]\nname = "b"\nsystem = "You are terse."\n\n'
        '[reviewer]\nbudget = "swiss"\nrounds = 2\nrating = "elo"\n\n[routing]\ntop_m = 3\nfailed_f = 2\n'
    )
    cfg = load_config(path)
    assert (cfg.method, cfg.depth, cfg.layer_width) == ("moa", 4, 5)
    assert cfg.reviewer.budget == "swiss" and cfg.reviewer.rounds == 2 and cfg.reviewer.rating == "elo"
    agents = cfg.layer_agents()
    assert [a.name for a in agents] == ["a", "b", "a#1", "b#1", "a#2"]
    assert agents[1].system == "You are terse." and agents[2].temperature == 0.3
    # The aggregator defaults to the first proposer's model, deterministic.
    assert cfg.aggregator_agent().model == "scripted:x.jsonl" and cfg.aggregator_agent().temperature == 0.0


def test_moa_table_and_errors(tmp_path):
    path = tmp_path / "v.toml"
    path.write_text('[moa]\nmethod = "single"\n')
    assert load_config(path).method == "single"
    path.write_text('[moa]\nmethod = "magic"\n')
    with pytest.raises(MoAConfigError, match="method"):
        load_config(path)
    path.write_text('depth = 2\n[routing]\ntop_mm = 3\n')
    with pytest.raises(MoAConfigError, match=r"routing\.top_mm"):
        load_config(path)
    with pytest.raises(MoAConfigError, match="not found"):
        load_config(tmp_path / "missing.toml")
    assert MoAConfig().replace(depth=5).depth == 5


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Let me think. 3 + 4 = 7.\n#### 1,234", "1234"),
        ("so \\boxed{\\frac{1}{2}} is it", "\\frac{1}{2}"),
        ("First 12 apples, then 5 more.\nAnswer: 17.", "17"),
        ("The final answer is 3.50", "3.5"),
        ("We get 10, then 20, so 30 in total", "30"),
        ("Therefore the answer is [[Paris]] clearly", "paris"),
        ("No digits here\n\nParis", "paris"),
        ("Answer: 8 apples, not 5", "8 apples, not 5"),
    ],
)
def test_default_extractor(text, answer):
    got = default_extractor(text)
    assert got.parsed and got.answer == answer


def test_extractor_failures_are_reported():
    assert default_extractor("   \n").parsed is False
    assert as_extracted(None).parsed is False and as_extracted("B").answer == "B"
    assert normalize_answer(" 1,000.0. ") == "1000"
