"""Figures a program only *displays* become its outputs; Python 2 programs are converted.

Two mining losses on real repositories are programs whose results exist but are never written:

- **Displayed figures.** Notebooks show matplotlib figures inline at the end of a cell, and scripts
  call ``plt.show()``; the miner saw "writes no outputs" and dropped them (19 files in the yield
  survey). :func:`capture_figures` rewrites such a program so every figure it would display is
  saved, in display order, as ``pred_results/figure_<n>.png`` -- the gold run then produces the
  figures and the plot recorder judges them by their data. Only programs that import matplotlib or
  seaborn and write nothing else are changed.
- **Displayed plotly figures.** The same notebooks draw with plotly: ``fig.show()``, a figure as a
  cell's last expression (Jupyter displays it), ``display(fig)``, ``iplot(fig)``. Those display
  points are rewritten to write the figure with ``plotly.io.write_json`` as
  ``pred_results/figure_<n>.json`` (numbered with the matplotlib figures, in display order); the
  recorder records its traces there, so no image renderer (kaleido, a browser) is needed. Which
  object is a plotly figure is decided when the program runs (``isinstance`` of plotly's
  ``BaseFigure``): anything else is shown exactly as before.
- **Python 2.** :func:`python2_to_3` runs the standard 2to3 fixers (``lib2to3``, or the ``fissix``
  fork where the standard library no longer has it) and keeps the result only if it parses.
"""

from __future__ import annotations

import ast
import itertools
import warnings
from typing import Any

__all__ = [
    "FIGURE_PREFIX",
    "MPL_CAPTURED",
    "PLOTLY_CAPTURED",
    "PLOTLY_SAVE_FN",
    "SAVE_FN",
    "capture_figures",
    "capture_notes",
    "insertion_line",
    "python2_to_3",
]

SAVE_FN = "_veriforge_save_figures"
PLOTLY_SAVE_FN = "_veriforge_save_plotly"
FIGURE_PREFIX = "figure_"
# shared by both savers (one numbering in display order), kept as an attribute of the program's
# module: an attribute assignment, never a subscript one, so the instruction generator
# (progops) does not read the saver as a computed column
_COUNTER = "_veriforge_figure_count"
MPL_CAPTURED = "figures it only displays are saved as pred_results/figure_<n>.png (in display order)"
PLOTLY_CAPTURED = (
    "plotly figures it only displays (fig.show(), a notebook cell's last expression, display()/iplot()) "
    "are written with plotly.io.write_json as pred_results/figure_<n>.json (in display order)"
)
_PLOT_MODULES = frozenset({"matplotlib", "seaborn"})
_SHOW_OWNERS = frozenset({"plt", "pyplot", "matplotlib.pyplot", "pylab", "sns", "seaborn"})

_COUNT_HELPER = f'''
def _veriforge_next_figure():  # added by veriforge: figures are numbered in display order
    import sys as _sys

    _module = _sys.modules[__name__]
    _module.{_COUNTER} = getattr(_module, "{_COUNTER}", 0) + 1
    return _module.{_COUNTER}

'''

_HELPER = f'''
def {SAVE_FN}(*_args, **_kwargs):  # added by veriforge: a displayed figure is saved as an output
    import matplotlib.pyplot as _plt

    for _num in _plt.get_fignums():
        _n = _veriforge_next_figure()
        _plt.figure(_num).savefig(f"pred_results/{FIGURE_PREFIX}{{_n}}.png")
    _plt.close("all")

'''

_PLOTLY_HELPER = f'''
def {PLOTLY_SAVE_FN}(obj):  # added by veriforge: a displayed plotly figure is saved as an output
    try:
        from plotly.basedatatypes import BaseFigure as _BaseFigure
    except ImportError:
        return False
    if not isinstance(obj, _BaseFigure):
        return False
    import plotly.io as _pio

    _n = _veriforge_next_figure()
    _pio.write_json(obj, f"pred_results/{FIGURE_PREFIX}{{_n}}.json")
    return True


class _veriforge_shown:  # added by veriforge: fig.show() saves a plotly figure instead of showing it
    def __new__(cls, obj):
        try:
            from plotly.basedatatypes import BaseFigure as _BaseFigure
        except ImportError:
            return obj
        if not isinstance(obj, _BaseFigure):
            return obj  # anything else keeps its own show()
        self = super().__new__(cls)
        self.fig = obj
        return self

    def show(self, *_args, **_kwargs):
        {PLOTLY_SAVE_FN}(self.fig)


def _veriforge_display(obj):  # added by veriforge: a cell's last expression, displayed by Jupyter
    {PLOTLY_SAVE_FN}(obj)


def _veriforge_display_via(get_show):  # added by veriforge: display(fig) / iplot(fig) save plotly figures
    def call(*args, **kwargs):
        rest = [a for a in args if not {PLOTLY_SAVE_FN}(a)]
        if not rest and args:
            return None
        try:
            show = get_show()
        except NameError:  # Jupyter's built-in display(), used without an import
            try:  # looked up by name: an optional fallback must not make IPython a dependency
                show = __import__("importlib").import_module("IPython.display").display
            except ImportError:
                show = print
        return show(*rest, **kwargs)

    return call

'''


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return node.id if isinstance(node, ast.Name) else ""


