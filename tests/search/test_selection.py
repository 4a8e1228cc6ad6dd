"""Selection formulas, widening and value scales against their textbook definitions."""

from __future__ import annotations

import math

import pytest

from veriforge.search.config import MCTSConfig, SearchConfig
from veriforge.search.errors import SearchConfigError
from veriforge.search.scale import Scale
from veriforge.search.selection import MinMax, max_children, puct_score, uct_score


def test_uct_matches_formula():
    # Q/n + c·sqrt(ln N / n)
    assert uct_score(3.0, 4, 20, c=1.5) == pytest.approx(3.0 / 4 + 1.5 * math.sqrt(math.log(20) / 4))
    assert uct_score(0.0, 0, 10) == math.inf


def test_puct_matches_formula():
    # Q + c·P·sqrt(N)/(1+n)
    assert puct_score(0.6, 0.25, 3, 16, c=2.0) == pytest.approx(0.6 + 2.0 * 0.25 * 4 / 4)


def test_uct_and_puct_rank_differently():
    # A rarely visited child wins under UCT's log term; PUCT follows the prior instead.
    assert uct_score(0.5 * 1, 1, 100, c=1.0) > uct_score(0.6 * 30, 30, 100, c=1.0)
    assert puct_score(0.5, 0.01, 1, 100, c=1.0) < puct_score(0.6, 0.9, 30, 100, c=1.0)


@pytest.mark.parametrize(("visits", "k", "alpha", "expected"), [
    (1, 1.0, 0.5, 1), (2, 1.0, 0.5, 2), (4, 1.0, 0.5, 2), (5, 1.0, 0.5, 3), (9, 1.0, 0.5, 3),
    (10, 1.0, 0.5, 4), (10, 2.0, 0.5, 7), (10, 1.0, 0.0, 1), (10, 1.0, 1.0, 10), (0, 1.0, 0.5, 0),
])
def test_progressive_widening_counts(visits, k, alpha, expected):
    assert max_children(visits, k, alpha) == expected


def test_minmax_normalises_to_unit_interval():
    mm = MinMax()
    assert mm.normalise(3.0) == 0.5
    for v in (2.0, 6.0, 4.0):
        mm.update(v)
    assert (mm.normalise(2.0), mm.normalise(4.0), mm.normalise(6.0)) == (0.0, 0.5, 1.0)


def test_scales():
    log = Scale("log_objective")
    assert log.value(2.0) > log.value(4.0)
    assert log.quantity_of(log.value(3.5)) == pytest.approx(3.5)
    assert log.relative_regression(1.3, 1.0) == pytest.approx(0.3)
    assert log.improvement_factor(0.1, 1.0) == pytest.approx(10.0)
    reward = Scale("reward")
    assert reward.value(0.9) > reward.value(0.1)
    assert reward.relative_regression(0.5, 1.0) == pytest.approx(0.5)
    assert reward.tied(1.0, 0.99, 0.02) and not reward.tied(1.0, 0.9, 0.02)


def test_config_validation():
    with pytest.raises(SearchConfigError, match="budget"):
        SearchConfig(max_evaluations=None, max_seconds=None)
    with pytest.raises(SearchConfigError, match="selection"):
        MCTSConfig(selection="ucb")
    with pytest.raises(SearchConfigError):
        SearchConfig(value_mode="speed")
    ident = SearchConfig(max_evaluations=5).to_json(identity=True)
    assert "max_evaluations" not in ident and ident["guardrails"]["regression_tolerance"] == 0.25
