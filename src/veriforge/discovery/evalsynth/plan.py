"""Plan an evaluator from the gold outputs: which kind of comparison, which metric, which thresholds.

The plan is decided *before* any code is written (and stored in ``task.json`` as ``eval_plan``),
so a reviewer can read what "correct" means for a task without reading code. Decisions, and
why:

* **Kind** comes from the file's extension, confirmed by its content (a ``.txt`` holding one
  number is a ``scalar``; a ``.csv`` that does not parse is ``text``).
* **Tables**: columns are matched by name (case-insensitive, any order) because column order is
  an artefact of how a DataFrame was built, not of the science. Extra columns are allowed (an
  analyst may add a helpful column) unless the plan says otherwise. Rows are ``unordered`` unless
  the gold program sorts its output (``sort_values``, ``sorted``, ``nlargest``, ``rank`` ...):
  then order is part of the answer. Unordered rows are aligned by a unique key (text or integer
  columns that identify rows in the gold), else by a canonical sort. A leading pandas index column
  (empty header, values 0..n-1) is ignored.
* **Tolerances**: ``rtol=1e-4, atol=1e-8`` by default: loose enough for float formatting and
  summation order, tight enough that any change of the analysis shows.
* **Figures** (images whose plot data the recorder captured, :mod:`veriforge.discovery.plotrec`):
  the plotted data are compared (series, bar categories, intervals) with the table tolerances;
  style never matters and SSIM is only reported. A recorded figure without data is refused.
  Plotly figures (written with ``write_json``/``write_html``/``write_image``, or displayed and saved
  as ``figure_<n>.json`` by the miner) are recorded from the figure object and judged the same way,
  whatever the file's extension; no pixel metric (no renderer is assumed).
* **Images** not drawn by matplotlib: same size within 2 px, mean SSIM ≥ 0.95 on grayscale.
* **Text**: token-for-token with numeric tolerance for short text (≤ 400 tokens); token-overlap
  F1 ≥ 0.9 for longer prose.
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

from veriforge.discovery.evalsynth import runtime
from veriforge.discovery.plotrec import PLOTDATA_DIR, is_plotdata, is_plotly, load_plotdata, series_count

DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-8
DEFAULT_MIN_SSIM = 0.95
TEXT_EXACT_MAX_TOKENS = 400

TABLE_EXT = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
JSON_EXT = {".json"}
ARRAY_EXT = {".npy", ".npz"}
IMAGE_EXT = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"}
TEXT_EXT = {".txt", ".dat", ".out", ".log", ".md", ".text", ".csvlog"}
# Formats we could compare as text but should not: their bytes embed dates, ids and renderer
# details, so a byte/token comparison would fail correct predictions. Model-only.
#: Vector figure formats: judged by the recorded plot data when matplotlib drew them, else unsupported.
VECTOR_FIGURE_EXT = {".svg", ".pdf", ".eps", ".ps"}
MODEL_ONLY_EXT = {".svg", ".pdf", ".html", ".htm", ".eps", ".ps", ".pkl", ".pickle", ".joblib", ".pt", ".h5"}

_SORTING_CALLS = re.compile(r"\b(sort_values|sort_index|sorted|nlargest|nsmallest|argsort|rank|\.sort)\s*\(")


def normalize_output(rel: str) -> str:
    """``pred_results/a/b.csv`` and ``a/b.csv`` both name ``a/b.csv`` (relative to pred_dir)."""
    rel = rel.replace("\\", "/")
    while rel.startswith("./"):
        rel = rel[2:]
    if rel.startswith("pred_results/"):
        rel = rel[len("pred_results/") :]
    if not rel or rel.startswith("/") or ".." in Path(rel).parts:
        raise ValueError(f"output path must be relative and inside pred_results/: {rel!r}")
    return rel


def program_sorts_output(program_source: str | None) -> bool:
    """Whether the gold program orders its rows on purpose (then row order is part of the answer)."""
    return bool(program_source and _SORTING_CALLS.search(program_source))


def plan_output(
    gold_path: Path, rel: str, program_source: str | None = None, gold_dir: Path | None = None
) -> dict[str, Any]:
    """The plan entry for one output file: ``{path, kind, metric, params, reason}``.

    Kind ``"unsupported"`` means no deterministic comparison fits (a model may write one).
    ``gold_dir`` (the results folder ``rel`` is relative to) lets a raster figure be judged by
    the plot data the recorder wrote for it; by default it is derived from ``gold_path``.
    """
    ext = gold_path.suffix.lower()
    data = gold_path.read_bytes()
    results = gold_dir if gold_dir is not None else _results_dir(gold_path, rel)
    if is_plotly(load_plotdata(results, rel)):  # a plotly figure, whatever the file: judged by its data
        figure = _plan_figure(results, rel)
        if figure is not None:
            return {"path": rel, **figure}
    if ext in TABLE_EXT:
        entry = _plan_table(data, TABLE_EXT[ext], program_source)
        if entry is not None:
            return {"path": rel, **entry}
    if ext == ".xlsx":  # pandas' to_excel: one sheet is a table like any CSV
        entry = _plan_workbook(gold_path, program_source)
        return {"path": rel, **entry}
    if ext in JSON_EXT:
        try:
            json.loads(data.decode("utf-8-sig"))
            return {
                "path": rel,
                "kind": "json",
                "metric": "nested structure equal; numbers within tolerance; list order kept",
                "params": {"rtol": DEFAULT_RTOL, "atol": DEFAULT_ATOL, "extra_keys": False},
                "reason": "JSON document",
            }
        except ValueError:
            pass
    if ext in ARRAY_EXT:
        return {
            "path": rel,
            "kind": "array",
            "metric": "same names and shapes; numpy.allclose",
            "params": {"rtol": DEFAULT_RTOL, "atol": DEFAULT_ATOL},
            "reason": f"NumPy {ext} file",
        }
    if ext in IMAGE_EXT:
        figure = _plan_figure(gold_dir if gold_dir is not None else _results_dir(gold_path, rel), rel)
        if figure is not None:
            return {"path": rel, **figure}
        return {
            "path": rel,
            "kind": "image",
            "metric": "size within 2 px; mean grayscale SSIM",
            "params": {"min_ssim": DEFAULT_MIN_SSIM, "size_tolerance": 2},
            "reason": "raster image (figure)",
        }
    if ext in VECTOR_FIGURE_EXT:  # a matplotlib figure saved as PDF/SVG/EPS is judged by its data too
        figure = _plan_figure(gold_dir if gold_dir is not None else _results_dir(gold_path, rel), rel)
        if figure is not None:
            return {"path": rel, **figure}
    if ext in MODEL_ONLY_EXT:
        return {"path": rel, "kind": "unsupported", "reason": f"{ext} needs a model-written comparison"}
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return {"path": rel, "kind": "unsupported", "reason": "binary file of unknown format"}
    if not text.strip():
        return {"path": rel, "kind": "unsupported", "reason": "gold output is empty: nothing to compare"}
    if runtime.parse_number(text.strip()) is not None:
        return {
            "path": rel,
            "kind": "scalar",
            "metric": "single number within tolerance",
            "params": {"rtol": DEFAULT_RTOL, "atol": DEFAULT_ATOL},
            "reason": "text file holding one number",
        }
    n_tokens = len(runtime.tokens(text))
    exact = n_tokens <= TEXT_EXACT_MAX_TOKENS
    return {
        "path": rel,
        "kind": "text",
        "metric": "token sequence equal, numbers within tolerance" if exact else "token-overlap F1",
        "params": {
            "mode": "exact" if exact else "overlap",
            "min_f1": 0.9,
            "rtol": DEFAULT_RTOL,
            "atol": DEFAULT_ATOL,
            "ignore_case": False,
        },
        "reason": f"text, {n_tokens} tokens",
    }


def _results_dir(gold_path: Path, rel: str) -> Path:
    """The folder that ``rel`` is relative to (``gold_path`` = that folder / ``rel``)."""
    return gold_path.parents[len(Path(rel).parts) - 1]


def _plan_figure(gold_dir: Path, rel: str) -> dict[str, Any] | None:
    """A ``figure`` entry when the recorder captured this image's plot data.

    ``None`` (judge the pixels) when the recorder has no record of the image: it was not drawn by
    matplotlib (an image-processing result, a photo). A recorded figure with no data-bearing
    artist (empty axes, text only) cannot be judged by its data and is refused.
    """
    data = load_plotdata(gold_dir, rel)
    if data is None:
        return None
    n = series_count(data)
    if data.get("unstable"):
        return {
            "kind": "unsupported",
            "reason": "figure: two runs of the gold program drew different axes or series; "
            "there is no single answer to judge it by",
        }
    stable = n - sum(1 for ax in data.get("axes") or [] for sr in ax.get("series") or [] if sr.get("unstable"))
    if n and not stable:
        return {
            "kind": "unsupported",
            "reason": "figure: every plotted series differs between two runs of the gold program "
            "(unseeded randomness); nothing stable to judge",
        }
    if n == 0:
        return {
            "kind": "unsupported",
            "reason": "figure: the plot recorder found no data series (empty axes or text only); "
            "its data cannot be extracted, and pixels alone do not judge a figure",
        }
    if n == _picture_count(data):
        return {
            "kind": "unsupported",
            "reason": "figure: it only shows pictures (RGB/RGBA arrays, e.g. images read from files); "
            "there is no plotted data to judge it by",
        }
    lost = data.get("unextracted") or []
    if lost:
        kinds = sorted({str(t.get("type")) for t in lost})
        return {
            "kind": "unsupported",
            "reason": f"figure: the data of {len(lost)} plotly trace(s) of type {', '.join(kinds)} cannot be "
            "read from the figure object; judging the rest would pass a figure that is wrong there",
        }
    n_axes = sum(1 for ax in data.get("axes") or [] if ax.get("series"))
    if is_plotly(data):
        unrendered = data.get("writer") == "write_image" and data.get("rendered") is False
        how = {"write_json": "fig.write_json", "write_html": "fig.write_html", "write_image": "fig.write_image"}
        return {
            "kind": "figure",
            "metric": "plotted data equal (traces by name or order, bars by category, error bars), read "
            "from the plotly figure object; style ignored; no pixel metric",
            "params": {
                "rtol": DEFAULT_RTOL,
                "atol": DEFAULT_ATOL,
                "plotdata": f"{PLOTDATA_DIR}/{rel}.json",
                "library": "plotly",
            },
            "reason": f"plotly figure ({how.get(str(data.get('writer')), 'written')}): {n} data series on "
            f"{n_axes} axes recorded from the figure object"
            + ("; not rendered to pixels here (no kaleido/Chrome), so judged by data only" if unrendered else ""),
        }
    return {
        "kind": "figure",
        "metric": "plotted data equal (series by label or order, bars by category, intervals); "
        "style ignored; SSIM reported, not deciding",
        "params": {
            "rtol": DEFAULT_RTOL,
            "atol": DEFAULT_ATOL,
            "min_ssim": DEFAULT_MIN_SSIM,
            "size_tolerance": 2,
            "plotdata": f"{PLOTDATA_DIR}/{rel}.json",
        },
        "reason": f"matplotlib figure: {n} data series on {n_axes} axes recorded at savefig",
    }


def _picture_count(data: dict[str, Any]) -> int:
    """Recorded series that are colour pictures (``imshow`` of an RGB(A) array), not data."""
    n = 0
    for ax in data.get("axes") or []:
        for sr in ax.get("series") or []:
            shape = (sr.get("array") or {}).get("shape") or []
            if sr.get("kind") == "grid" and len(shape) == 3 and shape[-1] in (3, 4):
                n += 1
    return n


def _plan_workbook(gold_path: Path, program_source: str | None) -> dict[str, Any]:
    """An Excel workbook with one sheet is planned as that sheet's table (read by the runtime's
    standard-library ``.xlsx`` reader); other workbooks need a model-written comparison."""
    try:
        sheets = runtime.xlsx_sheets(gold_path)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, ET.ParseError) as exc:
        return {"kind": "unsupported", "reason": f"unreadable .xlsx workbook ({exc.__class__.__name__})"}
    if len(sheets) != 1:
        return {"kind": "unsupported", "reason": f".xlsx workbook with {len(sheets)} sheets needs a model"}
    buf = io.StringIO()
    csv.writer(buf).writerows(r for r in sheets[0][1] if any(c.strip() for c in r))
    entry = _plan_table(buf.getvalue().encode("utf-8"), ",", program_source)
    if entry is None:
        return {"kind": "unsupported", "reason": "the workbook's sheet is not a table (ragged or duplicate columns)"}
    return {**entry, "reason": f"Excel workbook, sheet {sheets[0][0]!r} as a table: {entry['reason']}"}


def _plan_table(data: bytes, sep: str, program_source: str | None) -> dict[str, Any] | None:
    text = data.decode("utf-8-sig", errors="replace")
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=sep) if any(c.strip() for c in r)]
    if len(rows) < 1 or len(rows[0]) < 1:
        return None
    header = [h.strip() for h in rows[0]]
    body = rows[1:]
    if any(len(r) != len(header) for r in body) or len(set(map(str.lower, header))) != len(header):
        return None  # ragged or duplicate names: not a table we can match by column name
    ignore: list[str] = []
    if header[0] == "" and all(r[0].strip() == str(i) for i, r in enumerate(body)):
        ignore.append(header[0])  # pandas' default index written by to_csv()
    columns = [h for h in header if h not in ignore]
    if not columns:
        return None
    numeric: dict[str, bool] = {}
    integral: dict[str, bool] = {}
    for j, h in enumerate(header):
        if h in ignore:
            continue
        values = [runtime.parse_number(r[j]) for r in body]
        numeric[h] = (
            bool(body) and all(v is not None for v in values) and any(v == v for v in values if v is not None)
        )
        integral[h] = numeric[h] and all(
            v == v and float(v).is_integer() and "." not in r[j] and "e" not in r[j].lower()
            for v, r in zip(values, body, strict=True)
        )
    ordered = program_sorts_output(program_source)
    keys = [] if ordered else _unique_key(header, body, columns, numeric, integral)
    return {
        "kind": "table",
        "metric": "columns by name; text cells exact; numbers within tolerance",
        "params": {
            "sep": sep,
            "columns": columns,
            "numeric": numeric,
            "ignore_columns": ignore,
            "extra_columns": True,
            "row_order": "ordered" if ordered else "unordered",
            "key_columns": keys,
            "rtol": DEFAULT_RTOL,
            "atol": DEFAULT_ATOL,
        },
        "reason": (
            f"{len(body)} rows x {len(columns)} columns; rows "
            + (
                "ordered: the gold program sorts its output"
                if ordered
                else f"unordered (aligned by {keys})"
                if keys
                else "unordered (rows matched one to one within tolerance)"
            )
        ),
    }


def _unique_key(
    header: list[str],
    body: list[list[str]],
    columns: list[str],
    numeric: dict[str, bool],
    integral: dict[str, bool],
) -> list[str]:
    """The text/integer columns that identify each gold row, if they do (else ``[]``)."""
    candidates = [c for c in columns if not numeric[c] or integral[c]]
    if not candidates or not body:
        return []
    idx = [header.index(c) for c in candidates]
    # Prefer one identifying column; fall back to all candidate columns together.
    for j, c in zip(idx, candidates, strict=True):
        values = [r[j].strip() for r in body]
        if len(set(values)) == len(values):
            return [c]
    # Then the smallest identifying set: text columns first (labels such as site/treatment identify
    # rows; integer columns are often counts), growing in column order. Using every candidate
    # column would make counts part of the key, so a wrong count reads as a missing row.
    ordered = [c for c in candidates if not numeric[c]] + [c for c in candidates if numeric[c]]
    for k in range(2, len(ordered) + 1):
        cols = ordered[:k]
        tuples = [tuple(r[header.index(c)].strip() for c in cols) for r in body]
        if len(set(tuples)) == len(tuples):
            return cols
    return []


def plan_outputs(
    gold_dir: Path | str, outputs: list[str], program_source: str | None = None
) -> dict[str, Any]:
    """The whole plan: one entry per output (in the order given), plus the defaults used."""
    gold_dir = Path(gold_dir)
    entries = []
    for out in outputs:
        rel = normalize_output(out)
        if is_plotdata(rel):
            continue  # the recorder's own files describe figures; they are not outputs
        path = gold_dir / rel
        if not path.is_file():
            entries.append({"path": rel, "kind": "unsupported", "reason": "no gold file"})
            continue
        entries.append(plan_output(path, rel, program_source, gold_dir))
    return {
        "version": 1,
        "outputs": entries,
        "defaults": {"rtol": DEFAULT_RTOL, "atol": DEFAULT_ATOL, "min_ssim": DEFAULT_MIN_SSIM},
        "all_outputs_must_pass": True,
    }
