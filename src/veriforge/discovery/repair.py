"""Stage 4' -- repair gold programs that fail only because a library moved on (or the machine differs).

Even in an environment of the repository's era some code drifts: the era cut is relaxed for a
package, or Python 3.11 forces a newer release than the authors used. Such failures are mechanical
(``np.float``, ``DataFrame.append``, ``normed=``, ``sklearn.cross_validation`` ...) and so are their
fixes. A :class:`Rule` pairs an *error pattern* with a *rewrite*; :func:`apply_rules` applies a rule
only when the gold run failed with an error it matches (never pre-emptively), the build re-runs the
program, and the unified diff is recorded in the task (``task.json`` ``veriforge.repairs`` and
``build_report.json``), so the gold program in the task is the repaired one and the change is visible.

Rules that change behaviour on *this machine* only (``Pool(cpu_count() - 2)`` on a 2-core machine)
are marked ``kind="machine"``. :func:`model_repair` asks a configured model for a minimal fix when no
rule matches; its answer is accepted only if it is a small change of the program (the model must not
get to rewrite the analysis).
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_MODEL_CHANGED_LINES",
    "RULES",
    "Repair",
    "Rule",
    "apply_rules",
    "matching_rule",
    "model_repair",
    "unified_diff",
]

MAX_MODEL_CHANGED_LINES = 12
"""A model repair may change at most this many lines (or a fifth of the program, if more)."""


@dataclass(frozen=True)
class Rule:
    """``error`` (searched in the failed run's stderr) -> ``rewrite(source, match)`` (None: not applicable)."""

    name: str
    error: re.Pattern[str]
    rewrite: Callable[[str, re.Match[str]], str | None]
    kind: str = "drift"  # "drift" (library API moved) | "machine" (machine-dependent code)
    why: str = ""


@dataclass
class Repair:
    """One applied repair: what matched, what changed, whether the re-run passed."""

    by: str  # "rule:<name>" | "model"
    error: str
    diff: str
    ok: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"by": self.by, "error": self.error, "diff": self.diff, "ok": self.ok}


def unified_diff(before: str, after: str, name: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
        )
    )


# -- helpers -------------------------------------------------------------------------------------


def _aliases(source: str, module: str) -> list[str]:
    """Names ``module`` is bound to in ``source`` (``import numpy as np`` -> ["numpy", "np"])."""
    names = {module}
    names.update(re.findall(rf"^\s*import\s+{re.escape(module)}\s+as\s+(\w+)", source, re.M))
    return sorted(names, key=len, reverse=True)


def _sub_attr(source: str, module: str, mapping: dict[str, str]) -> str | None:
    """Replace ``<alias>.<old>`` (a whole attribute, not a prefix) by ``mapping[old]``."""
    alias = "|".join(re.escape(a) for a in _aliases(source, module))
    pattern = re.compile(rf"(?<![\w.])(?:{alias})\.({'|'.join(map(re.escape, mapping))})\b(?!\s*=[^=])")
    new = pattern.sub(lambda m: mapping[m.group(1)].replace("{mod}", m.group(0).rsplit(".", 1)[0]), source)
    return new if new != source else None


def _offsets(source: str) -> list[int]:
    starts, pos = [], 0
    for line in source.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    starts.append(pos)
    return starts


def _replace_spans(source: str, spans: list[tuple[int, int, str]]) -> str | None:
    if not spans:
        return None
    out = source
    for start, end, text in sorted(spans, reverse=True):
        out = out[:start] + text + out[end:]
    return out if out != source else None


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _insert_helper(source: str, helper: str) -> str:
    """Put ``helper`` after the module docstring and ``from __future__`` imports."""
    tree = _parse(source)
    line = 0
    if tree is not None:
        for node in tree.body:
            is_doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            if is_doc or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
                line = node.end_lineno or line
                continue
            break
    lines = source.splitlines(keepends=True)
    return "".join(lines[:line]) + helper + "".join(lines[line:])


# -- rewrites ------------------------------------------------------------------------------------

