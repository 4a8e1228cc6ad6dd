"""The suite hands its slowest files to the xdist workers first (tests/suite_order.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("suite_order_under_test", Path(__file__).with_name("suite_order.py"))
order = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(order)


def test_whole_files_go_slowest_first_and_keep_their_tests_in_order() -> None:
    items = ["a.py::t1", "a.py::t2", "b.py::t1", "c.py::t1", "c.py::t2[x]", "c.py::t2[y]"]
    recorded = {"a.py": 2.0, "b.py": 30.0, "c.py": 9.0}
    assert order.slowest_files_first(items, str, recorded) == [
        "b.py::t1", "c.py::t1", "c.py::t2[x]", "c.py::t2[y]", "a.py::t1", "a.py::t2"]


def test_ties_and_an_empty_table_keep_the_collection_order() -> None:
    items = ["a.py::t1", "b.py::t1", "a.py::t2", "c.py::t1"]
    # a file's tests stay together even if the collection interleaved them
    assert order.slowest_files_first(items, str, {}) == ["a.py::t1", "a.py::t2", "b.py::t1", "c.py::t1"]
    assert order.slowest_files_first(items, str, {"a.py": 1.0, "b.py": 1.0, "c.py": 1.0}) == [
        "a.py::t1", "a.py::t2", "b.py::t1", "c.py::t1"]


def test_an_unrecorded_file_is_estimated_from_its_number_of_tests() -> None:
    # recorded: 10 s for 5 tests and 3 s for 1 test -> median 2.5 s per test
    counts = {"slow.py": 5, "one.py": 1, "new_big.py": 20, "new_small.py": 1}
    seconds = order.estimated_seconds(counts, {"slow.py": 10.0, "one.py": 3.0, "gone.py": 99.0})
    assert seconds == {"slow.py": 10.0, "one.py": 3.0, "new_big.py": 50.0, "new_small.py": 2.5}
    items = [f"{f}::t{k}" for f, n in counts.items() for k in range(n)]
    files = list(dict.fromkeys(order.file_of(i) for i in
                               order.slowest_files_first(items, str, {"slow.py": 10.0, "one.py": 3.0})))
    assert files == ["new_big.py", "slow.py", "one.py", "new_small.py"]


def test_the_table_is_read_leniently(tmp_path: Path) -> None:
    table = tmp_path / "durations.json"
    table.write_text(json.dumps({"files": {"a.py": 4, "b.py": 1.5, "bad.py": "x", "neg.py": -1}}))
    assert order.load_durations(table) == {"a.py": 4.0, "b.py": 1.5}
    table.write_text("{not json")
    assert order.load_durations(table) == {}
    assert order.load_durations(tmp_path / "missing.json") == {}


def test_the_suite_runs_in_that_order(request: pytest.FixtureRequest) -> None:
    """The root conftest applied the order to this very session (collection order is xdist's input)."""
    recorded = order.load_durations()
    assert recorded, "tests/durations.json is missing or empty"
    files = list(dict.fromkeys(order.file_of(item.nodeid) for item in request.session.items))
    counts: dict[str, int] = {}
    for item in request.session.items:
        counts[order.file_of(item.nodeid)] = counts.get(order.file_of(item.nodeid), 0) + 1
    seconds = order.estimated_seconds(counts, recorded)
    assert [seconds[f] for f in files] == sorted((seconds[f] for f in files), reverse=True)


def test_the_readme_command_keeps_that_order_under_xdist() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = readme.split("<!-- ci:test -->", 1)[1].split("```", 2)[1]
    assert "--dist loadfile" in block and "--no-loadscope-reorder" in block, block
