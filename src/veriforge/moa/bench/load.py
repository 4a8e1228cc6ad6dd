"""``load_suite``: items of a suite from a local file in its public format, or the bundled sample.

No downloads, ever (architecture principle 5): the public datasets are read from files the user
already has; without a file the small bundled sample (``veriforge/data/moa/<suite>.jsonl``, original
items written in each public format) is used, so tests and demos run offline.
"""

from __future__ import annotations

from pathlib import Path

from veriforge.moa.bench.errors import DataFormatError
from veriforge.moa.bench.records import read_records
from veriforge.moa.bench.suites import get_suite
from veriforge.moa.bench.types import Item

__all__ = ["bundled_path", "load_suite"]


def bundled_path(suite: str) -> Path:
    """Where the bundled sample of ``suite`` lives (package data)."""
    return Path(__file__).resolve().parents[2] / "data" / "moa" / f"{get_suite(suite).name}.jsonl"


def load_suite(suite: str, path: str | Path | None = None, limit: int | None = None) -> list[Item]:
    """Items of ``suite`` from ``path`` (JSONL/JSON/CSV/parquet), or the bundled sample when ``None``.

    ``limit`` keeps the first ``limit`` items (file order, so runs are comparable). A record missing a
    field raises :class:`DataFormatError` naming the file, the record number and the field; duplicate
    ids raise too (results are keyed by id).
    """
    spec = get_suite(suite)
    source = Path(path) if path is not None else bundled_path(spec.name)
    records = read_records(source)
    if limit is not None:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        records = records[:limit]
    items = [spec.convert(rec, i, f"{source} record {i + 1}") for i, rec in enumerate(records)]
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        if item.id in seen:
            raise DataFormatError(
                f"{source}: records {seen[item.id] + 1} and {i + 1} share the id {item.id!r}"
            )
        seen[item.id] = i
    return items
