"""Figures a program only *displays* become its outputs; Python 2 programs are converted.

Two mining losses on real repositories are programs whose results exist but are never written:

- **Displayed figures.** Notebooks show matplotlib figures inline at the end of a cell, and scripts
  call ``plt.show()``; the miner saw "writes no outputs" and dropped them (19 files in the yield
  survey). :func:`capture_figures` rewrites such a program so every figure it would display is
  saved, in display order, as ``pred_results/figure_<n>.png`` -- the gold run then produces the
  figures and the plot recorder judges them by their data. Only programs that import matplotlib or
  seaborn and write nothing else are changed.
- **Python 2.** :func:`python2_to_3` runs the standard 2to3 fixers (``lib2to3``, or the ``fissix``
  fork where the standard library no longer has it) and keeps the result only if it parses.
"""

from __future__ import annotations

import ast
import warnings
from typing import Any

__all__ = ["FIGURE_PREFIX", "SAVE_FN", "capture_figures", "insertion_line", "python2_to_3"]

SAVE_FN = "_veriforge_save_figures"
FIGURE_PREFIX = "figure_"
_PLOT_MODULES = frozenset({"matplotlib", "seaborn"})
_SHOW_OWNERS = frozenset({"plt", "pyplot", "matplotlib.pyplot", "pylab", "sns", "seaborn"})

_HELPER = f'''
def {SAVE_FN}(*_args, **_kwargs):  # added by veriforge: a displayed figure is saved as an output
    import matplotlib.pyplot as _plt

    for _num in _plt.get_fignums():
        {SAVE_FN}.count = getattr({SAVE_FN}, "count", 0) + 1
        _plt.figure(_num).savefig(f"pred_results/{FIGURE_PREFIX}{{{SAVE_FN}.count}}.png")
    _plt.close("all")

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


def capture_figures(
    source: str, tree: ast.Module, imports: list[str], kind: str, helpers_draw: bool = False
) -> str | None:
    """``source`` changed to save the figures it displays, or None when it does not plot.

    Display points: every ``plt.show()`` call (replaced by the save), the end of every notebook
    cell (where Jupyter shows a cell's open figures) and the end of the program (figures still
    open when a script ends). Figures are closed once saved, so each is saved once.
    """
    if not helpers_draw and (not _PLOT_MODULES & set(imports) or not draws(tree)):
        return None  # (helpers_draw: a vendored helper the program calls draws the figures)
    lines = source.splitlines(keepends=True)
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
    at = _future_end(tree)
    return "".join(lines[:at]) + _HELPER + "".join(lines[at:])


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
