"""Validate a task's evaluator before the task is published (D3-Gym pipeline stage 8).

The published D3-Gym pipeline trusts its synthesized evaluators; an evaluator that passes
everything (or nothing) silently turns a task into noise. Here an evaluator is accepted only if,
run as a separate sandboxed process exactly as the environment will run it:

* it PASSES the gold output;
* it FAILS every applicable negative control: a missing file, an empty file, a value perturbed
  beyond tolerance, table columns renamed or with their names rotated over the data, rows
  dropped, the right content in the wrong format (JSON where CSV is expected, ...), and a
  constant output of the right shape;
* it gives the same verdict on every rerun (``reruns`` runs per case, fresh processes and
  hash seeds).

A control that would not change the output (rotating the names of two identical columns, a
constant output when the gold already is constant) is not applicable and is left out, so that
a correct evaluator is never rejected for failing to tell identical outputs apart. An evaluator
that crashes on a negative control counts as failing it (the environment gives reward 0 either
way) but the crash is recorded; an evaluator that crashes or times out on the gold output is
rejected.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.discovery.evalsynth.plan import TABLE_EXT, normalize_output, plan_outputs
from veriforge.discovery.plotrec import plotdata_path
from veriforge.errors import VeriforgeError

_MARK = "@@D3GYM-VERDICT@@"

_RUNNER = """
import json, sys
sys.path.insert(0, ".")
import {module} as eval_mod
res = eval_mod.eval("pred_results", "gold_results")
if not (isinstance(res, (tuple, list)) and len(res) == 2):
    raise TypeError("eval() must return (passed, message), got %r" % (res,))
