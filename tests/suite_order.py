"""The order the suite's files run in: slowest first (longest-processing-time-first scheduling).

``pytest -n 2 --dist loadfile`` hands whole files to the workers in the order of the collection when
``--no-loadscope-reorder`` is given (the README's test command), and otherwise in the order of the
number of tests per file. Neither says how long a file takes: by test count, files with one long
test (the bundled-task sample, the fork-server tests, the dataset family samples) came last, so one
worker ran them alone at the end while the other had nothing left. Handing out the longest files
first and the many short ones last lets the short ones fill the gaps, so both workers finish close
together. ``durations.json`` holds each file's serial seconds, written by
``benchmarks/suite_durations.py`` from a ``--durations=0`` log; a file it does not list is estimated
from its number of tests (the median seconds per test of the listed files), so a new file is neither
first nor last by accident. Only the order of whole files changes; tests within a file keep theirs.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

DURATIONS = Path(__file__).with_name("durations.json")

T = TypeVar("T")


def load_durations(path: Path = DURATIONS) -> dict[str, float]:
    """``{file node id: serial seconds}`` from ``durations.json``; empty if it is missing or unreadable
    (the suite then runs in the collection's order, never fails for it)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    files = data.get("files", {}) if isinstance(data, dict) else {}
    return {str(k): float(v) for k, v in files.items() if isinstance(v, int | float) and v >= 0}


def file_of(nodeid: str) -> str:
    """The file part of a node id (``tests/x/test_y.py::test_z[p]`` -> ``tests/x/test_y.py``)."""
    return nodeid.split("::", 1)[0]


def estimated_seconds(counts: Mapping[str, int], recorded: Mapping[str, float]) -> dict[str, float]:
    """Seconds per file: the recorded figure, else its number of tests times the median seconds per
    test of the recorded files that were collected (1 s per test if none was)."""
    rates = [recorded[f] / n for f, n in counts.items() if f in recorded and n > 0]
    per_test = statistics.median(rates) if rates else 1.0
    return {f: recorded[f] if f in recorded else per_test * n for f, n in counts.items()}


def slowest_files_first(items: Sequence[T], nodeid: Callable[[T], str],
                        recorded: Mapping[str, float]) -> list[T]:
    """``items`` with whole files reordered slowest first; ties keep the collection's order, and the
    tests of one file keep theirs (module fixtures still run once per file and worker)."""
    counts: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for k, item in enumerate(items):
        f = file_of(nodeid(item))
        counts[f] = counts.get(f, 0) + 1
        first_seen.setdefault(f, k)
    seconds = estimated_seconds(counts, recorded)
    indexed = list(enumerate(items))
    indexed.sort(key=lambda ki: (-seconds[file_of(nodeid(ki[1]))], first_seen[file_of(nodeid(ki[1]))], ki[0]))
    return [item for _k, item in indexed]