NUMPY_ATTRS = {
    "float": "float",
    "int": "int",
    "bool": "bool",
    "object": "object",
    "complex": "complex",
    "str": "str",
    "long": "int",
    "unicode": "str",
    "float_": "{mod}.float64",
    "complex_": "{mod}.complex128",
    "unicode_": "{mod}.str_",
    "string_": "{mod}.bytes_",
    "NaN": "{mod}.nan",
    "NAN": "{mod}.nan",
    "Inf": "{mod}.inf",
    "Infinity": "{mod}.inf",
    "infty": "{mod}.inf",
    "PINF": "{mod}.inf",
    "NINF": "-{mod}.inf",
    "product": "{mod}.prod",
    "cumproduct": "{mod}.cumprod",
    "alltrue": "{mod}.all",
    "sometrue": "{mod}.any",
    "row_stack": "{mod}.vstack",
    "mat": "{mod}.asmatrix",
    "asscalar": "(lambda _v: {mod}.asarray(_v).item())",
    "round_": "{mod}.round",
    "in1d": "{mod}.isin",
}
"""numpy names removed in 1.20-2.0 -> what replaces them (``{mod}`` = the alias used)."""


def _numpy_attr(source: str, m: re.Match[str]) -> str | None:
    if (m.group("name") or m.group("name2")) not in NUMPY_ATTRS:
        return None
    # fix every removed alias at once: a script using np.float usually uses np.int too
    return _sub_attr(source, "numpy", {k: v for k, v in NUMPY_ATTRS.items() if re.search(rf"\.{k}\b", source)})


APPEND_HELPER = '''

def _vf_append(obj, *args, **kwargs):
    """veriforge repair: DataFrame/Series.append was removed in pandas 2.0; other objects unchanged."""
    import pandas as _pd

    if not isinstance(obj, (_pd.DataFrame, _pd.Series)):
        return obj.append(*args, **kwargs)
    other = args[0] if args else kwargs.pop("other")
    ignore_index, sort = kwargs.get("ignore_index", False), kwargs.get("sort", False)
    if isinstance(other, list):
        parts = other if other and isinstance(other[0], (_pd.DataFrame, _pd.Series)) else [_pd.DataFrame(other)]
    elif isinstance(obj, _pd.DataFrame) and isinstance(other, (dict, _pd.Series)):
        parts = [_pd.DataFrame([other])]
    else:
        parts = [other]
    return _pd.concat([obj, *parts], ignore_index=ignore_index, sort=sort)

'''


def _pandas_append(source: str, m: re.Match[str]) -> str | None:
    """Every ``X.append(...)`` becomes ``_vf_append(X, ...)``: the helper concatenates pandas objects
    and calls ``append`` as before on anything else (lists), so no type inference is needed."""
    tree = _parse(source)
    if tree is None or "_vf_append" in source:
        return None
    starts = _offsets(source)
    spans: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and node.func.value.end_lineno is not None
        ):
            recv = node.func.value
            # "X.append(" -> "_vf_append(X, " : replace from X's start to the "(" after "append"
            start = starts[recv.lineno - 1] + recv.col_offset
            attr_end = starts[node.func.end_lineno - 1] + (node.func.end_col_offset or 0)
            paren = source.index("(", attr_end)
            receiver = ast.get_source_segment(source, recv) or ""
            sep = "" if not node.args and not node.keywords else ", "
            spans.append((start, paren + 1, f"_vf_append({receiver}{sep}"))
    # nested appends overlap; keep the outermost only
    spans.sort()
    kept: list[tuple[int, int, str]] = []
    for span in spans:
        if kept and span[0] < kept[-1][1]:
            continue
        kept.append(span)
    new = _replace_spans(source, kept)
    return _insert_helper(new, APPEND_HELPER) if new else None


def _text(pattern: str, repl: str) -> Callable[[str, re.Match[str]], str | None]:
    rx = re.compile(pattern)

    def rewrite(source: str, _m: re.Match[str]) -> str | None:
        new = rx.sub(repl, source)
        return new if new != source else None

    return rewrite


KEYWORD_RENAMES = {
    "normed": "density",  # matplotlib hist / numpy histogram
    "lr": "learning_rate",  # keras optimizers
    "nb_epoch": "epochs",  # keras fit
    "n_iter": "max_iter",  # sklearn SGD / TSNE
}
CALL_KEYWORD_RENAMES = {
    "facets": ("facet_grid", "rows"),  # plotnine 0.13: facet_grid(facets="a~b") -> rows= (formula kept)
}
"""Keyword renames that are only right inside calls of one function: keyword -> (function, new name)."""


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _keyword(source: str, m: re.Match[str]) -> str | None:
    old = m.group("kw")
    only, new_name = CALL_KEYWORD_RENAMES.get(old, (None, KEYWORD_RENAMES.get(old)))
    tree = _parse(source)
    if new_name is None or tree is None:
        return None
    starts = _offsets(source)
    spans = [
        (starts[k.lineno - 1] + k.col_offset, starts[k.lineno - 1] + k.col_offset + len(old), new_name)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and (only is None or _call_name(node) == only)
        for k in node.keywords
        if k.arg == old and source.startswith(old, starts[k.lineno - 1] + k.col_offset)
    ]
    return _replace_spans(source, spans)