def _show_calls(tree: ast.Module) -> list[ast.Call]:
    """``plt.show()`` (and ``pyplot.show()``, ``sns.plt.show()``...) calls anywhere in the module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "show":
            if _dotted(node.func.value) in _SHOW_OWNERS:
                found.append(node)
    return found


def insertion_line(source: str) -> int:
    """Index of the first line where code may be added at the top of ``source`` (after its
    docstring and ``from __future__`` imports; 0 when it does not parse)."""
    try:
        return _future_end(ast.parse(source))
    except SyntaxError:
        return 0


_DRAW_CALLS = frozenset(
    {"plot", "hist", "bar", "barh", "scatter", "boxplot", "violinplot", "imshow", "heatmap", "errorbar",
     "pie", "subplots", "figure", "contour", "contourf", "pcolormesh", "fill_between", "step", "stem",
     "lineplot", "scatterplot", "barplot", "histplot", "kdeplot", "regplot", "lmplot",
     "catplot", "pointplot", "stripplot", "swarmplot", "countplot", "displot", "relplot", "pairplot",
     "jointplot", "clustermap", "matshow", "semilogy", "semilogx", "loglog"}
)


def draws(tree: ast.AST) -> bool:
    """Whether the program calls something that draws (importing matplotlib for a t-test's
    p-value table is not a figure: capturing it would only make a task without outputs)."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute | ast.Name)
        and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) in _DRAW_CALLS
        for n in ast.walk(tree)
    )


def _future_end(tree: ast.Module) -> int:
    """Line after the module docstring and ``from __future__`` imports (they must stay first)."""
    end = 0
    for i, stmt in enumerate(tree.body):
        is_doc = i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        if is_doc or (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            end = stmt.end_lineno or stmt.lineno
        else:
            break
    return end


_PLOTLY_FIGURE_CALLS = frozenset({"Figure", "FigureWidget", "make_subplots"})
_PLOTLY_OWNERS = frozenset({"px", "plotly.express", "ff", "plotly.figure_factory"})
_DISPLAY_NAMES = frozenset({"display", "iplot"})
_DISPLAY_DOTTED = frozenset({"pio.show", "plotly.io.show", "io.show"})
_PLT_SHOWS = frozenset(f"{owner}.show" for owner in _SHOW_OWNERS)


def _plotly_draws(tree: ast.Module) -> bool:
    """Whether the program builds a plotly figure (``go.Figure``, ``go.FigureWidget``,
    ``make_subplots``, a ``px.*`` or ``ff.create_*`` call)."""
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        if isinstance(n.func, ast.Name) and n.func.id in _PLOTLY_FIGURE_CALLS - {"Figure"}:
            return True
        if isinstance(n.func, ast.Attribute):
            if n.func.attr in _PLOTLY_FIGURE_CALLS or _dotted(n.func.value) in _PLOTLY_OWNERS:
                return True
    return False


def _offset(line_starts: list[int], lineno: int, col: int) -> int:
    """Byte offset in ``raw`` of an AST position (1-based line, UTF-8 byte column)."""
    return line_starts[lineno - 1] + col


def _plotly_display_edits(source: str, tree: ast.Module, kind: str) -> list[tuple[int, int, str]]:
    """``[(byte offset, order, text)]`` insertions that route plotly display points to the saver.

    ``x.show(...)`` -> ``_veriforge_shown(x).show(...)`` (any receiver except pyplot/seaborn: only a
    plotly figure is affected when it runs); ``display(...)``/``iplot(...)``/``pio.show(...)`` ->
    ``_veriforge_display_via(lambda: display)(...)`` (Jupyter's built-in ``display`` needs no import:
    an undefined name falls back to IPython's); a notebook cell's last top-level expression (unless
    it ends with ``;``, which hides it in Jupyter) -> ``_veriforge_display(expr)``. Order 0 closes
    a wrap before order 1 opens another at the same offset.
    """
    raw = source.encode("utf-8")
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line.encode("utf-8")))
    edits: list[tuple[int, int, str]] = []

    def wrap(node: ast.expr, opener: str) -> None:
        if node.end_lineno is None or node.end_col_offset is None:
            return
        edits.append((_offset(starts, node.lineno, node.col_offset), 1, opener))
        edits.append((_offset(starts, node.end_lineno, node.end_col_offset), 0, ")"))

    handled: set[int] = set()
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr == "show" and _dotted(f) not in _DISPLAY_DOTTED | _PLT_SHOWS:
            wrap(f.value, "_veriforge_shown(")
            handled.add(id(n))
        elif (isinstance(f, ast.Name) and f.id in _DISPLAY_NAMES) or (
            isinstance(f, ast.Attribute) and (f.attr in _DISPLAY_NAMES or _dotted(f) in _DISPLAY_DOTTED)
        ):
            wrap(f, "_veriforge_display_via(lambda: ")  # resolved at the call: display may be Jupyter's
            handled.add(id(n))
    if kind == "notebook":
        cell_starts = [i + 1 for i, line in enumerate(source.splitlines()) if line.startswith("# In[")]
        bounds = [*cell_starts, len(source.splitlines()) + 2]
        for lo, hi in itertools.pairwise(bounds):
            body = [st for st in tree.body if lo <= st.lineno < hi]
            last = body[-1] if body else None
            if not isinstance(last, ast.Expr) or id(last.value) in handled:
                continue
            if isinstance(last.value, ast.Constant):
                continue  # a docstring or a bare literal: never a figure
            tail = raw[_offset(starts, last.end_lineno or last.lineno, last.end_col_offset or 0) :]
            if tail.split(b"\n", 1)[0].lstrip().startswith(b";"):
                continue
            wrap(last.value, "_veriforge_display(")
    return edits


