"""Matplotlib plot-data recorder, installed as ``sitecustomize`` into every D3-Gym program run.

Why: a figure's pixels are a poor witness of its science (two swapped series or a missing
category keep SSIM high, a restyled correct figure drops it). So every program run (the gold
program and the agent's) records *what each axes plots* at ``savefig`` time, and figure outputs
are judged on that data (see ``evalsynth.runtime.check_figure``).

How: this file is copied into the run folder as ``sitecustomize.py`` and put on ``PYTHONPATH``
(:mod:`veriforge.discovery.plotrec`). It imports nothing heavy at start-up: a ``sys.meta_path``
finder waits for ``matplotlib.figure`` to be imported by the program, then wraps
``Figure.savefig`` (``pyplot.savefig`` and seaborn's ``savefig`` go through it). After the
original ``savefig`` has drawn the figure, every axes is walked and the data written as JSON to
``<root>/.plotdata/<figure path relative to root>.json`` where ``<root>`` is
``$VERIFORGE_PLOTDATA_ROOT`` (default ``pred_results``). A manifest ``.plotdata/_manifest.json``
lists every ``savefig`` call, so a planner can tell "recorded nothing" from "recorder absent".

Plotly figures are recorded too (section "plotly" below): when ``plotly.io`` loads, its
``write_image``/``write_html``/``write_json`` are wrapped, and the figure object's traces are
written in the same schema (``"library": "plotly"``).

Rules: standard library at module level (the task's interpreter may be any Python ≥ 3.8);
the recorder never raises into the program (a failure is written to the manifest); no veriforge
imports. Style (colours, markers, widths, dpi, figure size) is deliberately not recorded.
"""

import functools
import json
import os
import sys

ROOT_ENV = "VERIFORGE_PLOTDATA_ROOT"
PLOTDATA_DIR = ".plotdata"
MANIFEST = "_manifest.json"
MAX_VALUES = 20000  # arrays larger than this are summarised (shape, stats, a strided sample)


def _root():
    return os.path.abspath(os.environ.get(ROOT_ENV) or "pred_results")


def _floats(values):
    """A flat list of floats (NaN for anything not numeric, e.g. masked values)."""
    import numpy as np

    try:
        a = np.ma.filled(np.ma.asarray(values, dtype=float), np.nan)
    except (TypeError, ValueError):
        out = []
        for v in np.ravel(np.asarray(values, dtype=object)):
            try:
                out.append(float(v))
            except (TypeError, ValueError):
                out.append(float("nan"))
        return out
    return [float(v) for v in np.ravel(a)]


def _jsonable(xs):
    # JSON has no NaN/inf; keep them as strings the evaluator turns back into floats.
    return [x if x == x and x not in (float("inf"), float("-inf")) else repr(x) for x in xs]


