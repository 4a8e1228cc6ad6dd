"""Verdict parsing: every common shape is read; ambiguous or missing verdicts are failures."""

from __future__ import annotations

import pytest

from veriforge.rank.verdicts import normalize_verdict, parse_verdict, regex_parser


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[A]]", "A"),
        ("Both have merit, but the second is rigorous.\n\n[[B]]", "B"),
        ("[[C]]", "tie"),
        ("[[tie]]", "tie"),
        ('{"winner": "Response B", "reason": "correct"}', "B"),
        ('Here is my judgement:\n```json\n{"verdict": "A"}\n```', "A"),
        ('{"better": 2}', "B"),
        ("Response A is better.", "A"),
        ("Assistant B is clearly better than assistant A.", "B"),
        ("Final verdict: **A**", "A"),
        ("The better response is B", "B"),
        ("It is a tie.", "tie"),
        ("Both responses are equally good.", "tie"),
        ("B", "B"),
        ("(A)", "A"),
    ],
)
def test_common_shapes_are_read(text, expected):
    parsed = parse_verdict(text)
    assert parsed.ok and parsed.verdict == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("I cannot decide between these.", "no verdict"),
        ("[[A]] would be my answer if ... but actually [[B]]", "ambiguous"),
        ("Response A is better at style, but Response B is better overall.", "ambiguous"),
        ('{"winner": "A"} ... {"winner": "B"}', "ambiguous"),
        ("this data is better; the choice is a hard one", "no verdict"),  # lower-case 'a' is no verdict
        ("Response B is not better.", "no verdict"),
    ],
)
def test_unclear_replies_are_failures_with_a_reason(text, why):
    parsed = parse_verdict(text)
    assert parsed.verdict is None and why in parsed.error


def test_normalize_and_custom_pattern():
    assert normalize_verdict("assistant_b") == "B"
    assert normalize_verdict("Draw") == "tie"
    assert normalize_verdict("maybe") is None
    rule = regex_parser(r"WINNER=(\w+)")
    assert rule("blah WINNER=A").verdict == "A"
    assert rule("WINNER=A WINNER=B").verdict is None
    assert "not a verdict" in rule("WINNER=banana").error
    assert rule("no marker").verdict is None
    with pytest.raises(ValueError):
        regex_parser(r"WINNER=\w+")