def _apply_edits(source: str, edits: list[tuple[int, int, str]]) -> str:
    raw = source.encode("utf-8")
    out, prev = [], 0
    for pos, _, text in sorted(edits, key=lambda e: (e[0], e[1])):
        out.append(raw[prev:pos])
        out.append(text.encode("utf-8"))
        prev = pos
    out.append(raw[prev:])
    return b"".join(out).decode("utf-8")


def capture_notes(captured: str) -> list[str]:
    """What :func:`capture_figures` changed, in words (for ``source_changes`` and warnings)."""
    notes = []
    if f"def {SAVE_FN}(" in captured:
        notes.append(MPL_CAPTURED)
    if f"def {PLOTLY_SAVE_FN}(" in captured:
        notes.append(PLOTLY_CAPTURED)
    return notes


def capture_figures(
    source: str, tree: ast.Module, imports: list[str], kind: str, helpers_draw: bool = False
) -> str | None:
    """``source`` changed to save the figures it displays, or None when it does not plot.

    Matplotlib display points: every ``plt.show()`` call (replaced by the save), the end of every
    notebook cell (where Jupyter shows a cell's open figures) and the end of the program (figures
    still open when a script ends). Figures are closed once saved, so each is saved once. Plotly
    display points (``fig.show()``, a cell's last expression, ``display``/``iplot``) write the
    figure as ``figure_<n>.json`` (see :func:`_plotly_display_edits`); a plotly program with none
    of them displays nothing and is not changed.
    """
    # helpers_draw: a vendored helper the program calls draws the (matplotlib) figures
    mpl = helpers_draw or (bool(_PLOT_MODULES & set(imports)) and draws(tree))
    plotly = any(m == "plotly" or m.startswith("plotly.") for m in imports) and _plotly_draws(tree)
    helpers = ""
    if plotly:
        edits = _plotly_display_edits(source, tree, kind)
        if edits:
            source = _apply_edits(source, edits)
            tree = ast.parse(source)
            helpers += _PLOTLY_HELPER
    if not mpl and not helpers:
        return None
    lines = source.splitlines(keepends=True)
    if mpl:
        lines = _matplotlib_points(lines, tree, kind)
        helpers = _HELPER + helpers
    at = _future_end(tree)
    return "".join(lines[:at]) + _COUNT_HELPER + helpers + "".join(lines[at:])


def _matplotlib_points(lines: list[str], tree: ast.Module, kind: str) -> list[str]:
    """``lines`` with ``plt.show()`` replaced by the saver, and a save at every notebook cell's
    end and at the program's end."""
    # replace show() calls, last first so earlier positions stay valid (columns are UTF-8 bytes)
    for call in sorted(_show_calls(tree), key=lambda c: (c.lineno, c.col_offset), reverse=True):
        if call.lineno != call.end_lineno:
            continue
        raw = lines[call.lineno - 1].encode("utf-8")
        new = raw[: call.col_offset] + f"{SAVE_FN}()".encode() + raw[call.end_col_offset or 0 :]
        lines[call.lineno - 1] = new.decode("utf-8")
    if kind == "notebook":
        out: list[str] = []
        for i, line in enumerate(lines):
            if line.startswith("# In[") and i > 0:
                out.append(f"{SAVE_FN}()\n")  # end of the previous cell
            out.append(line)
        lines = out
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    lines.append(f"{SAVE_FN}()\n")
    return lines


def python2_to_3(source: str) -> str | None:
    """``source`` converted by the standard 2to3 fixers, or None when no converter is available,
    the converter fails, or the result still does not parse (then it was not Python 2)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from lib2to3 import refactor  # type: ignore[import-not-found]
    except ImportError:
        try:
            from fissix import refactor  # type: ignore[import-not-found,no-redef]
        except ImportError:
            return None
    pkg = refactor.__name__.rsplit(".", 1)[0]
    tool: Any = refactor.RefactoringTool(refactor.get_fixers_from_package(f"{pkg}.fixes"))
    text = source if source.endswith("\n") else source + "\n"
    try:
        converted = str(tool.refactor_string(text, "<program>"))
    except Exception:  # lib2to3's own parse errors: not Python 2 either
        return None
    try:
        ast.parse(converted)
    except SyntaxError:
        return None
    return converted
