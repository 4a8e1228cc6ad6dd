"""Answer extraction on tricky model outputs, one block per domain (issue 7)."""

from __future__ import annotations

import pytest

from veriforge.moa.bench import extract_answer
from veriforge.moa.bench.answers import latex_equal, normalize_latex, numbers_equal


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Adding up, 40 + 2 = 42.\n#### 42", "42"),
        ("So she pays 3 * 411 = 1233 and the answer is $1,234.", "1234"),
        ("First 12 apples, then 7 more, giving 19 apples in total.", "19"),
        ("The temperature drops to -11 degrees.", "-11"),
        ("Each piece is 1.20 meters.", "1.2"),
        ("The answer is −12", "-12"),
        ("Final answer: 1,000,000.", "1000000"),
        ("Total is \\boxed{18} dollars", "18"),
        ("#### 1,026", "1026"),
        ("Answer: 5 (we had 3 + 2 = 5). Check: 2 + 3 = 5", "5"),
    ],
)
def test_gsm8k_numbers(text: str, expected: str) -> None:
    assert extract_answer("gsm8k", text) == expected


def test_gsm8k_marker_beats_later_numbers_and_nothing_is_a_parse_failure() -> None:
    assert extract_answer("gsm8k", "#### 7\nCheck: 3 + 4 = 7, and 10 - 3 = 7 with 100 left") == "7"
    assert extract_answer("gsm8k", "I do not know.") is None
    assert (
        numbers_equal("1,234.50", "1234.5")
        and numbers_equal("$7.", "7")
        and not numbers_equal("0.333", "1/3")
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"Thus $x = \boxed{\frac{1}{2}}$.", r"\frac{1}{2}"),
        (r"first \boxed{3}, corrected: \boxed{\frac{\sqrt{3}}{2}}", r"\frac{\sqrt{3}}{2}"),
        (r"the value is \boxed 5$", "5"),
        (r"so \boxed{\left(4, 2\right)}", r"\left(4, 2\right)"),
        ("The final answer is $25\\pi$.", "25\\pi"),
        ("No box, so 1/6 it is: the probability is 1/6", "1/6"),
    ],
)
def test_math_extraction(text: str, expected: str) -> None:
    assert extract_answer("math", text) == expected


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("1/2", "0.5"),
        (r"\frac12", "0.5"),
        (r"\dfrac{1}{2}", r"\frac{1}{2}"),
        (r"2\sqrt{3}", r"\sqrt{12}"),
        (r"2\sqrt3", r"\sqrt{12}"),
        ("(4,2)", r"\left( 4, 2 \right)"),
        ("x = 5", "5"),
        (r"720^\circ", "720"),
        (r"\frac{\pi}{2}", r"\pi/2"),
        ("2x+2", "2(x+1)"),
        (r"5\text{ cm}", "5"),
        ("x+3", "3+x"),
        ("-\\frac{3}{4}", "-0.75"),
    ],
)
def test_math_equivalent(a: str, b: str) -> None:
    assert latex_equal(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("1/3", "0.333"),
        ("(1,2)", "[1,2]"),
        ("(1,2)", "(1,2,3)"),
        ("3", "4"),
        (r"\sqrt{2}", "1.414"),
        ("", "0"),
        ('__import__("os").system("true")', "0"),
        ("2^{100000}", "1"),
    ],
)
def test_math_not_equivalent_and_never_executes_text(a: str, b: str) -> None:
    assert not latex_equal(a, b)


def test_normalize_latex_rules() -> None:
    assert normalize_latex(r"$\dfrac{1}{2}$") == r"\frac{1}{2}"
    assert normalize_latex(r"\frac{\pi}2") == r"\frac{\pi}{2}"
    assert normalize_latex("0.50") == "0.5"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Based on the premises, the conclusion is uncertain.", "Uncertain"),
        ("Premise 2 says otherwise, so the conclusion is not true.", "False"),
        ("**True**", "True"),
        ("Is it True, False, or Uncertain? Step 1: A is true. So the answer is: Uncertain", "Uncertain"),
        ("From the premises it cannot be determined whether Ines plays the violin.", "Uncertain"),
        ("It is not necessarily true that she plays.", "Uncertain"),
        ("It is not false that Pip eats acorns.", "True"),
        ("Premise 1 is true and premise 2 is true, therefore the conclusion is False.", "False"),
        ("Answer: neither true nor false", "Uncertain"),
        ("The conclusion is False.\nWait, re-reading premise 3, the answer is True", "True"),
    ],
)
def test_logic_verdicts(text: str, expected: str) -> None:
    assert extract_answer("folio", text) == expected


def test_logic_parse_failure_and_yes_no_only_for_strategyqa() -> None:
    assert extract_answer("folio", "I would need more context to say.") is None
    assert extract_answer("folio", "Yes.") is None
    assert extract_answer("strategyqa", "Penguins cannot fly. So no.") == "False"
    assert extract_answer("strategyqa", "Yes — a piano has 88 keys.") == "True"


CHOICES = ["Paris", "London", "Berlin", "Madrid"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(B)", "B"),
        ("Answer: B", "B"),
        ("**B**", "B"),
        ("The correct option is B.", "B"),
        ("B.", "B"),
        ("A good guess would be Paris, but the answer is (C)", "C"),
        ("I think the capital is Berlin.", "C"),
        ("Reasoning about A and B.\n\nFinal answer: Madrid", "D"),
        (r"\boxed{C}", "C"),
        ("Option D is right.", "D"),
    ],
)
def test_choice_letters(text: str, expected: str) -> None:
    assert extract_answer("mmlu", text, choices=CHOICES) == expected


def test_choice_rejects_articles_and_out_of_range_letters() -> None:
    assert extract_answer("mmlu", "A capital city is a seat of government.", choices=CHOICES) is None
    assert extract_answer("mmlu", "Answer: F", choices=CHOICES) is None
    assert extract_answer("mmlu_pro", "The answer is (F)", choices=[str(i) for i in range(10)]) == "F"


def test_code_extraction_prefers_the_last_python_block() -> None:
    text = (
        "Draft:\n```python\ndef f():\n    return 1\n```\n"
        "Fixed:\n```python\ndef f():\n    return 2\n```\nDone."
    )
    assert extract_answer("humaneval", text) == "def f():\n    return 2"
    assert extract_answer("code", "Here it is:\ndef g(x):\n    return x + 1\nThat should work.") == (
        "def g(x):\n    return x + 1"
    )
    assert extract_answer("mbpp", "```python\ndef h():\n    return 3\n") == "def h():\n    return 3"
    assert extract_answer("mbpp", "I cannot solve this.") is None


def test_unknown_names_are_clear_errors() -> None:
    from veriforge.moa.bench import UnknownSuiteError

    with pytest.raises(UnknownSuiteError, match="gsm8k"):
        extract_answer("astrology", "42")