def _seaborn_style(source: str, m: re.Match[str]) -> str | None:
    def fix(mm: re.Match[str]) -> str:
        name = mm.group(2)
        return f"{mm.group(1)}{name.replace('seaborn', 'seaborn-v0_8', 1)}{mm.group(1)}"

    new = re.sub(r"""(['"])(seaborn(?:-[\w-]+)?)\1""", fix, source)
    return new if new != source else None


def _scipy_numpy_name(source: str, name: str) -> str | None:
    """``from scipy import mean`` (numpy re-exports removed from scipy's namespace) -> from numpy."""
    import_line = re.compile(rf"^(\s*)from scipy import ([^\n]*\b{re.escape(name)}\b[^\n]*)$", re.M)
    mm = import_line.search(source)
    if mm:
        names = [n.strip() for n in mm.group(2).strip("() ").split(",") if n.strip()]
        rest = [n for n in names if n.split(" as ")[0].strip() != name]
        moved = [n for n in names if n.split(" as ")[0].strip() == name]
        indent = mm.group(1)
        lines = ([f"{indent}from scipy import {', '.join(rest)}"] if rest else []) + [
            f"{indent}from numpy import {', '.join(moved)}"
        ]
        return source[: mm.start()] + "\n".join(lines) + source[mm.end() :]
    return _sub_attr(source, "scipy", {name: f"__import__('numpy').{name}"})


def _cpu_count(source: str, m: re.Match[str]) -> str | None:
    rx = re.compile(r"(?<![\w.])((?:[\w.]+\.)?cpu_count\(\)\s*-\s*\d+)")
    new = rx.sub(lambda mm: f"max(1, {mm.group(1)})", source)
    return new if new != source else None


_TICKLABEL_SHIM = """\
import matplotlib.axis as _vf_axis  # veriforge repair: matplotlib < 3.5 fitted tick labels to the ticks
_vf_set_ticklabels = _vf_axis.Axis.set_ticklabels


def _vf_fit_ticklabels(self, labels, *args, **kwargs):
    labels = list(labels)
    if isinstance(self.get_major_locator(), __import__("matplotlib.ticker").ticker.FixedLocator):
        n = len(self.get_major_locator().locs)
        labels = labels[:n] + [""] * (n - len(labels))
    return _vf_set_ticklabels(self, labels, *args, **kwargs)


_vf_axis.Axis.set_ticklabels = _vf_fit_ticklabels
"""


def _ticklabel_shim(source: str, m: re.Match[str]) -> str | None:
    """Old matplotlib used the first N labels for N fixed ticks (or left surplus ticks blank);
    3.5+ raises. The shim restores that for this program only, before anything is plotted."""
    if "_vf_fit_ticklabels" in source:
        return None
    from veriforge.discovery.display import insertion_line

    lines = source.splitlines(keepends=True)
    at = insertion_line(source)
    return "".join(lines[:at]) + _TICKLABEL_SHIM + "".join(lines[at:])


_MOD = r"module '{}' has no attribute '(?P<name>\w+)'"

