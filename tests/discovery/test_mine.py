"""Mining the fixture repositories: the right candidates, and a reason for every other file."""

from pathlib import Path

import pytest

from veriforge.discovery.mine import MineConfig, RepoIndex, mine_repository

FIXTURES = Path(__file__).parent / "fixtures"


def _mine(name: str, **kw):
    res = mine_repository(FIXTURES / name, **kw)
    return {c.path: c for c in res.candidates}, {s.path: s.reason for s in res.skipped}


def test_stats_repo_candidates_and_skip_reasons():
    cands, skipped = _mine("stats_analysis")
    assert set(cands) == {
        "scripts/compare_treatments.py",
        "notebooks/site_summary.ipynb",
        "scripts/standardized_heights.py",
    }
    c = cands["scripts/compare_treatments.py"]
    assert c.entry == "main_guard" and c.datasets == ["data/plant_growth.csv"]
    assert [w["value"] for w in c.writes] == ["results/treatment_summary.csv", "results/test_statistics.json"]
    nb = cands["notebooks/site_summary.ipynb"]
    assert nb.kind == "notebook" and nb.datasets == ["data/plant_growth.csv", "data/site_metadata.csv"]
    assert "# (IPython) %matplotlib inline" in nb.source
    assert "not in the repository" in skipped["scripts/analysis_2019.py"]
    assert "pilot_2019.csv" in skipped["scripts/analysis_2019.py"]
    assert skipped["scripts/explore.py"].startswith("writes no outputs")
    # the repository's own growthlib package is vendored, and its load/save helpers count as I/O
    heights = cands["scripts/standardized_heights.py"]
    assert [m["dest"] for m in heights.local_modules] == ["growthlib/__init__.py", "growthlib/utils.py"]
    assert heights.helper_io == {"load_trial": [[0, "path", "read"]], "save_table": [[1, "path", "write"]]}
    assert heights.datasets == ["data/plant_growth.csv"]
    assert [w["value"] for w in heights.writes] == ["results/standardized_heights.csv"]
    assert skipped["tests/test_utils.py"] == "test code"
    assert "no entry point" in skipped["growthlib/utils.py"]


def test_ml_and_sim_repos():
    cands, skipped = _mine("ml_eval")
    assert set(cands) == {"evaluate_classifier.py", "plot_feature_distributions.py"}
    assert cands["evaluate_classifier.py"].entry == "top_level"
    assert skipped["risk_table_generated.py"].startswith("oversized")
    cands, skipped = _mine("numpy_sim")
    sim = cands["simulate_diffusion.py"]
    assert sim.datasets == ["data/initial_temperature.txt", "data/params.json"]
    assert skipped["setup.py"].startswith("packaging")
    assert skipped["check_stability.py"].startswith("writes no outputs")


def test_size_limit_is_configurable():
    _, skipped = _mine("ml_eval", cfg=MineConfig(max_source_bytes=500))
    assert skipped["evaluate_classifier.py"].startswith("oversized")


def test_model_filter_can_veto():
    cands, skipped = _mine(
        "numpy_sim", model_filter=lambda c: (c.path != "buggy_variant.py", "not an analysis")
    )
    assert "buggy_variant.py" not in cands and skipped["buggy_variant.py"] == "model filter: not an analysis"


@pytest.mark.parametrize(
    ("value", "script_dir", "expected"),
    [
        ("/home/alice/project/data/params.json", "", "data/params.json"),
        ("/home/alice/project/data", "", "data"),
        ("../data/params.json", "sub", "data/params.json"),
        ("data/nope.json", "", None),
        ("https://example.org/data/params.json", "", None),
    ],
)
def test_locate(value, script_dir, expected):
    assert RepoIndex(FIXTURES / "numpy_sim").locate(value, script_dir) == expected
