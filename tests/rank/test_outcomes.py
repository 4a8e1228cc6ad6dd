"""Outcome: validation, frames, verifier signals kept apart from reviewer opinions."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from veriforge.rank.outcomes import Judgement, Outcome


def test_score_and_winner_follow_the_verdict():
    assert Outcome(a="x", b="y", winner="a").score_a == 1.0
    assert Outcome(a="x", b="y", winner="b").score_a == 0.0
    tie = Outcome(a="x", b="y", winner="tie")
    assert tie.score_a == 0.5 and tie.winner_id is None and not tie.decisive
    assert Outcome(a="x", b="y", winner="b").winner_id == "y"


def test_invalid_outcomes_are_refused():
    with pytest.raises(ValidationError):
        Outcome(a="x", b="x", winner="a")
    with pytest.raises(ValidationError):
        Outcome(a="x", b="y", winner="a", failed=True)  # a failure never carries a win
    with pytest.raises(ValueError):
        Outcome.from_score("x", "y", 0.7)


def test_flipped_swaps_items_winner_and_judgement_frames():
    j = Judgement(order="ab", shown_first="x", raw="[[A]]", verdict="A", winner="a")
    o = Outcome(a="x", b="y", winner="a", judgements=(j,))
    f = o.flipped()
    assert (f.a, f.b, f.winner, f.winner_id) == ("y", "x", "b", "x")
    assert f.judgements[0].order == "ba" and f.judgements[0].winner == "b"
    assert f.judgements[0].shown_first == "x"  # what the judge saw does not change


def test_verifier_outcomes_are_marked_as_such():
    o = Outcome.from_verifier("p1", "p2", a_passed=False, b_passed=True)
    assert o.source == "verifier" and o.winner == "b" and "failed" in o.reason
    assert Outcome.from_verifier("p1", "p2", True, True).winner == "tie"


def test_json_round_trip_keeps_everything():
    j = Judgement(order="ba", shown_first="y", raw="Response B is better", verdict="B", winner="a")
    o = Outcome(a="x", b="y", winner="a", judgements=(j, j), meta={"layer": 2})
    back = Outcome.from_json(o.to_json())
    assert back == o and back.consistent is True