RULES: list[Rule] = [
    Rule(
        "numpy-removed-alias",
        re.compile(_MOD.format("numpy") + r"|`np\.(?P<name2>\w+)` was removed in the NumPy 2\.0 release"),
        _numpy_attr,
        why="numpy removed np.float/np.int/... aliases (1.24) and more names in 2.0",
    ),
    Rule(
        "pandas-append",
        re.compile(r"'(?:DataFrame|Series)' object has no attribute 'append'"),
        _pandas_append,
        why="DataFrame.append / Series.append removed in pandas 2.0 (pd.concat)",
    ),
    Rule(
        "pandas-ix",
        re.compile(r"'(?:DataFrame|Series)' object has no attribute 'ix'"),
        _text(r"\.ix\[", ".loc["),
        why=".ix removed in pandas 1.0 (label-based .loc)",
    ),
    Rule(
        "pandas-as-matrix",
        re.compile(r"'(?:DataFrame|Series)' object has no attribute 'as_matrix'"),
        _text(r"\.as_matrix\(\s*\)", ".to_numpy()"),
        why=".as_matrix() removed in pandas 1.0",
    ),
    Rule(
        "pandas-iteritems",
        re.compile(r"'(?:DataFrame|Series)' object has no attribute 'iteritems'"),
        _text(r"\.iteritems\(", ".items("),
        why=".iteritems() removed in pandas 2.0",
    ),
    Rule(
        "pandas-sort",
        re.compile(r"'(?:DataFrame|Series)' object has no attribute 'sort'"),
        _text(r"\.sort\(\s*columns\s*=", ".sort_values(by="),
        why="DataFrame.sort(columns=) removed in pandas 0.20",
    ),
    Rule(
        "pandas-module-names",
        re.compile(_MOD.format("pandas")),
        lambda s, m: _sub_attr(
            s, "pandas", {"datetime": "__import__('datetime').datetime", "np": "__import__('numpy')"}
        ),
        why="pd.datetime / pd.np removed in pandas 2.0",
    ),
    Rule(
        "renamed-keyword",
        re.compile(
            r"unexpected keyword argument '(?P<kw>" + "|".join([*KEYWORD_RENAMES, *CALL_KEYWORD_RENAMES]) + r")'"
            r"|Argument\(s\) not recognized: \{'(?P<kw2>lr)'"
        ),
        lambda s, m: _keyword(s, _KwMatch(m)),
        why="matplotlib normed= -> density=, keras lr= -> learning_rate=, plotnine facet_grid(facets=) -> rows=",
    ),
    Rule(
        "matplotlib-seaborn-style",
        re.compile(r"'seaborn[\w-]*' (?:is )?not (?:a valid package style|found in the style library)"),
        _seaborn_style,
        why="matplotlib 3.6 renamed the bundled seaborn styles to seaborn-v0_8-*",
    ),
    Rule(
        "matplotlib-cm-get-cmap",
        re.compile(_MOD.format(r"matplotlib\.cm") + r"|cannot import name 'get_cmap' from 'matplotlib.cm'"),
        _text(r"(?<![\w.])(?:matplotlib\.)?cm\.get_cmap\(", "__import__('matplotlib.pyplot').pyplot.get_cmap("),
        why="matplotlib.cm.get_cmap removed in 3.9 (pyplot.get_cmap remains)",
    ),
    Rule(
        "plotnine-theme-elements",
        re.compile(r"module 'plotnine\.themes' has no attribute 'element_\w+'"),
        _text(
            r"(?<![\w.])(?:plotnine\.)?themes\.(element_(?:text|rect|line|blank))\b",
            r"__import__('plotnine').\1",
        ),
        why="plotnine 0.13 stopped exposing element_* under plotnine.themes (plotnine.element_* remains)",
    ),
    Rule(
        "matplotlib-axis-bgcolor",
        re.compile(r"has no attribute 'set_axis_bgcolor'"),
        _text(r"\.set_axis_bgcolor\(", ".set_facecolor("),
        why="Axes.set_axis_bgcolor removed in matplotlib 2.2",
    ),
    Rule(
        "matplotlib-fixed-ticklabels",
        re.compile(r"The number of FixedLocator locations \(\d+\), usually from a call to set_ticks, does not match"),
        _ticklabel_shim,
        why="matplotlib 3.5 raises when set_*ticklabels gets more or fewer labels than fixed ticks",
    ),
    Rule(
        "sklearn-moved-modules",
        re.compile(
            r"No module named 'sklearn\.(?:cross_validation|grid_search|learning_curve|externals\.joblib)'"
            r"|cannot import name 'joblib' from 'sklearn\.externals'"
        ),
        lambda s, m: _text(r"sklearn\.(?:cross_validation|grid_search|learning_curve)\b", "sklearn.model_selection")(
            _text(r"from sklearn\.externals import joblib", "import joblib")(s, m) or s, m
        )
        or _text(r"sklearn\.externals\.joblib", "joblib")(s, m),
        why="sklearn.cross_validation/grid_search -> model_selection (0.20), externals.joblib -> joblib",
    ),
    Rule(
        "scipy-misc-special",
        re.compile(
            r"cannot import name '(?:comb|factorial|logsumexp)' from 'scipy\.misc'"
            r"|module 'scipy\.misc' has no attribute '(?:comb|factorial|logsumexp)'"
        ),
        _text(r"scipy\.misc(?=\s+import\s+[^\n]*\b(?:comb|factorial|logsumexp)\b|\.(?:comb|factorial|logsumexp)\b)",
              "scipy.special"),
        why="scipy.misc.comb/factorial/logsumexp moved to scipy.special (removed 1.3)",
    ),
    Rule(
        "scipy-numpy-reexport",
        re.compile(r"cannot import name '(?P<name>\w+)' from 'scipy'|module 'scipy' has no attribute '(?P<attr>\w+)'"),
        lambda s, m: _scipy_numpy_name(s, m.group("name") or m.group("attr"))
        if _is_numpy_name(m.group("name") or m.group("attr"))
        else None,
        why="scipy stopped re-exporting numpy functions (scipy.mean, scipy.sqrt, ...) in 1.12",
    ),
    Rule(
        "cpu-count-minus-k",
        re.compile(
            r"Number of processes must be at least 1|n_jobs == 0 in Parallel has no meaning"
            r"|max_workers must be greater than 0"
        ),
        _cpu_count,
        kind="machine",
        why="cpu_count() - k is < 1 on a small machine; at least one worker",
    ),
]