print("{mark}" + json.dumps({{"passed": bool(res[0]), "message": str(res[1])[:2000]}}))
"""


class EvalCheckError(VeriforgeError):
    """The task folder cannot be validated at all (no task.json, no evaluator, no gold results)."""


@dataclass
class Control:
    """One case the evaluator was run on, and what it said."""

    name: str
    expected_pass: bool
    got_pass: bool | None
    message: str
    output: str | None = None
    verdicts: list[bool | None] = field(default_factory=list)
    crashed: bool = False

    @property
    def ok(self) -> bool:
        stable = len(set(self.verdicts)) <= 1
        return stable and self.got_pass is not None and self.got_pass == self.expected_pass


@dataclass
class EvalValidation:
    """Whether the evaluator is trustworthy; ``reasons`` name each control it got wrong."""

    ok: bool
    reasons: list[str]
    controls: list[Control]
    skipped: list[str] = field(default_factory=list)
    python: str = ""
    wall_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "reasons": self.reasons,
            "controls": [asdict(c) for c in self.controls],
            "skipped": self.skipped,
            "python": self.python,
            "wall_s": round(self.wall_s, 3),
        }


# ---------------------------------------------------------------------------------- controls
Files = dict[str, bytes | None]  # relative path under pred_results/ -> content (None: absent)


def _fmt(v: float) -> str:
    return repr(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v))


def _perturb(v: float) -> float:
    """Far beyond any sensible tolerance, for any magnitude (and never a no-op)."""
    return v * 1.1 + 1.0 if math.isfinite(v) else 0.0


def _num(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def table_controls(data: bytes, sep: str, params: dict[str, Any], xlsx: bool = False) -> list[tuple[str, bytes]]:
    """Wrong versions of a table output; ``xlsx``: the gold is an Excel workbook, and so is every
    control (CSV text under the ``.xlsx`` name would be rejected as unreadable, testing nothing)."""
    if xlsx:
        from veriforge.discovery.evalsynth.runtime import xlsx_sheets
        from veriforge.discovery.xlsxwrite import write_xlsx

        rows = [r for r in xlsx_sheets(io.BytesIO(data))[0][1] if any(c.strip() for c in r)]
    else:
        text = data.decode("utf-8-sig", errors="replace")
        rows = [r for r in csv.reader(io.StringIO(text), delimiter=sep) if any(c.strip() for c in r)]
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    ignore = set(params.get("ignore_columns", []))
    cols = [j for j, h in enumerate(header) if h.strip() not in ignore]
    numeric = [
        j for j in cols if body and all(_num(r[j]) is not None for r in body if j < len(r) and r[j].strip())
    ]
    numeric = [j for j in numeric if any(j < len(r) and r[j].strip() for r in body)]
    keys = set(params.get("key_columns", []))

    def dump(h: list[str], b: list[list[str]]) -> bytes:
        if xlsx:
            return write_xlsx([h, *b])
        buf = io.StringIO()
        w = csv.writer(buf, delimiter=sep, lineterminator="\n")
        w.writerow(h)
        w.writerows(b)
        return buf.getvalue().encode()

    out: list[tuple[str, bytes]] = []
    if body:
        mid = len(body) // 2
        pert = [list(r) for r in body]
        targets = [j for j in numeric if header[j].strip() not in keys] or numeric
        if targets:
            j = targets[-1]
            v = _num(pert[mid][j])
            pert[mid][j] = _fmt(_perturb(v if v is not None else 0.0))
        elif cols:
            pert[mid][cols[-1]] = pert[mid][cols[-1]] + "_x"
        out.append(("perturbed_value", dump(header, pert)))
    if len(cols) >= 2:
        by_name = {header[j]: [r[j] if j < len(r) else "" for r in body] for j in cols}
        rot = list(header)
        for i, j in enumerate(cols):
            rot[j] = header[cols[(i + 1) % len(cols)]]
        rotated = {rot[j]: [r[j] if j < len(r) else "" for r in body] for j in cols}
        if rotated != by_name:
            out.append(("columns_shuffled", dump(rot, body)))
    renamed = [f"column_{i}" if j in cols else h for i, (j, h) in enumerate(enumerate(header))]
    out.append(("columns_renamed", dump(renamed, body)))
    if len(body) >= 2:
        out.append(("rows_dropped", dump(header, body[:-1])))
    if numeric:
        all_zero = all(_num(r[j]) == 0 for r in body for j in numeric if j < len(r) and r[j].strip())
        const = "1" if all_zero else "0"
        cbody = [[const if j in numeric else c for j, c in enumerate(r)] for r in body]
        out.append(("constant_output", dump(header, cbody)))
    records = [{h: (r[j] if j < len(r) else "") for j, h in enumerate(header)} for r in body]
    out.append(("wrong_type", json.dumps(records, indent=1).encode()))
    return out


def _leaves(obj: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    if isinstance(obj, dict):
        return [leaf for k, v in obj.items() for leaf in _leaves(v, (*path, k))]
    if isinstance(obj, list):
        return [leaf for i, v in enumerate(obj) for leaf in _leaves(v, (*path, i))]
    return [(path, obj)]


def _set(obj: Any, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def json_controls(data: bytes) -> list[tuple[str, bytes]]:
    gold = json.loads(data.decode("utf-8-sig"))
    out: list[tuple[str, bytes]] = []
    leaves = _leaves(gold)
    nums = [(p, v) for p, v in leaves if isinstance(v, (int, float)) and not isinstance(v, bool) and p]
    strs = [(p, v) for p, v in leaves if isinstance(v, str) and p]
    if nums or strs:
        pert = json.loads(json.dumps(gold))
        if nums:
            p, v = nums[len(nums) // 2]
            _set(pert, p, _perturb(float(v)))
        else:
            p, v = strs[len(strs) // 2]
            _set(pert, p, v + "_x")
        out.append(("perturbed_value", json.dumps(pert).encode()))
    elif isinstance(gold, (int, float)) and not isinstance(gold, bool):
        out.append(("perturbed_value", json.dumps(_perturb(float(gold))).encode()))

    def first_dict(o: Any) -> dict | None:
        if isinstance(o, dict) and o:
            return o
        for v in o.values() if isinstance(o, dict) else o if isinstance(o, list) else []:
            d = first_dict(v)
            if d is not None:
                return d
        return None

    renamed = json.loads(json.dumps(gold))
    d = first_dict(renamed)
    if d is not None:
        k = next(iter(d))
        d[f"{k}_renamed"] = d.pop(k)
        out.append(("keys_renamed", json.dumps(renamed).encode()))

    def first_list(o: Any) -> list | None:
        if isinstance(o, list) and len(o) >= 2:
            return o
        for v in o.values() if isinstance(o, dict) else o if isinstance(o, list) else []:
            lst = first_list(v)
            if lst is not None:
                return lst
        return None

    dropped = json.loads(json.dumps(gold))
    lst = first_list(dropped)
    if lst is not None:
        lst.pop()
        out.append(("rows_dropped", json.dumps(dropped).encode()))
    if nums:
        const_v = 1 if all(v == 0 for _, v in nums) else 0
        const = json.loads(json.dumps(gold))
        for p, _ in nums:
            _set(const, p, const_v)
        out.append(("constant_output", json.dumps(const).encode()))
    if isinstance(gold, dict):
        csv_text = "key,value\n" + "".join(f"{k},{json.dumps(v)}\n" for k, v in gold.items())
    else:
        csv_text = "value\n" + "".join(
            f"{json.dumps(v)}\n" for v in (gold if isinstance(gold, list) else [gold])
        )
    out.append(("wrong_type", csv_text.encode()))
    return out


def array_controls(data: bytes) -> list[tuple[str, bytes]]:
    import numpy as np

    is_npz = data.startswith(b"PK")
    if is_npz:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    else:
        arrays = {"": np.load(io.BytesIO(data), allow_pickle=False)}

    def dump(arrs: dict[str, Any]) -> bytes:
        buf = io.BytesIO()
        if is_npz:
            np.savez(buf, **arrs)
        else:
            np.save(buf, arrs[""])
        return buf.getvalue()

    out: list[tuple[str, bytes]] = []
    name = next((k for k, a in arrays.items() if a.dtype.kind in "biufc" and a.size), None)
    if name is not None:
        a = arrays[name]
        pert = a.copy()
        flat = pert.reshape(-1)
        i = flat.size // 2
        flat[i] = flat[i] + 1 if a.dtype.kind in "biu" else _perturb(float(np.real(flat[i])))
        out.append(("perturbed_value", dump({**arrays, name: pert})))
        const_v = 1 if not np.any(a) else 0
        out.append(
            (
                "constant_output",
                dump({k: (np.full_like(v, const_v) if k == name else v) for k, v in arrays.items()}),
            )
        )
        shaped = a.reshape(-1) if a.ndim > 1 else np.concatenate([a, a[:1]])
        out.append(("shape_changed", dump({**arrays, name: shaped})))
    if is_npz and arrays:
        k = next(iter(arrays))
        out.append(
            ("keys_renamed", dump({(f"{kk}_renamed" if kk == k else kk): v for kk, v in arrays.items()}))
        )
    if name is not None:
        a = arrays[name]
        buf = io.StringIO()
        np.savetxt(buf, np.atleast_2d(a.reshape(a.shape[0], -1) if a.ndim > 1 else a), delimiter=",")
        out.append(("wrong_type", buf.getvalue().encode()))
    return out


def scalar_controls(data: bytes) -> list[tuple[str, bytes]]:
    v = float(data.decode("utf-8-sig").strip())
    return [
        ("perturbed_value", f"{_perturb(v)!r}\n".encode()),
        ("constant_output", b"1\n" if v == 0 else b"0\n"),
        ("wrong_type", json.dumps({"value": v}).encode()),
    ]


def text_controls(data: bytes, params: dict[str, Any]) -> list[tuple[str, bytes]]:
    from veriforge.discovery.evalsynth.runtime import parse_number, tokens

    text = data.decode("utf-8-sig", errors="replace")
    toks = tokens(text)
    out: list[tuple[str, bytes]] = []
    if params.get("mode") == "overlap":
        out.append(("perturbed_value", " ".join(toks[: len(toks) // 2]).encode()))
    else:
        nums = [i for i, t in enumerate(toks) if parse_number(t) is not None]
        if nums:
            i = nums[len(nums) // 2]
            toks2 = list(toks)
            toks2[i] = repr(_perturb(float(toks[i])))
        else:
            toks2 = list(toks)
            toks2[len(toks2) // 2] = "XXXX"
        out.append(("perturbed_value", " ".join(toks2).encode()))
    out.append(("constant_output", b"0\n"))
    out.append(("wrong_type", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4))
    return out


def image_controls(data: bytes) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = [("wrong_type", b"x,y\n1,2\n3,4\n")]
    try:
        import numpy as np
        from PIL import Image
    except ImportError:
        return out
    with Image.open(io.BytesIO(data)) as im:
        fmt = im.format or "PNG"
        rgb = np.asarray(im.convert("RGB")).copy()
    h, w = rgb.shape[:2]

    def dump(a: Any) -> bytes:
        buf = io.BytesIO()
        Image.fromarray(a.astype("uint8")).save(buf, format=fmt)
        return buf.getvalue()

    pert = rgb.copy()
    pert[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4] = 255 - pert[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4]
    out.insert(0, ("perturbed_value", dump(pert)))
    const = np.empty_like(rgb)
    const[...] = rgb.reshape(-1, 3).mean(axis=0).astype("uint8")
    if not np.array_equal(const, rgb):
        out.insert(1, ("constant_output", dump(const)))
    return out


def binary_controls(data: bytes) -> list[tuple[str, bytes]]:
    mid = len(data) // 2
    span = max(1, min(64, len(data) // 100))
    pert = data[:mid] + bytes(b ^ 0xFF for b in data[mid : mid + span]) + data[mid + span :]
    return [
        ("perturbed_value", pert),
        ("constant_output", bytes(len(data)) if any(data) else b"\x01" * len(data)),
        ("wrong_type", b"x,y\n1,2\n"),
    ]


# ---------------------------------------------------------------------------------- figures
_FIGURE_POSITIVE = ("restyled",)
"""Controls an evaluator must PASS: the same data drawn in another style."""


def _series_values(s: dict[str, Any]) -> list[tuple[str, int]]:
    """(field, index) of every plotted value of a recorded series that a wrong analysis changes
    (none for a series two gold runs drew differently: the evaluator does not compare it)."""
    if s.get("unstable"):
        return []
    kind = s.get("kind")
    if kind == "xy":
        return [("y", i) for i in range(len(s.get("y", [])))]
    if kind == "bar":
        return [("bars", i) for i in range(len(s.get("bars", [])))]
    if kind == "errorbar":
        return [("segments", i) for i in range(len(s.get("segments", [])))]
    if kind == "grid":
        vals = (s.get("array") or {}).get("values") or (s.get("array") or {}).get("sample") or []
        return [("array", i) for i in range(len(vals))]
    if kind == "area":
        return [("xy", i) for i in range(1, len(s.get("xy", [])), 2)]
    return []


def _num0(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def _bump(s: dict[str, Any], fld: str, i: int, f: Callable[[float], float]) -> None:
    """Apply ``f`` to the plotted value ``(fld, i)`` of ``s`` (the height of a bar, the upper
    end of an interval, a y value, a grid cell)."""
    if fld == "bars":
        bar = s["bars"][i]
        horizontal = s.get("orientation") == "horizontal"
        j = 2 if horizontal else 3
        bar[j] = f(_num0(bar[j]))
    elif fld == "segments":
        seg = s["segments"][i]
        seg[3] = f(_num0(seg[3]))
    elif fld == "array":
        arr = s["array"]
        key = "values" if "values" in arr else "sample"
        arr[key][i] = f(_num0(arr[key][i]))
        if "summary" in arr:
            arr["summary"] = {k: (f(_num0(v)) if v is not None else v) for k, v in arr["summary"].items()}
    else:
        s[fld][i] = f(_num0(s[fld][i]))


def _plotted(s: dict[str, Any]) -> list[float]:
    return [
        _num0(s["bars"][i][2 if s.get("orientation") == "horizontal" else 3])
        if fld == "bars"
        else _num0(s["segments"][i][3])
        if fld == "segments"
        else _num0(((s["array"].get("values") or s["array"].get("sample")) or [0])[i])
        if fld == "array"
        else _num0(s[fld][i])
        for fld, i in _series_values(s)
    ]


def _swap_series(data: dict[str, Any]) -> bool:
    """Exchange the values of two series of the same kind and length (labels stay): the
    conclusion reverses while the legend, colours and axes look the same. Failing that, swap
    two bars of one bar series (two categories exchanged)."""
    for ax in data.get("axes", []):
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for s in ax.get("series", []):
            if not s.get("unstable"):
                by_kind.setdefault(s.get("kind", ""), []).append(s)
        for kind, group in by_kind.items():
            for a in range(len(group)):
                for b in range(a + 1, len(group)):
                    sa, sb = group[a], group[b]
                    fields = {"xy": "y", "bar": "bars", "errorbar": "segments", "area": "xy"}
                    fld = fields.get(kind)
                    if kind == "xy" and _plotted(sa) == _plotted(sb) and sa.get("x") != sb.get("x"):
                        fld = "x"  # a depth profile (plotly logs): the series share y, their x is the data
                    same = sa.get(fld) == sb.get(fld) if fld == "x" else _plotted(sa) == _plotted(sb)
                    if fld is None or len(sa.get(fld, [])) != len(sb.get(fld, [])) or same:
                        continue
                    if kind == "bar":
                        for ba, bb in zip(sa["bars"], sb["bars"], strict=True):
                            ba[3], bb[3] = bb[3], ba[3]
                            ba[2], bb[2] = bb[2], ba[2]
                    else:
                        sa[fld], sb[fld] = sb[fld], sa[fld]
                    return True
    for ax in data.get("axes", []):
        for s in ax.get("series", []):
            if s.get("kind") == "bar" and not s.get("unstable"):
                vals = _plotted(s)
                for i in range(len(vals)):
                    for j in range(i + 1, len(vals)):
                        if vals[i] != vals[j]:
                            bi, bj = s["bars"][i], s["bars"][j]
                            bi[2:], bj[2:] = bj[2:], bi[2:]
                            return True
    return False


def _drop_category(data: dict[str, Any]) -> bool:
    """Remove one bar (a category), else one whole series, else the last point of a series."""
    for ax in data.get("axes", []):
        for s in ax.get("series", []):
            if s.get("kind") == "bar" and len(s.get("bars", [])) >= 2 and not s.get("unstable"):
                s["bars"].pop()
                return True
    for ax in data.get("axes", []):
        series = ax.get("series", [])
        kinds = [s.get("kind") for s in series]
        for k in set(kinds):
            if kinds.count(k) >= 2:
                del series[len(kinds) - 1 - kinds[::-1].index(k)]
                return True
    for ax in data.get("axes", []):
        for s in ax.get("series", []):
            if s.get("kind") == "xy" and len(s.get("x", [])) >= 2 and not s.get("unstable"):
                s["x"].pop()
                s["y"].pop()
                return True
    return False


def _wrong_interval(data: dict[str, Any]) -> bool:
    for ax in data.get("axes", []):
        for s in ax.get("series", []):
            if s.get("kind") == "errorbar" and s.get("segments") and not s.get("unstable"):
                for seg in s["segments"]:
                    lo, hi = _num0(seg[1]), _num0(seg[3])
                    mid, half = (lo + hi) / 2, abs(hi - lo) / 2
                    seg[1], seg[3] = mid - 2 * half - 1.0, mid + 2 * half + 1.0
                return True
    return False


def _perturb_one(data: dict[str, Any]) -> bool:
    for ax in data.get("axes", []):
        for s in ax.get("series", []):
            vals = _series_values(s)
            if vals:
                fld, i = vals[len(vals) // 2]
                _bump(s, fld, i, _perturb)
                return True
    return False


def _constant(data: dict[str, Any]) -> bool:
    changed = False
    for ax in data.get("axes", []):
        for s in ax.get("series", []):
            vals = _plotted(s)
            c = 1.0 if vals and all(v == 0 for v in vals) else 0.0
            for fld, i in _series_values(s):
                _bump(s, fld, i, lambda _v, c=c: c)
                changed = True
    return changed


def _restyle(data: dict[str, Any]) -> bool:
    """The same data drawn differently: labelled series in another drawing order, bars listed in
    another order (each keeps its position, so its category), titles and free text reworded."""
    for ax in data.get("axes", []):
        series = ax.get("series", [])
        by_kind: dict[str, list[int]] = {}
        for i, s in enumerate(series):
            by_kind.setdefault(s.get("kind", ""), []).append(i)
        for idx in by_kind.values():
            labels = [series[i].get("label") for i in idx]
            if len(idx) > 1 and all(labels) and len(set(labels)) == len(labels):
                moved = [series[i] for i in reversed(idx)]
                for i, s in zip(idx, moved, strict=True):
                    series[i] = s
        for s in series:
            if s.get("kind") == "bar":
                s["bars"].reverse()
        ax["title"] = (ax.get("title") or "") + " (restyled)"
        ax["texts"] = []
    return True


def _restyle_plotly_file(data: bytes) -> bytes:
    """A plotly figure file (JSON, or the JSON stand-in of an unrendered image) restyled: another
    template, size and trace colours -- what an evaluator of plotly figures must not look at."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return data
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        return data
    layout = doc.setdefault("layout", {})
    layout["template"] = {"layout": {"paper_bgcolor": "black", "font": {"color": "white"}}}
    layout["width"], layout["height"] = 777, 555
    for i, trace in enumerate(doc["data"]):
        if isinstance(trace, dict):
            trace["marker"] = {**(trace.get("marker") or {}), "symbol": "x"}
            trace["line"] = {**(trace.get("line") or {}), "color": f"#{(i * 40 + 17) % 256:02x}8040"}
    return json.dumps(doc).encode()


