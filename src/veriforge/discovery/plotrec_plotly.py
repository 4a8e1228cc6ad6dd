"""Plotly figures as recorded plot data: the plotly half of the plot recorder.

Why: notebooks that draw with plotly keep their science in the figure object (traces of x/y
values, bars by category, error arrays), and plotly renders pixels only through a browser engine
(kaleido/Chrome) that a sandbox rarely has. So a plotly figure is judged like a matplotlib one:
by its data, read from the figure object itself (``fig.to_dict()``), never from pixels, in the
same recorded-figure schema (:mod:`veriforge.discovery.plotrec_site`), so the same evaluator
(``evalsynth.runtime.compare_plotdata``) and the same validation controls judge both.

:func:`extract_plotly` maps the figure's traces onto that schema: one recorded axes per subplot
(a cartesian ``xaxis``/``yaxis`` pair, a 3-D scene, a polar/geo/ternary subplot, each pie), with
the axis titles and categories (text tick labels at the category's position, as matplotlib's
categorical axes have them), and per trace a series of a known kind -- ``xy`` (x, y and, where
they carry data, z, a numeric marker colour and marker sizes), ``bar`` (one bar per category or
position), ``errorbar`` (the intervals that ``error_x``/``error_y`` draw), ``grid`` (a heatmap's
or surface's z). Traces whose data cannot be read (an unknown trace type without x/y/z arrays) are
listed under ``"unextracted"``: the planner refuses such a figure rather than judge part of it.

Rules as for the recorder: standard library at module level (plotly does not require numpy; a
numpy array is read through its ``tolist``), no veriforge imports (this file is copied into the
run as ``_veriforge_plotrec_plotly.py`` next to the recorder), and nothing here raises into the
program (the recorder catches).
"""

import base64
import datetime
import math
import sys
from array import array

MAX_VALUES = 20000  # grids larger than this are summarised, as matplotlib's are
_EPOCH = datetime.datetime(1970, 1, 1)
# plotly >= 6 serialises numeric numpy arrays as typed arrays {"dtype": "f8", "bdata": base64}
_TYPED = {"i1": "b", "u1": "B", "i2": "h", "u2": "H", "i4": "i", "u4": "I", "f4": "f", "f8": "d"}
# trace types whose (x, y) are points; the fields that give x and y for the non-cartesian ones
_POINT_FIELDS = {
    "scatter": ("x", "y"),
    "scattergl": ("x", "y"),
    "scatter3d": ("x", "y"),
    "histogram2d": ("x", "y"),
    "histogram2dcontour": ("x", "y"),
    "scatterpolar": ("theta", "r"),
    "scatterpolargl": ("theta", "r"),
    "barpolar": ("theta", "r"),
    "scattergeo": ("lon", "lat"),
    "scattermapbox": ("lon", "lat"),
    "scattermap": ("lon", "lat"),
    "densitymapbox": ("lon", "lat"),
    "densitymap": ("lon", "lat"),
    "scatterternary": ("a", "b"),
    "scattercarpet": ("a", "b"),
}
_GRID_TYPES = frozenset({"heatmap", "heatmapgl", "contour", "surface", "image"})
_SLICE_TYPES = frozenset({"pie", "funnelarea", "sunburst", "treemap", "icicle"})
_SAMPLE_TYPES = frozenset({"box", "violin", "histogram"})
_NO_DATA_TYPES = frozenset({"table", "indicator"})  # no plotted data; not an error either


def _decode_typed(v):
    """A typed-array dict (plotly >= 6 JSON form) as a nested list of numbers."""
    code = _TYPED.get(str(v.get("dtype")))
    if code is None:
        raise ValueError(f"typed array of dtype {v.get('dtype')!r}")
    arr = array(code)
    arr.frombytes(base64.b64decode(v["bdata"]))
    if sys.byteorder == "big":
        arr.byteswap()
    flat = arr.tolist()
    shape = [int(s) for s in str(v.get("shape") or "").replace(" ", "").split(",") if s]
    if len(shape) == 2:
        return [flat[i * shape[1] : (i + 1) * shape[1]] for i in range(shape[0])]
    return flat