class _KwMatch:
    """Adapts the two alternatives of the keyword pattern to one ``group("kw")``."""

    def __init__(self, m: re.Match[str]) -> None:
        self.m = m

    def group(self, name: str) -> str:
        return self.m.group("kw") or self.m.group("kw2") or ""


def _is_numpy_name(name: str | None) -> bool:
    import numpy

    return bool(name) and hasattr(numpy, name or "")


def _error_text(stderr: str) -> str:
    """The failing exception: from the last ``Traceback`` on (earlier warnings must not match)."""
    idx = stderr.rfind("Traceback (most recent call last)")
    return stderr[idx:] if idx >= 0 else stderr[-2000:]


def matching_rule(stderr: str, source: str | None = None) -> tuple[Rule, re.Match[str]] | None:
    """The first rule whose error pattern matches the failure (and, given ``source``, that applies)."""
    text = _error_text(stderr)
    for rule in RULES:
        m = rule.error.search(text)
        if m and (source is None or rule.rewrite(source, m) is not None):
            return rule, m
    return None


def apply_rules(source: str, stderr: str) -> tuple[str, Rule] | None:
    """``(repaired source, rule)`` when a rule matches the failure and changes the program; else None."""
    hit = matching_rule(stderr, source)
    if hit is None:
        return None
    rule, m = hit
    new = rule.rewrite(source, m)
    return (new, rule) if new is not None else None


MODEL_PROMPT = """A research script fails in an environment with newer library versions than it was written for.
Fix ONLY what the error requires (a renamed or removed library API, a machine assumption), changing as few
lines as possible and never the analysis itself: same inputs, same computations, same outputs.
Answer with the complete fixed program in one ```python code block and nothing else.

Error:
```
{error}
```

Program {name}:
```python
{source}
```"""

_BLOCK = re.compile(r"```(?:python)?\n(.*?)```", re.S)


def _changed_lines(before: str, after: str) -> int:
    sm = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal")


def model_repair(source: str, stderr: str, name: str, client: Any) -> str | None:
    """A minimal fix proposed by ``client`` (a :class:`veriforge.llm.LLMClient`), or None.

    Rejected (None) when the reply has no program, does not parse, is unchanged, or changes more than
    ``max(MAX_MODEL_CHANGED_LINES, lines / 5)`` lines -- a bigger edit is a rewrite, not a repair.
    """
    from veriforge.discovery.evalsynth.model import run_sync

    prompt = MODEL_PROMPT.format(error=_error_text(stderr)[-3000:], name=name, source=source)
    resp = run_sync(client.chat([{"role": "user", "content": prompt}], temperature=0.0, max_tokens=8192))
    text = resp.texts[0] if resp.texts else ""
    m = _BLOCK.search(text)
    program = m.group(1) if m else None
    if not program or program.strip() == source.strip() or _parse(program) is None:
        return None
    budget = max(MAX_MODEL_CHANGED_LINES, len(source.splitlines()) // 5)
    if _changed_lines(source, program) > budget:
        return None
    return program if program.endswith("\n") else program + "\n"