def figure_controls(png: bytes, plotdata: bytes) -> list[tuple[str, bytes | None, bytes | None]]:
    """``[(name, figure bytes, plot-data bytes)]`` for a recorded figure (``None``: remove the file).

    Negative: swapped series, a dropped category, a wrong interval, one value perturbed, constant
    data, the figure without its plot data, a CSV in place of the image. Positive (must pass):
    ``restyled``: the same data recorded in another drawing order, with the image recoloured
    (so a pixel metric would disagree).
    """
    gold = json.loads(plotdata.decode("utf-8"))
    out: list[tuple[str, bytes | None, bytes | None]] = []
    for name, fn in (
        ("swapped_series", _swap_series),
        ("dropped_category", _drop_category),
        ("wrong_interval", _wrong_interval),
        ("perturbed_value", _perturb_one),
        ("constant_output", _constant),
    ):
        data = json.loads(plotdata.decode("utf-8"))
        if fn(data) and data != gold:
            out.append((name, png, json.dumps(data).encode()))
    out.append(("missing_plotdata", png, None))
    out.append(("wrong_type", b"x,y\n1,2\n3,4\n", plotdata))
    restyled = json.loads(plotdata.decode("utf-8"))
    _restyle(restyled)
    recoloured = _restyle_plotly_file(png)
    try:
        import numpy as np
        from PIL import Image

        with Image.open(io.BytesIO(png)) as im:
            fmt = im.format or "PNG"
            rgb = np.asarray(im.convert("RGB")).copy()
        buf = io.BytesIO()
        Image.fromarray((255 - rgb[:, :, ::-1]).astype("uint8")).save(buf, format=fmt)
        recoloured = buf.getvalue()
    except Exception:  # no PIL: the data-side restyle still tests the evaluator
        pass
    out.append(("restyled", recoloured, json.dumps(restyled).encode()))
    return out


