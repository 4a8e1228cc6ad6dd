"""Loaders for the public formats: every layout the issue lists, every container, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from veriforge.moa.bench import DataFormatError, UnknownSuiteError, generate_gsm8k, load_suite, score
from veriforge.moa.bench.generate import generate_records


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_gsm8k_jsonl_and_limit(tmp_path: Path) -> None:
    f = _jsonl(
        tmp_path / "test.jsonl", [{"question": f"q{i}", "answer": f"steps\n#### {i},000"} for i in range(5)]
    )
    items = load_suite("gsm8k", f, limit=3)
    assert [i.answer for i in items] == ["0", "1000", "2000"] and items[0].domain == "math"
    assert items[0].prompt.startswith("q0") and "####" in items[0].prompt


def test_missing_field_names_file_record_and_field(tmp_path: Path) -> None:
    f = _jsonl(
        tmp_path / "bad.jsonl", [{"question": "q", "answer": "#### 1"}, {"question": "q2", "solution": "x"}]
    )
    with pytest.raises(
        DataFormatError, match=r"bad\.jsonl record 2.*missing field 'answer'.*question, solution"
    ):
        load_suite("gsm8k", f)
    with pytest.raises(DataFormatError, match="missing field 'problem'"):
        load_suite("math", f)
    with pytest.raises(DataFormatError, match="not valid JSON"):
        load_suite("gsm8k", _write(tmp_path / "broken.jsonl", '{"question": "q", \n'))
    with pytest.raises(DataFormatError, match="unsupported file type"):
        load_suite("gsm8k", _write(tmp_path / "data.txt", "x"))
    with pytest.raises(DataFormatError, match="no such data file"):
        load_suite("gsm8k", tmp_path / "absent.jsonl")
    with pytest.raises(UnknownSuiteError, match="known: gsm8k"):
        load_suite("gsm9k")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_math_with_nested_boxed_and_math500_answer(tmp_path: Path) -> None:
    f = _jsonl(
        tmp_path / "m.jsonl",
        [
            {
                "problem": "p",
                "solution": r"so $\boxed{\frac{\sqrt{3}}{2}}$",
                "level": "Level 3",
                "type": "Geometry",
            },
            {
                "problem": "p2",
                "solution": "no box",
                "answer": "7",
                "subject": "Algebra",
                "level": 2,
                "unique_id": "u/1",
            },
        ],
    )
    a, b = load_suite("math", f)
    assert (
        a.answer == r"\frac{\sqrt{3}}{2}"
        and a.meta["level"] == "Level 3"
        and b.answer == "7"
        and b.id == "u/1"
    )
    assert score(a, r"\boxed{\dfrac{\sqrt3}{2}}").correct


def test_folio_layouts(tmp_path: Path) -> None:
    f = _jsonl(
        tmp_path / "folio.jsonl",
        [
            {"premises": "All A are B.\nX is A.", "conclusion": "X is B.", "label": "True", "example_id": 1},
            {"premises": ["Some A are B.", "X is A."], "conclusion": "X is B.", "label": "Unknown"},
            {
                "id": "FOLIO_dev_3",
                "context": "c",
                "question": "Is X B?",
                "options": ["A) True", "B) False", "C) Uncertain"],
                "answer": "B",
            },
        ],
    )
    items = load_suite("folio", f)
    assert [i.answer for i in items] == ["True", "Uncertain", "False"]
    assert "All A are B.\nX is A." in items[0].question and items[2].id == "FOLIO_dev_3"
    with pytest.raises(DataFormatError, match="label 'Maybe'"):
        load_suite(
            "folio", _jsonl(tmp_path / "f2.jsonl", [{"premises": "p", "conclusion": "c", "label": "Maybe"}])
        )


def test_prontoqa_layouts(tmp_path: Path) -> None:
    original = tmp_path / "345hop_random_true.json"
    original.write_text(
        json.dumps(
            {
                "example1": {
                    "in_context_example0": {},
                    "test_example": {
                        "question": "Every wumpus is bitter. Max is a wumpus.",
                        "query": "True or false: Max is bitter.",
                        "chain_of_thought": [],
                        "answer": "True",
                    },
                },
                "example2": {
                    "test_example": {
                        "question": "t",
                        "query": "True or false: Max is not bitter.",
                        "answer": "False",
                    }
                },
            }
        )
    )
    items = load_suite("prontoqa", original)
    assert [(i.id, i.answer) for i in items] == [("example1", "True"), ("example2", "False")]
    assert "Max is bitter." in items[0].question
    logiclm = tmp_path / "dev.json"
    logiclm.write_text(
        json.dumps(
            [{"id": "P1", "context": "c", "question": "q", "options": ["A) True", "B) False"], "answer": "B"}]
        )
    )
    assert load_suite("prontoqa", logiclm)[0].answer == "False"
    with pytest.raises(DataFormatError, match="Uncertain' is not one of True, False"):
        load_suite(
            "prontoqa",
            _jsonl(tmp_path / "p.jsonl", [{"context": "c", "question": "q", "answer": "Uncertain"}]),
        )


def test_mmlu_json_csv_and_parquet(tmp_path: Path) -> None:
    row = {"question": "2+2?", "subject": "math", "choices": ["3", "4", "5", "6"], "answer": 1}
    assert load_suite("mmlu", _jsonl(tmp_path / "m.jsonl", [row]))[0].answer == "B"
    headerless = _write(
        tmp_path / "abstract_algebra_test.csv",
        '"What is 2+2?",3,4,5,6,B\n"Sky color?",red,blue,green,black,B\n',
    )
    items = load_suite("mmlu", headerless)
    assert len(items) == 2 and items[0].answer == "B" and "B. 4" in items[0].question
    assert items[0].meta["choices"] == ["3", "4", "5", "6"]
    header = _write(tmp_path / "h.csv", "question,A,B,C,D,answer\nWhich?,w,x,y,z,D\n")
    assert load_suite("mmlu", header)[0].answer == "D"
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "test-00000-of-00001.parquet")
    assert load_suite("mmlu", tmp_path / "test-00000-of-00001.parquet")[0].answer == "B"
    with pytest.raises(DataFormatError, match="does not name one of 4 choices"):
        load_suite("mmlu", _jsonl(tmp_path / "bad.jsonl", [{**row, "answer": 7}]))


def test_mmlu_pro_letter_or_index(tmp_path: Path) -> None:
    opts = [str(i) for i in range(10)]
    f = _jsonl(
        tmp_path / "p.jsonl",
        [
            {
                "question_id": 1,
                "question": "q",
                "options": opts,
                "answer": "I",
                "answer_index": 8,
                "category": "math",
            },
            {"question_id": 2, "question": "q", "options": opts, "answer_index": 2},
        ],
    )
    a, b = load_suite("mmlu_pro", f)
    assert (a.answer, b.answer, a.id) == ("I", "C", "1") and "J. 9" in a.question


def test_commonsenseqa_both_layouts_and_strategyqa(tmp_path: Path) -> None:
    items = load_suite("commonsenseqa")
    assert {i.answer for i in items} <= set("ABCDE") and all(len(i.meta["choices"]) == 5 for i in items)
    with pytest.raises(DataFormatError, match=r"missing field 'stem'"):
        load_suite("csqa", _jsonl(tmp_path / "c.jsonl", [{"question": {"choices": []}, "answerKey": "A"}]))
    f = _jsonl(
        tmp_path / "s.jsonl",
        [{"qid": "x", "question": "q?", "answer": True}, {"question": "r?", "answer": "no"}],
    )
    assert [i.answer for i in load_suite("strategyqa", f)] == ["True", "False"]


def test_code_formats(tmp_path: Path) -> None:
    he = load_suite("humaneval")[0]
    assert he.meta["entry_point"] == "count_vowels" and "def check" in he.meta["test"]
    mb = load_suite("mbpp")
    assert mb[0].meta["entry_point"] == "list_product" and mb[-1].meta["test_setup_code"] == "SCALE = 10"
    with pytest.raises(DataFormatError, match="missing field 'entry_point'"):
        load_suite(
            "humaneval",
            _jsonl(
                tmp_path / "h.jsonl",
                [{"task_id": "t", "prompt": "p", "canonical_solution": "s", "test": "t"}],
            ),
        )


def test_duplicate_ids_rejected(tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "d.jsonl", [{"id": "x", "question": "q", "answer": "#### 1"}] * 2)
    with pytest.raises(DataFormatError, match="share the id 'x'"):
        load_suite("gsm8k", f)


def test_generator_is_deterministic_and_answers_are_computed() -> None:
    a, b = generate_gsm8k(20, seed=3), generate_gsm8k(20, seed=3)
    assert a == b and generate_gsm8k(20, seed=4) != a and len({i.id for i in a}) == 20
    for rec in generate_records(50, seed=1):  # replay each worked step and check the final number
        steps = rec["answer"].splitlines()
        value = None
        for step in steps[:-1]:
            expr, result = step.split(" = ")
            assert eval(expr, {"__builtins__": {}}) == int(result)
            value = int(result)
        assert steps[-1] == f"#### {value}"
    assert score(a[0], f"So the total is {a[0].answer}.").correct