def _array(values):
    import numpy as np

    a = np.ma.filled(np.ma.asarray(values, dtype=float), np.nan)
    if a.size <= MAX_VALUES:
        return {"shape": list(a.shape), "values": _jsonable([float(v) for v in a.ravel()])}
    step = max(1, a.size // 2000)
    flat = a.ravel()
    finite = flat[np.isfinite(flat)]
    return {
        "shape": list(a.shape),
        "summary": {
            "mean": float(finite.mean()) if finite.size else None,
            "std": float(finite.std()) if finite.size else None,
            "min": float(finite.min()) if finite.size else None,
            "max": float(finite.max()) if finite.size else None,
        },
        "sample": _jsonable([float(v) for v in flat[::step]]),
    }


def _label(artist):
    lab = artist.get_label()
    lab = "" if lab is None else str(lab)
    return "" if lab.startswith("_") else lab


def _ticks(ax, which):
    axis = ax.xaxis if which == "x" else ax.yaxis
    out = []
    try:
        locs = axis.get_majorticklocs()
        labels = [t.get_text() for t in axis.get_majorticklabels()]
    except Exception:
        return out
    for loc, text in zip(locs, labels):  # noqa: B905 (Python 3.8+)
        out.append([float(loc), text])
    return out


def _series(ax):
    """Every data-bearing artist of ``ax`` as a plain record (in drawing order, per kind)."""
    from matplotlib.collections import LineCollection, PathCollection, PolyCollection, QuadMesh
    from matplotlib.container import BarContainer, ErrorbarContainer

    series = []
    in_container = set()
    for c in ax.containers:
        if isinstance(c, BarContainer):
            bars = []
            for p in c.patches:
                in_container.add(id(p))
                bars.append([float(p.get_x()), float(p.get_y()), float(p.get_width()), float(p.get_height())])
            orient = getattr(c, "orientation", None) or "vertical"
            series.append({"kind": "bar", "label": _label(c), "orientation": orient, "bars": bars})
        elif isinstance(c, ErrorbarContainer):
            data_line, caps, cols = c.lines
            segs = []
            for col in cols or ():
                in_container.add(id(col))
                for s in col.get_segments():
                    segs.append([float(v) for v in s.ravel()[:4]])
            for cap in caps or ():
                in_container.add(id(cap))
            if data_line is not None:
                in_container.add(id(data_line))
            series.append({"kind": "errorbar", "label": _label(c), "segments": segs})
            if data_line is not None and len(data_line.get_xdata()):
                xy = data_line.get_xydata()
                series.append(
                    {
                        "kind": "xy",
                        "label": _label(c),
                        "x": _jsonable(_floats(xy[:, 0])),
                        "y": _jsonable(_floats(xy[:, 1])),
                    }
                )
    for line in ax.lines:
        if id(line) in in_container:
            continue
        xy = line.get_xydata()
        if len(xy) == 0:
            continue
        series.append(
            {"kind": "xy", "label": _label(line), "x": _jsonable(_floats(xy[:, 0])), "y": _jsonable(_floats(xy[:, 1]))}
        )
    for col in ax.collections:
        if id(col) in in_container:
            continue
        if isinstance(col, PathCollection):
            off = col.get_offsets()
            if len(off) == 0:
                continue
            off = _floats(off)
            series.append({"kind": "xy", "label": _label(col), "x": _jsonable(off[0::2]), "y": _jsonable(off[1::2])})
        elif isinstance(col, QuadMesh):
            arr = col.get_array()
            if arr is not None:
                series.append({"kind": "grid", "label": _label(col), "array": _array(arr)})
        elif isinstance(col, LineCollection):
            segs = [[float(v) for v in s.ravel()[:4]] for s in col.get_segments() if len(s) >= 2]
            if segs:
                series.append({"kind": "errorbar", "label": _label(col), "segments": segs})
        elif isinstance(col, PolyCollection):
            verts = []
            for path in col.get_paths():
                verts.extend(_floats(path.vertices))
            if verts:
                series.append({"kind": "area", "label": _label(col), "xy": _jsonable(verts)})
    for im in ax.images:
        arr = im.get_array()
        if arr is not None:
            series.append({"kind": "grid", "label": _label(im), "array": _array(arr)})
    for p in ax.patches:
        if id(p) in in_container or type(p).__name__ != "Rectangle":
            continue
        series.append(
            {
                "kind": "bar",
                "label": _label(p),
                "orientation": "vertical",
                "bars": [[float(p.get_x()), float(p.get_y()), float(p.get_width()), float(p.get_height())]],
            }
        )
    return series


def extract_figure(fig):
    """``{"axes": [...]}``: per axes its labels, ticks, legend entries and data series."""
    axes = []
    for ax in fig.get_axes():
        if getattr(ax, "_colorbar", None) is not None or ax.get_label() == "<colorbar>":
            continue  # a colour bar restates the mapped data's range; not a series of its own
        legend = ax.get_legend()
        axes.append(
            {
                "title": ax.get_title(),
                "xlabel": ax.get_xlabel(),
                "ylabel": ax.get_ylabel(),
                "xticks": _ticks(ax, "x"),
                "yticks": _ticks(ax, "y"),
                "legend": [t.get_text() for t in legend.get_texts()] if legend is not None else [],
                "texts": [t.get_text() for t in ax.texts][:200],
                "series": _series(ax),
            }
        )
    return {"version": 1, "axes": axes}


def _sidecar(path):
    root = _root()
    rel = os.path.relpath(path, root)
    if rel.startswith(".."):
        return None, rel
    return os.path.join(root, PLOTDATA_DIR, rel + ".json"), rel


def _manifest_add(entry):
    root = _root()
    if not os.path.isdir(root):
        return
    d = os.path.join(root, PLOTDATA_DIR)
    os.makedirs(d, exist_ok=True)
    m = os.path.join(d, MANIFEST)
    try:
        with open(m, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        data = {"recorder": 1, "saved": []}
    data["saved"].append(entry)
    with open(m, "w", encoding="utf-8") as fh:
        json.dump(data, fh)


def record(fig, fname, kwargs):
    """Write the plot data of ``fig`` saved to ``fname`` (a path; file objects are not traced)."""
    if not isinstance(fname, (str, os.PathLike)):
        _manifest_add({"path": None, "recorded": False, "why": "saved to a file object"})
        return
    path = os.path.abspath(os.fspath(fname))
    if not os.path.splitext(path)[1]:
        import matplotlib

        path += "." + str(kwargs.get("format") or matplotlib.rcParams["savefig.format"])
    side, rel = _sidecar(path)
    if side is None:
        _manifest_add({"path": rel, "recorded": False, "why": "saved outside the results folder"})
        return
    data = extract_figure(fig)
    data["figure"] = rel
    os.makedirs(os.path.dirname(side), exist_ok=True)
    with open(side, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    n = sum(len(a["series"]) for a in data["axes"])
    _manifest_add({"path": rel, "recorded": True, "series": n})


def _patch(module):
    Figure = module.Figure
    if getattr(Figure.savefig, "_veriforge_recorder", False):
        return
    original = Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        result = original(self, fname, *args, **kwargs)
        try:
            record(self, fname, kwargs)
        except Exception as exc:  # never break the program being recorded
            try:
                _manifest_add({"path": str(fname), "recorded": False, "why": f"{type(exc).__name__}: {exc}"})
            except Exception:
                pass
        return result

    # pyplot copies Figure.savefig's name/qualname/docstring at import: keep them identical.
    functools.update_wrapper(savefig, original)
    savefig._veriforge_recorder = True
    Figure.savefig = savefig


# ---------------------------------------------------------------------------------- plotly
# A plotly figure holds its data (fig.to_dict()); it is recorded when written with
# write_image/write_html/write_json -- the figure object's traces, in the schema above (the
# mapping is in the companion module, plotrec_plotly.py, copied next to this file as
# _veriforge_plotrec_plotly.py). fig.write_* delegate to plotly.io.write_*, so wrapping the
# plotly.io functions records both spellings once.
PLOTLY_COMPANION = "_veriforge_plotrec_plotly"
_PLOTLY_WRITERS = ("write_image", "write_html", "write_json")
_RENDERER_WORDS = ("kaleido", "orca", "chrome", "chromium")
_plotly_depth = [0]


def _plotly_extract(fig):
    try:
        mod = __import__(PLOTLY_COMPANION)
    except ImportError:  # imported as veriforge.discovery.plotrec_site (tests, veriforge itself)
        from veriforge.discovery import plotrec_plotly as mod
    return mod.extract_plotly(fig)


def _renderer_missing(exc):
    """Whether ``exc`` says plotly has no image renderer (no kaleido/orca, no Chrome for kaleido)."""
    text = f"{type(exc).__name__}: {exc}".lower()
    if any(w in text for w in _RENDERER_WORDS):
        return True
    tb = exc.__traceback__
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename.lower()
        if "kaleido" in fname or "_orca" in fname or "choreographer" in fname:
            return True
        tb = tb.tb_next
    return False


def record_plotly(fig, file, writer, rendered=True):
    """Write the plot data of plotly figure ``fig`` written to ``file`` by ``plotly.io.<writer>``."""
    if not isinstance(file, (str, os.PathLike)):
        _manifest_add({"path": None, "recorded": False, "library": "plotly", "why": "written to a file object"})
        return
    side, rel = _sidecar(os.path.abspath(os.fspath(file)))
    if side is None:
        why = "written outside the results folder"
        _manifest_add({"path": rel, "recorded": False, "library": "plotly", "why": why})
        return
    data = _plotly_extract(fig)
    data["figure"] = rel
    data["writer"] = writer
    data["rendered"] = bool(rendered)
    os.makedirs(os.path.dirname(side), exist_ok=True)
    with open(side, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    n = sum(len(a["series"]) for a in data["axes"])
    _manifest_add({"path": rel, "recorded": True, "series": n, "library": "plotly", "rendered": bool(rendered)})


def _plotly_placeholder(fig, file):
    """Stand-in for an image plotly cannot render here (no kaleido/Chrome): the figure's own JSON.

    The program goes on (its later cells still run) and the output exists; the evaluator knows
    from the recording (``"rendered": false``) that this file holds the figure, not pixels.
    """
    import plotly.io as pio

    with open(os.fspath(file), "w", encoding="utf-8") as fh:
        fh.write(pio.to_json(fig))


def _wrap_plotly_writer(module, name):
    original = module.__dict__.get(name)
    lazy = module.__dict__.get("__getattr__")  # plotly >= 5 imports io's submodules on first use
    if original is None and lazy is None:
        return
    if getattr(original, "_veriforge_recorder", False):
        return
    resolved = [original]

    def writer(fig, file, *args, **kwargs):
        if resolved[0] is None:
            resolved[0] = lazy(name)
        real = resolved[0]
        if _plotly_depth[0]:
            return real(fig, file, *args, **kwargs)
        _plotly_depth[0] += 1
        try:
            rendered = True
            try:
                result = real(fig, file, *args, **kwargs)
            except Exception as exc:
                if name != "write_image" or not isinstance(file, (str, os.PathLike)) or not _renderer_missing(exc):
                    raise
                _plotly_placeholder(fig, file)
                result, rendered = None, False
            try:
                record_plotly(fig, file, name, rendered)
            except Exception as exc:  # never break the program being recorded
                try:
                    _manifest_add({"path": str(file), "recorded": False, "library": "plotly",
                                   "why": f"{type(exc).__name__}: {exc}"})
                except Exception:
                    pass
            return result
        finally:
            _plotly_depth[0] -= 1

    writer.__name__ = name
    writer.__doc__ = getattr(original, "__doc__", None)
    writer._veriforge_recorder = True
    setattr(module, name, writer)


def _patch_plotly(module):
    for name in _PLOTLY_WRITERS:
        _wrap_plotly_writer(module, name)


_PATCHES = {"matplotlib.figure": _patch, "plotly.io": _patch_plotly}


class _Finder:
    """Wraps the loader of ``matplotlib.figure`` (and ``plotly.io``) so the module is patched
    right after it loads."""

    def find_spec(self, name, path=None, target=None):
        if name not in _PATCHES:
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_original = spec.loader.exec_module
        patch = _PATCHES[name]

        def exec_module(module):
            exec_original(module)
            try:
                patch(module)
            except Exception:
                pass

        spec.loader.exec_module = exec_module
        return spec


def install():
    missing = False
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])
        else:
            missing = True
    if missing and not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


if __name__ == "sitecustomize" or os.environ.get("VERIFORGE_PLOTREC_INSTALL") == "1":
    install()