def controls_for(entry: dict[str, Any], gold: bytes) -> list[tuple[str, bytes]]:
    """Kind-specific negative controls for one output (always plus missing/empty)."""
    kind, params = entry.get("kind"), entry.get("params", {}) or {}
    builders: dict[str, Callable[[], list[tuple[str, bytes]]]] = {
        "table": lambda: table_controls(
            gold,
            params.get("sep", TABLE_EXT.get(Path(entry["path"]).suffix, ",")),
            params,
            xlsx=entry["path"].lower().endswith(".xlsx"),
        ),
        "json": lambda: json_controls(gold),
        "array": lambda: array_controls(gold),
        "scalar": lambda: scalar_controls(gold),
        "text": lambda: text_controls(gold, params),
        "image": lambda: image_controls(gold),
    }
    try:
        specific = builders.get(kind, lambda: binary_controls(gold))()
    except Exception:  # the gold does not parse as its kind: fall back to byte-level controls
        specific = binary_controls(gold)
    return [(n, b) for n, b in specific if b != gold]


def negative_controls(gold_dir: Path, plan: dict[str, Any]) -> tuple[list[tuple[str, str, Files]], list[str]]:
    """``[(control name, output, {rel: bytes | None})]`` and the controls not applicable."""
    gold_files = {
        p.relative_to(gold_dir).as_posix(): p.read_bytes() for p in sorted(gold_dir.rglob("*")) if p.is_file()
    }
    cases: list[tuple[str, str, Files]] = [("gold", "", dict(gold_files))]
    skipped: list[str] = []
    multi = len(plan["outputs"]) > 1
    for entry in plan["outputs"]:
        rel = entry["path"]
        gold = gold_files.get(rel)
        if gold is None:
            continue
        suffix = f":{rel}" if multi else ""
        cases.append((f"missing_file{suffix}", rel, {**gold_files, rel: None}))
        cases.append((f"empty_file{suffix}", rel, {**gold_files, rel: b""}))
        side = plotdata_path(Path(), rel).as_posix()
        if entry.get("kind") == "figure" and gold_files.get(side) is not None:
            fig_made = figure_controls(gold, gold_files[side] or b"")
            fig_names = {n for n, _, _ in fig_made}
            for n in ("swapped_series", "dropped_category", "wrong_interval", "perturbed_value"):
                if n not in fig_names:
                    skipped.append(f"{n}{suffix}: not applicable to this figure's data")
            for n, png, pdata in fig_made:
                cases.append((f"{n}{suffix}", rel, {**gold_files, rel: png, side: pdata}))
            continue
        made = controls_for(entry, gold)
        names = {n for n, _ in made}
        for n in ("perturbed_value", "columns_shuffled", "constant_output", "wrong_type"):
            if n not in names and not (n == "columns_shuffled" and entry.get("kind") != "table"):
                skipped.append(f"{n}{suffix}: not applicable to this output")
        for n, b in made:
            cases.append((f"{n}{suffix}", rel, {**gold_files, rel: b}))
    return cases, skipped