def _plain(v):
    """Any array-like plotly accepts (list, tuple, numpy/pandas array, typed-array dict) as a list;
    a scalar stays a scalar, ``None`` stays ``None``."""
    if v is None:
        return None
    if isinstance(v, dict) and "bdata" in v:
        return _decode_typed(v)
    dtype = getattr(v, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", "") == "M":  # numpy datetime64: microseconds
        v = v.astype("datetime64[us]")
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [_plain(x) if isinstance(x, (list, tuple, dict)) or hasattr(x, "tolist") else x for x in v]
    return v


def _number(x):
    """A float for a number (or a numeric string), else ``None``."""
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str):
        try:
            return float(x.strip())
        except ValueError:
            return None
    try:
        return float(x)  # numpy scalars, Decimal
    except (TypeError, ValueError):
        return None


def _nan_if_none(x):
    return float("nan") if x is None else x


def _date(x):
    """Seconds since the epoch for a date, datetime or ISO date string, else ``None``."""
    if isinstance(x, datetime.datetime):
        if x.tzinfo is not None:
            x = x.astimezone(datetime.timezone.utc).replace(tzinfo=None)  # noqa: UP017 (Python 3.8+)
        return (x - _EPOCH).total_seconds()
    if isinstance(x, datetime.date):
        return (datetime.datetime(x.year, x.month, x.day) - _EPOCH).total_seconds()
    if isinstance(x, str) and len(x) >= 4 and x[:4].isdigit():
        try:
            return _date(datetime.datetime.fromisoformat(x.strip().replace("Z", "+00:00")))
        except ValueError:
            return None
    return None


def _flat(v):
    v = _plain(v)
    if v is None:
        return []
    if not isinstance(v, list):
        return [v]
    out = []
    for x in v:
        out.extend(_flat(x) if isinstance(x, list) else [x])
    return out


def _jsonable(xs):
    # JSON has no NaN/inf; keep them as strings the evaluator turns back into floats (as plotrec_site)
    return [x if x == x and x not in (float("inf"), float("-inf")) else repr(x) for x in xs]


