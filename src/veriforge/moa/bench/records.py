"""Reading dataset files as they ship: JSONL, JSON (a list, or an object of records), CSV, parquet.

The public benchmarks are distributed in all four (GSM8K and HumanEval as JSONL, FOLIO and
CommonsenseQA as JSONL, ProntoQA and Logic-LM's sets as JSON, the original MMLU as header-less CSV,
Hugging Face mirrors as parquet). Reading is separate from interpreting fields so every suite gets
every container format for free. Parquet needs ``pyarrow``; without it the error says so.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from veriforge.moa.bench.errors import DataFormatError

__all__ = ["Record", "read_records", "require"]

Record = dict[str, Any]


def read_records(path: str | Path, *, csv_header: bool | None = None) -> list[Record]:
    """All records of ``path`` in file order, each a dict; the format is chosen by the suffix.

    JSON may hold a list of records, an object with a list under ``data``/``examples``/``rows``, or
    an object whose values are records (ProntoQA's ``{"example1": {...}}``; each record then gets its
    key as ``_key``). CSV: ``csv_header=None`` detects a header row; header-less rows get the keys
    ``"0"``, ``"1"``, ... .
    """
    p = Path(path)
    if not p.is_file():
        raise DataFormatError(f"{p}: no such data file")
    suffix = "".join(p.suffixes[-2:]) if p.suffix == ".gz" else p.suffix
    readers = {".jsonl": _jsonl, ".ndjson": _jsonl, ".json": _json, ".csv": _csv, ".parquet": _parquet}
    reader = readers.get(suffix.lower())
    if reader is None:
        raise DataFormatError(f"{p}: unsupported file type {suffix!r} (use one of {', '.join(readers)})")
    if reader is _csv:
        return _csv(p, csv_header)
    return reader(p)


def _jsonl(p: Path) -> list[Record]:
    out: list[Record] = []
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(f"{p}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(value, dict):
                raise DataFormatError(
                    f"{p}:{lineno}: expected a JSON object per line, got {type(value).__name__}"
                )
            out.append(value)
    return out


def _json(p: Path) -> list[Record]:
    try:
        value = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(value, dict):
        for key in ("data", "examples", "rows", "items"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
        else:
            if value and all(isinstance(v, dict) for v in value.values()):
                return [{**v, "_key": k} for k, v in value.items()]
            raise DataFormatError(f"{p}: a JSON object must hold a list of records or map ids to records")
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise DataFormatError(f"{p}: expected a JSON list of objects")
    return value


def _csv(p: Path, header: bool | None) -> list[Record]:
    with p.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    rows = [r for r in rows if r]
    if not rows:
        return []
    if header is None:
        first = [c.strip().lower() for c in rows[0]]
        header = "question" in first or "answer" in first
    if header:
        keys = [c.strip() for c in rows[0]]
        return [dict(zip(keys, r, strict=False)) for r in rows[1:]]
    return [{str(i): c for i, c in enumerate(r)} for r in rows]


def _parquet(p: Path) -> list[Record]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataFormatError(f"{p}: reading parquet needs pyarrow (pip install pyarrow)") from None
    return [dict(r) for r in pq.read_table(p).to_pylist()]


def require(
    record: Mapping[str, Any], field: str, *, where: str, suite: str, types: tuple[type, ...] = ()
) -> Any:
    """``record[field]``, or a :class:`DataFormatError` naming the suite, the record and the missing field."""
    if field not in record or record[field] is None:
        present = ", ".join(sorted(k for k in record if not k.startswith("_"))) or "none"
        raise DataFormatError(
            f"{where}: not a {suite} record: missing field {field!r} (fields present: {present})"
        )
    value = record[field]
    if types and not isinstance(value, types):
        names = " or ".join(t.__name__ for t in types)
        raise DataFormatError(
            f"{where}: {suite} field {field!r} should be {names}, got {type(value).__name__}"
        )
    return value