# ---------------------------------------------------------------------------------- running
def _task_python(task_dir: Path, task: dict[str, Any]) -> str:
    """The task environment's interpreter when the folder has one, else veriforge's own."""
    env = (task.get("veriforge") or {}).get("env") or {}
    candidates = [task_dir / "env" / "venv" / "bin" / "python"]
    hint = env.get("venv_hint")
    if isinstance(hint, str) and hint:
        h = Path(hint) if Path(hint).is_absolute() else task_dir / hint
        candidates += [h / "bin" / "python", h]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return sys.executable


def run_evaluator(
    script: str,
    module: str,
    pred: Files,
    gold: dict[str, bytes],
    *,
    python: str | None = None,
    timeout_s: float = 60.0,
) -> tuple[bool | None, str, bool]:
    """``(passed, message, crashed)`` from one fresh sandboxed run of the evaluator."""
    from veriforge.sandbox import Limits, run_python

    files: dict[str, str | bytes] = {f"{module}.py": script}
    files.update({f"gold_results/{k}": v for k, v in gold.items()})
    files.update({f"pred_results/{k}": v for k, v in pred.items() if v is not None})
    if not any(v is not None for v in pred.values()):
        files["pred_results/.keep"] = b""
    res = run_python(
        _RUNNER.format(module=module, mark=_MARK),
        files=files,
        python=python,
        limits=Limits(timeout_s=timeout_s, cpu_s=timeout_s, memory_mb=4096),
    )
    for line in reversed(res.stdout_text.splitlines()):
        if line.startswith(_MARK):
            v = json.loads(line[len(_MARK) :])
            return bool(v["passed"]), v["message"], False
    if res.status == "timeout":
        return None, f"evaluator timed out after {timeout_s:g} s", True
    tail = res.stderr_text.strip().splitlines()[-3:]
    return False, f"evaluator raised ({res.status}, exit {res.exit_code}): {' | '.join(tail)}", True