class _Axis:
    """One axis of a subplot: its type (linear, date or category) and, for categories, the
    position of each category (order of first appearance, or the layout's ``categoryarray``)."""

    def __init__(self, layout_axis, values):
        declared = (layout_axis or {}).get("type") or "-"
        present = [x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
        if declared in ("category", "multicategory"):
            self.kind = "category"
        elif declared == "date":
            self.kind = "date"
        elif declared in ("linear", "log") or all(_number(x) is not None for x in present):
            self.kind = "linear"
        elif all(_date(x) is not None for x in present):
            self.kind = "date"
        else:
            self.kind = "category"
        self.categories = {}
        if self.kind == "category":
            order = _flat((layout_axis or {}).get("categoryarray"))
            for c in order + present:
                self.categories.setdefault(self._name(c), float(len(self.categories)))

    @staticmethod
    def _name(c):
        if isinstance(c, (list, tuple)):  # a multicategory pair
            return " / ".join(str(x) for x in c)
        return str(c)

    def position(self, x):
        if x is None:
            return float("nan")
        if self.kind == "category":
            return self.categories.setdefault(self._name(x), float(len(self.categories)))
        if self.kind == "date":
            d = _date(x)
            return float("nan") if d is None else d
        n = _number(x)
        return float("nan") if n is None else n

    def ticks(self):
        return [[pos, name] for name, pos in self.categories.items()]


def _multicategory(v):
    """plotly's two-level category form ``[[outer...], [inner...]]`` as one list of pairs."""
    if isinstance(v, list) and len(v) == 2 and all(isinstance(p, list) for p in v) and len(v[0]) == len(v[1]):
        if v[0] and not isinstance(v[0][0], (int, float)):
            return [[a, b] for a, b in zip(v[0], v[1])]  # noqa: B905 (Python 3.8+)
    return v


def _coords(trace, field, n, default_start="0", step="1"):
    """The values of ``field`` (x or y), or plotly's implied ``x0 + i*dx`` when it is absent."""
    v = _plain(trace.get(field))
    if v is None:
        start = _number(trace.get(field + "0", default_start)) or 0.0
        d = _number(trace.get("d" + field, step)) or 1.0
        return [start + i * d for i in range(n)]
    v = _multicategory(v)
    return v if isinstance(v, list) else [v] * n


def _title(obj):
    t = (obj or {}).get("title")
    if isinstance(t, dict):
        t = t.get("text")
    return "" if t is None else str(t)


def _errorbars(label, positions, values, err, horizontal):
    """An errorbar series: one segment per point from ``value - minus`` to ``value + plus`` at its
    position (along x for a horizontal bar or an ``error_x``, along y otherwise)."""
    segs = [[v - m, c, v + pl, c] if horizontal else [c, v - m, c, v + pl]
            for c, v, (m, pl) in zip(positions, values, err)]  # noqa: B905
    return {"kind": "errorbar", "label": label, "segments": [_jsonable(sg) for sg in segs]}


def _errors(spec, values):
    """``[(minus, plus)]`` per point for an ``error_x``/``error_y`` dict, or ``None`` when absent."""
    if not isinstance(spec, dict) or spec.get("visible") is False:
        return None
    kind = spec.get("type") or ("data" if spec.get("array") is not None else None)
    if kind is None:
        return None
    sym = spec.get("symmetric")
    n = len(values)
    if kind == "data":
        plus = [_number(x) for x in _flat(spec.get("array"))]
        minus = [_number(x) for x in _flat(spec.get("arrayminus"))] if sym is False else plus
        if not plus:
            return None
        plus += [None] * (n - len(plus))
        minus = list(minus) + [None] * (n - len(minus))
    else:
        val = _number(spec.get("value", 10)) or 0.0
        valm = _number(spec.get("valueminus", val)) if sym is False else val

        def amount(v, k):
            if v is None or v != v:
                return None
            if kind == "percent":
                return abs(v) * k / 100.0
            if kind == "sqrt":
                return math.sqrt(abs(v))
            return k

        plus = [amount(v, val) for v in values]
        minus = [amount(v, valm if valm is not None else val) for v in values]
    return [(m or 0.0, p or 0.0) for m, p in zip(minus[:n], plus[:n])]  # noqa: B905


def _subplot_key(trace, index):
    t = trace.get("type") or "scatter"
    if t in _SLICE_TYPES:
        return ("slice", str(index))
    if t == "scatter3d" or t in ("surface", "mesh3d", "cone", "streamtube", "isosurface", "volume"):
        return ("scene", trace.get("scene") or "scene")
    for kind in ("polar", "geo", "ternary", "mapbox", "map"):
        if t.startswith("scatter" + kind) or t in ("barpolar", "choropleth", "densitymapbox", "densitymap"):
            return ("subplot", trace.get("subplot") or trace.get("geo") or t)
    return ("xy", (trace.get("xaxis") or "x", trace.get("yaxis") or "y"))


def _axis_number(name, prefix):
    rest = str(name)[len(prefix) :]
    return int(rest) if rest.isdigit() else 1


def _visible(trace):
    return trace.get("visible", True) not in (False, "legendonly")


def _grid(z):
    """A heatmap's z as the recorder's array record (shape, values or a summary + sample)."""
    z = _plain(z)
    rows = z if isinstance(z, list) and z and isinstance(z[0], list) else [z]
    shape = [len(rows), max((len(r) if isinstance(r, list) else 1) for r in rows)]
    if rows and isinstance(rows[0], list) and rows[0] and isinstance(rows[0][0], list):
        shape.append(len(rows[0][0]))  # an RGB(A) picture: the planner refuses it
    flat = [_number(x) for x in _flat(z)]
    flat = [float("nan") if x is None else x for x in flat]
    if len(flat) <= MAX_VALUES:
        return {"shape": shape, "values": _jsonable(flat)}
    finite = [x for x in flat if x == x and abs(x) != float("inf")]
    mean = sum(finite) / len(finite) if finite else None
    std = math.sqrt(sum((x - mean) ** 2 for x in finite) / len(finite)) if finite else None
    step = max(1, len(flat) // 2000)
    return {
        "shape": shape,
        "summary": {
            "mean": mean,
            "std": std,
            "min": min(finite) if finite else None,
            "max": max(finite) if finite else None,
        },
        "sample": _jsonable(flat[::step]),
    }


def _marker_arrays(trace, n):
    """Numeric per-point marker colour and size: data when the program maps a variable onto them."""
    marker = trace.get("marker") or {}
    out = {}
    for src, key in (("color", "c"), ("size", "s")):
        vals = _plain(marker.get(src))
        if isinstance(vals, list) and len(vals) == n and n > 1:
            nums = [_number(v) for v in vals]
            if all(v is not None for v in nums) and len(set(nums)) > 1:
                out[key] = _jsonable(nums)
    return out


def _series_for(trace, xa, ya):
    """The recorded series of one trace (``[]`` when it plots nothing), or ``None`` when its data
    cannot be read."""
    t = trace.get("type") or "scatter"
    label = "" if trace.get("name") is None else str(trace.get("name"))
    horizontal = trace.get("orientation") == "h"
    if t in ("bar", "funnel", "waterfall"):
        pos_field, val_field = ("y", "x") if horizontal else ("x", "y")
        vals = _flat(_plain(trace.get(val_field)))
        if not vals:
            return []
        pos = _coords(trace, pos_field, len(vals))
        pos_axis, val_axis = (ya, xa) if horizontal else (xa, ya)
        base = _plain(trace.get("base"))
        bases = base if isinstance(base, list) else [base] * len(vals)
        width = 0.8 if pos_axis.kind == "category" else 0.0
        bars, centres, heights = [], [], []
        for p, v, b in zip(pos, vals, bases):  # noqa: B905
            c, h = pos_axis.position(p), val_axis.position(v)
            b = _number(b) or 0.0
            centres.append(c)
            heights.append(h)
            bars.append([b, c - width / 2, h, width] if horizontal else [c - width / 2, b, width, h])
        series = [{"kind": "bar", "label": label, "orientation": "horizontal" if horizontal else "vertical",
                   "bars": [_jsonable(b) for b in bars]}]
        err = _errors(trace.get("error_x" if horizontal else "error_y"), heights)
        if err:
            series.append(_errorbars(label, centres, heights, err, horizontal))
        return series
    if t in _SAMPLE_TYPES:
        return _sample_series(trace, t, label, xa, ya)
    if t in _GRID_TYPES:
        z = trace.get("z")
        if z is None and t == "image":
            return None  # an image given as a data URI: pixels, not data
        if z is None:
            return []
        return [{"kind": "grid", "label": label, "array": _grid(z)}]
    if t in _SLICE_TYPES:
        labels = _flat(_plain(trace.get("labels") or trace.get("ids")))
        values = [_number(v) for v in _flat(_plain(trace.get("values")))]
        if not labels and not values:
            return []
        if not values:  # a pie of counts: plotly counts the labels
            counts = {}
            for lab in labels:
                counts[str(lab)] = counts.get(str(lab), 0) + 1
            labels, values = list(counts), [float(c) for c in counts.values()]
        if not labels:
            labels = [str(i) for i in range(len(values))]
        cats = {}
        for lab in labels:
            cats.setdefault(str(lab), float(len(cats)))
        bars = [[cats[str(lab)] - 0.4, 0.0, 0.8, v] for lab, v in zip(labels, values)]  # noqa: B905
        return [{"kind": "bar", "label": label, "orientation": "vertical", "bars": [_jsonable(b) for b in bars],
                 "_categories": [[p, n] for n, p in cats.items()]}]
    if t in _POINT_FIELDS or t == "scatter3d":
        fx, fy = _POINT_FIELDS.get(t, ("x", "y"))
        ry, rx = _plain(trace.get(fy)), _plain(trace.get(fx))
        n = len(_flat(ry)) if isinstance(ry, list) else len(_flat(rx)) if isinstance(rx, list) else 0
        if n == 0:
            return []
        xs_raw = _coords(trace, fx, n) if fx in ("x", "y") else (_flat(rx) if rx is not None else list(range(n)))
        ys_raw = _coords(trace, fy, n) if fy in ("x", "y") else (_flat(ry) if ry is not None else list(range(n)))
        xs = [xa.position(v) for v in xs_raw]
        ys = [ya.position(v) for v in ys_raw]
        s = {"kind": "xy", "label": label, "x": _jsonable(xs), "y": _jsonable(ys), "mode": trace.get("mode") or ""}
        third = "z" if t in ("scatter3d",) else "c" if t in ("scatterternary", "scattercarpet") else None
        if third and trace.get(third) is not None:
            s["z"] = _jsonable([_nan_if_none(_number(v)) for v in _flat(trace.get(third))])
        s.update(_marker_arrays(trace, n))
        series = [s]
        for field, horiz in (("error_y", False), ("error_x", True)):
            err = _errors(trace.get(field), xs if horiz else ys)
            if err:
                series.append(_errorbars(label, ys if horiz else xs, xs if horiz else ys, err, horiz))
        return series
    if t in _NO_DATA_TYPES:
        return []
    # an unfamiliar trace type: its x/y (and z) arrays are its data, if it has them
    if isinstance(_plain(trace.get("y")), list) or isinstance(_plain(trace.get("x")), list):
        ry, rx = _plain(trace.get("y")), _plain(trace.get("x"))
        n = len(_flat(ry if isinstance(ry, list) else rx))
        xs = [xa.position(v) for v in _coords(trace, "x", n)]
        ys = [ya.position(v) for v in _coords(trace, "y", n)]
        return [{"kind": "xy", "label": label, "x": _jsonable(xs), "y": _jsonable(ys), "mode": t}]
    if trace.get("z") is not None:
        return [{"kind": "grid", "label": label, "array": _grid(trace.get("z"))}]
    return None


def _sample_series(trace, t, label, xa, ya):
    """Raw samples (a histogram's values, a box's or violin's observations): the renderer bins
    them or draws their quartiles, so the samples themselves are the data -- recorded as points
    (value, and the category or position the box sits at), compared as a set."""
    has_x, has_y = trace.get("x") is not None, trace.get("y") is not None
    if t == "histogram":
        # samples along x (vertical bars) unless horizontal or only y is given; the other
        # field, when present, is what histfunc aggregates (data too)
        horizontal = trace.get("orientation") == "h" or (has_y and not has_x)
        sample_field, other = ("y", "x") if horizontal else ("x", "y")
        vals = _flat(_plain(trace.get(sample_field)))
        if not vals:
            return []
        axis = ya if horizontal else xa
        xs = [axis.position(v) for v in vals]
        agg = _flat(_plain(trace.get(other)))
        ys = [_nan_if_none(_number(v)) for v in agg] if len(agg) == len(vals) else [0.0] * len(vals)
        return [{"kind": "xy", "label": label, "x": _jsonable(xs), "y": _jsonable(ys), "mode": t}]
    horizontal = trace.get("orientation") == "h" or (has_x and not has_y)
    sample_field, pos_field = ("x", "y") if horizontal else ("y", "x")
    vals = _flat(_plain(trace.get(sample_field)))
    if not vals:
        return []
    pos_axis, val_axis = (ya, xa) if horizontal else (xa, ya)
    raw_pos = _plain(trace.get(pos_field))
    if isinstance(raw_pos, list):
        pos = [pos_axis.position(p) for p in _multicategory(raw_pos)]
    else:  # one box per trace, placed at the trace's name on a categorical axis
        pos = [pos_axis.position(label) if pos_axis.kind == "category" else 0.0] * len(vals)
    samples = [val_axis.position(v) for v in vals]
    xs, ys = (samples, pos) if horizontal else (pos, samples)
    return [{"kind": "xy", "label": label, "x": _jsonable(xs), "y": _jsonable(ys), "mode": t}]


def _as_dict(fig):
    if isinstance(fig, dict):
        return fig
    to_dict = getattr(fig, "to_dict", None)
    if to_dict is None:
        raise TypeError(f"not a plotly figure: {type(fig).__name__}")
    return to_dict()


def extract_plotly(fig):
    """``{"version", "library": "plotly", "title", "axes": [...], "unextracted": [...]}`` for a plotly
    figure (a ``go.Figure``/``FigureWidget`` or its dict form), in the recorder's schema."""
    d = _as_dict(fig)
    layout = d.get("layout") or {}
    traces = [tr for tr in (d.get("data") or []) if isinstance(tr, dict)]
    groups, order = {}, []
    for i, tr in enumerate(traces):
        if not _visible(tr):
            continue
        key = _subplot_key(tr, i)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(tr)

    def sort_key(k):
        if k[0] == "xy":
            return (0, _axis_number(k[1][0], "x"), _axis_number(k[1][1], "y"))
        return (1, order.index(k), 0)

    axes, unextracted = [], []
    for key in sorted(order, key=sort_key):
        trs = groups[key]
        if key[0] == "xy":
            xname, yname = key[1]
            lx = layout.get("xaxis" + xname[1:]) or {}
            ly = layout.get("yaxis" + yname[1:]) or {}
        elif key[0] == "scene":
            scene = layout.get(key[1]) or {}
            lx, ly = scene.get("xaxis") or {}, scene.get("yaxis") or {}
        else:
            lx, ly = {}, {}
        xa = _Axis(lx, _axis_values(trs, "x"))
        ya = _Axis(ly, _axis_values(trs, "y"))
        series, legend, xticks = [], [], []
        for tr in trs:
            made = _series_for(tr, xa, ya)
            if made is None:
                unextracted.append({"type": tr.get("type") or "scatter", "name": tr.get("name") or ""})
                continue
            for s in made:
                xticks.extend(s.pop("_categories", []))
                s["trace"] = tr.get("type") or "scatter"  # for readers; the evaluator compares kinds
            series.extend(made)
            if tr.get("name") and tr.get("showlegend") is not False:
                legend.append(str(tr["name"]))
        axes.append(
            {
                "title": "",
                "xlabel": _title(lx),
                "ylabel": _title(ly),
                "xticks": xa.ticks() + xticks,
                "yticks": ya.ticks(),
                "legend": legend,
                "texts": [],
                "series": series,
            }
        )
    if axes:
        axes[0]["title"] = _title(layout)
        axes[0]["texts"] = [str(a.get("text")) for a in layout.get("annotations") or [] if a.get("text")][:200]
    return {"version": 1, "library": "plotly", "title": _title(layout), "axes": axes, "unextracted": unextracted}


def _axis_values(traces, which):
    """Every value a group of traces places on its x (or y) axis: decides the axis type."""
    out = []
    for tr in traces:
        t = tr.get("type") or "scatter"
        horizontal = tr.get("orientation") == "h"
        if t in _GRID_TYPES or t in _SLICE_TYPES:
            continue
        if t in ("box", "violin") and tr.get(which) is None:
            # a box without positions sits at its trace name (on the position axis)
            horizontal = horizontal or (tr.get("x") is not None and tr.get("y") is None)
            pos_axis = "y" if horizontal else "x"
            if which == pos_axis and tr.get("name") is not None:
                out.append(str(tr["name"]))
            continue
        fx, fy = _POINT_FIELDS.get(t, ("x", "y"))
        field = fx if which == "x" else fy
        v = _plain(tr.get(field))
        if isinstance(v, list):
            v = _multicategory(v)
            out.extend(v if v and isinstance(v[0], list) else _flat(v))
    return out