def _load_task(task_dir: Path) -> tuple[dict[str, Any], str, str, list[str]]:
    tj = task_dir / "task.json"
    if not tj.is_file():
        raise EvalCheckError(f"{task_dir}: no task.json")
    task = json.loads(tj.read_text(encoding="utf-8"))
    name = task.get("eval_script_name") or "eval.py"
    script_path = task_dir / "eval" / name
    if not script_path.is_file():
        raise EvalCheckError(f"{task_dir}: evaluator eval/{name} missing")
    vf = task.get("veriforge") or {}
    outputs = list(vf.get("outputs") or ([task["output_fname"]] if task.get("output_fname") else []))
    if not outputs:
        raise EvalCheckError(f"{task_dir}: task.json names no outputs")
    return task, name, script_path.read_text(encoding="utf-8"), [normalize_output(o) for o in outputs]


def validate_evaluator(
    task_dir: Path | str,
    *,
    reruns: int = 2,
    timeout_s: float = 60.0,
    python: str | None = None,
    max_workers: int | None = None,
) -> EvalValidation:
    """Run the task's evaluator on the gold output and on negative controls; accept or reject it.

    ``reruns`` fresh runs per case (at least 1); ``python`` overrides the interpreter (default:
    the task's ``env/venv`` or ``veriforge.env.venv_hint`` when present, else this Python).
    """
    t0 = time.perf_counter()
    task_dir = Path(task_dir)
    task, name, script, outputs = _load_task(task_dir)
    gold_dir = task_dir / "gold_results"
    if not gold_dir.is_dir():
        raise EvalCheckError(f"{task_dir}: no gold_results/")
    plan = (task.get("veriforge") or {}).get("eval_plan") or {}
    if not plan.get("outputs"):
        plan = plan_outputs(gold_dir, outputs)
    py = python or _task_python(task_dir, task)
    module = Path(name).stem if Path(name).stem.isidentifier() else "eval_mod"
    cases, skipped = negative_controls(gold_dir, plan)
    gold_files = cases[0][2]
    reruns = max(1, int(reruns))
    jobs = [(ci, r) for ci in range(len(cases)) for r in range(reruns)]
    workers = max_workers or min(4, os.cpu_count() or 1)

    def one(job: tuple[int, int]) -> tuple[bool | None, str, bool]:
        _, _, pred = cases[job[0]]
        return run_evaluator(script, module, pred, gold_files, python=py, timeout_s=timeout_s)  # type: ignore[arg-type]

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(one, jobs))
    controls: list[Control] = []
    reasons: list[str] = []
    for ci, (cname, out, _) in enumerate(cases):
        runs = [results[k] for k, (c, _) in enumerate(jobs) if c == ci]
        verdicts = [r[0] for r in runs]
        got, msg, _ = runs[0]
        positive = cname == "gold" or cname.split(":")[0] in _FIGURE_POSITIVE
        c = Control(cname, positive, got, msg, out or None, verdicts, any(r[2] for r in runs))
        controls.append(c)
        if len(set(verdicts)) > 1:
            reasons.append(f"{cname}: verdict changed across {reruns} runs: {verdicts}")
        elif got is None:
            reasons.append(f"{cname}: {msg}")
        elif got != c.expected_pass:
            want = "PASS" if c.expected_pass else "FAIL"
            reasons.append(f"{cname}: expected {want}, evaluator said {'PASS' if got else 'FAIL'}: {msg}")
    return EvalValidation(not reasons, reasons, controls, skipped, py, time.perf_counter() - t0)
