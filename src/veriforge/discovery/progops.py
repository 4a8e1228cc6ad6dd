"""What a gold program actually does, read from its syntax tree (issue 18 part 5).

A template instruction that says "fit a regression" leaves a solver guessing which rows were
kept, which columns were derived, with which constants, what was plotted and how the output is
laid out; the evaluator then compares against choices the solver could not know. This module
lists the program's operations *with their constants*: reads (file and reader options),
row filters (``df[df.x > 3]``, ``.query("...")``, z-score outlier cuts, ``dropna``), groupings
with their aggregations, computed columns, fitted models and statistical tests with their
parameters, random seeds, plots (kind, data, labels) and writes (path and writer options).

No model is needed and nothing is executed. Module-level constants (``THRESHOLD = 3``) are
substituted into the expressions that use them, column references ``df["x"]`` are rendered as
`` `x` ``, and each operation carries the *facts* (column names, numbers, strings) an
instruction must state for a solver to reproduce it: :func:`instruction_coverage` checks an
instruction against them.
"""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Operation", "dotted_name", "instruction_coverage", "operation_steps", "program_operations"]

READERS = {
    "read_csv": "table",
    "read_table": "table",
    "read_excel": "spreadsheet",
    "read_json": "JSON file",
    "read_parquet": "Parquet file",
    "read_fwf": "fixed-width table",
    "read_hdf": "HDF5 file",
    "loadtxt": "text matrix",
    "genfromtxt": "text matrix",
    "loadmat": "MATLAB file",
    "read_sql": "SQL query",
}
READER_OPTIONS = {
    "sep", "delimiter", "skiprows", "header", "index_col", "usecols", "sheet_name", "names",
    "comment", "na_values", "skipfooter", "dtype", "decimal", "encoding", "key", "parse_dates",
}  # fmt: skip
AGGREGATIONS = {
    "mean", "sum", "count", "median", "std", "var", "min", "max", "size", "agg", "aggregate",
    "nunique", "first", "last", "describe", "quantile", "sem", "prod", "cumsum", "apply", "transform",
}  # fmt: skip
PLOTS = {
    "plot": "line plot", "scatter": "scatter plot", "bar": "bar chart", "barh": "horizontal bar chart",
    "hist": "histogram", "boxplot": "box plot", "violinplot": "violin plot", "errorbar": "error-bar plot",
    "imshow": "image/heatmap", "pcolormesh": "heatmap", "contourf": "filled contour plot",
    "contour": "contour plot", "heatmap": "heatmap", "lineplot": "line plot", "scatterplot": "scatter plot",
    "barplot": "bar chart", "histplot": "histogram", "kdeplot": "density plot", "regplot": "regression plot",
    "pointplot": "point plot", "stripplot": "strip plot", "swarmplot": "swarm plot", "fill_between": "shaded band",
    "countplot": "count plot", "lmplot": "regression plot", "pairplot": "pair plot", "step": "step plot",
    "catplot": "categorical plot", "displot": "distribution plot", "relplot": "relational plot",
    "boxenplot": "letter-value plot", "jointplot": "joint plot", "ecdfplot": "ECDF plot",
    "clustermap": "clustered heatmap",
}  # fmt: skip
LABELS = {
    "set_xlabel": "x-axis label", "xlabel": "x-axis label", "set_ylabel": "y-axis label", "ylabel": "y-axis label",
    "set_title": "title", "title": "title", "suptitle": "figure title",
}  # fmt: skip
WRITERS = {"to_csv", "to_excel", "to_json", "savefig", "save", "savez", "savez_compressed", "savetxt", "dump",
           "to_parquet", "write"}  # fmt: skip
WRITER_OPTIONS = {"index", "sep", "float_format", "header", "columns", "dpi", "fmt", "delimiter", "orient",
                  "indent", "bbox_inches", "na_rep"}  # fmt: skip
STAT_TESTS = {
    "ttest_ind", "ttest_rel", "ttest_1samp", "mannwhitneyu", "wilcoxon", "f_oneway", "kruskal",
    "chi2_contingency", "fisher_exact", "pearsonr", "spearmanr", "kendalltau", "linregress", "shapiro",
    "curve_fit", "polyfit", "zscore", "normaltest", "levene", "anova_lm", "pairwise_tukeyhsd", "multipletests",
}  # fmt: skip
ROW_OPS = {
    "dropna": "Drop the rows with missing values",
    "drop_duplicates": "Drop duplicate rows",
    "fillna": "Fill missing values",
    "sort_values": "Sort the rows",
    "nlargest": "Keep the largest rows",
    "nsmallest": "Keep the smallest rows",
    "merge": "Merge the tables",
    "pivot_table": "Build a pivot table",
    "pivot": "Pivot the table",
    "melt": "Reshape the table to long format",
    "rolling": "Take a rolling window",
    "resample": "Resample in time",
    "corr": "Compute the correlation matrix",
    "value_counts": "Count the occurrences of each value",
    "rename": "Rename columns",
    "drop": "Drop",
    "head": "Keep the first rows",
    "astype": "Convert types",
    "clip": "Clip values",
    "interpolate": "Interpolate missing values",
    "diff": "Take differences",
    "pct_change": "Compute percentage changes",
    "concat": "Concatenate the tables",
}
_NUMPY_PREFIX = re.compile(r"\b(?:np|numpy|stats|scipy\.stats|math|pd|pandas)\.")


@dataclass
class Operation:
    """One operation of the gold program: kind, a sentence, where, and the facts it depends on."""

    kind: str  # read | filter | rows | group | column | model | test | seed | plot | label | write
    text: str
    line: int
    facts: list[str] = field(default_factory=list)


def dotted_name(node: ast.AST) -> str:
    """``a.b.c`` for an attribute chain, ``f()`` for a call in it, ``?`` for anything else."""
    if isinstance(node, ast.Attribute):
        return f"{dotted_name(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return dotted_name(node.func) + "()"
    return "?"


def _last(node: ast.AST) -> str:
    return dotted_name(node).split(".")[-1]


class _Render(ast.NodeTransformer):
    """Column references -> `col`, known constants inlined, library prefixes dropped."""

    def __init__(self, consts: dict[str, Any], frames: set[str] | None = None):
        self.consts = consts
        self.frames = frames or set()
        self.facts: list[str] = []

    def visit_Call(self, node: ast.Call) -> ast.AST:
        # ``df.groupby(...)``: the method name stays, only its receiver and arguments are rendered
        if isinstance(node.func, ast.Attribute):
            node.func.value = self.visit(node.func.value)
        else:
            node.func = self.visit(node.func)
        node.args = [self.visit(a) for a in node.args]
        for kw in node.keywords:
            kw.value = self.visit(kw.value)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id in self.frames:
            self.facts.append(node.attr)
            return ast.Name(id=f"`{node.attr}`")  # df.site: the column `site`
        return self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        sl = node.slice
        if isinstance(sl, ast.Constant) and isinstance(sl.value, str):
            self.facts.append(sl.value)
            inner = node.value
            if isinstance(inner, ast.Subscript) and _is_mask(inner.slice):
                # df[df.arm == "A"]["response"]: the column on the selected rows
                cond = ast.unparse(self.visit(inner.slice))
                return ast.Name(id=f"`{sl.value}`[{cond}]")
            return ast.Name(id=f"`{sl.value}`")
        if isinstance(sl, ast.Name) and isinstance(self.consts.get(sl.id), str):
            self.facts.append(self.consts[sl.id])
            return ast.Name(id=f"`{self.consts[sl.id]}`")
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        v = self.consts.get(node.id)
        if isinstance(v, (int, float, str)) and not isinstance(v, bool):
            self._fact(v)
            return ast.Constant(v)
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        self._fact(node.value)
        return node

    def _fact(self, v: Any) -> None:
        if isinstance(v, bool) or v is None:
            return
        if isinstance(v, (int, float)) or (isinstance(v, str) and 0 < len(v) <= 60):
            self.facts.append(str(v))


# Table variables of the program being read (per thread: builds may run tasks concurrently).
_STATE = threading.local()


def _render(node: ast.AST, consts: dict[str, Any], limit: int = 160) -> tuple[str, list[str]]:
    r = _Render(consts, getattr(_STATE, "frames", set()))
    try:
        tree = r.visit(ast.parse(ast.unparse(node), mode="eval").body)
        text = ast.unparse(tree)
    except (SyntaxError, ValueError, TypeError, AttributeError, RecursionError):
        return "(expression)", []
    text = _NUMPY_PREFIX.sub("", text).replace("`'", "`").replace("'`", "`")
    text = re.sub(r"\b\w+\[(`[^`]+`(?:\[[^\]]*\])?)\]", r"\1", text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text, list(dict.fromkeys(r.facts))


def _constants(tree: ast.Module) -> dict[str, Any]:
    """Names bound once to a literal (``THRESH = 3.0``, ``COLS = ["a", "b"]``)."""
    seen: dict[str, list[Any]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                value = _Unknown
            seen.setdefault(node.targets[0].id, []).append(value)
    return {k: v[0] for k, v in seen.items() if len(v) == 1 and v[0] is not _Unknown}


class _Unknown:
    pass


def _kwargs(call: ast.Call, allowed: set[str] | None, consts: dict[str, Any]) -> tuple[str, list[str]]:
    parts, facts = [], []
    for kw in call.keywords:
        if kw.arg is None or (allowed is not None and kw.arg not in allowed):
            continue
        text, f = _render(kw.value, consts, 80)
        parts.append(f"{kw.arg}={text}")
        facts += f
    return ", ".join(parts), facts


def _chain(node: ast.AST) -> list[ast.AST]:
    """The receiver chain of a method call: ``df.groupby(k)["v"].mean()`` -> [mean call, ["v"], groupby call, df]."""
    out = []
    while True:
        out.append(node)
        if isinstance(node, ast.Call):
            node = node.func
            if isinstance(node, ast.Attribute):
                node = node.value
            else:
                break
        elif isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        else:
            break
    return out


def _is_mask(node: ast.AST) -> bool:
    """A boolean row selection: a comparison, a combination of them, ``isin``/``between``/``notna``."""
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        return _is_mask(node.left) or _is_mask(node.right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)):
        return _is_mask(node.operand)
    if isinstance(node, ast.BoolOp):
        return any(_is_mask(v) for v in node.values)
    if isinstance(node, ast.Call):
        return _last(node.func) in {"isin", "between", "notna", "notnull", "isna", "isnull", "str.contains"}
    return False


def program_operations(source: str | None) -> list[Operation]:
    """The program's operations in source order (empty for unparsable source)."""
    if not source:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    consts = _constants(tree)
    _STATE.frames = _frames(tree)
    ops: list[Operation] = []
    consumed: set[int] = set()

    def add(kind: str, text: str, node: ast.AST, facts: list[str]) -> None:
        ops.append(Operation(kind, text, getattr(node, "lineno", 0), [f for f in dict.fromkeys(facts) if f]))

    nodes = sorted(
        (n for n in ast.walk(tree) if isinstance(n, (ast.Call, ast.Subscript, ast.Assign))),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for node in nodes:
        if id(node) in consumed:
            continue
        if isinstance(node, ast.Assign):
            _assign(node, consts, add, consumed)
            continue
        if isinstance(node, ast.Subscript):
            sl = node.slice
            if isinstance(node.value, ast.Attribute) and node.value.attr == "loc" and isinstance(sl, ast.Tuple):
                sl = sl.elts[0]
            if isinstance(node.ctx, ast.Load) and _is_mask(sl):
                text, facts = _render(sl, consts)
                add("filter", f"Keep only the rows where {text}", node, facts)
                for sub in ast.walk(sl):
                    consumed.add(id(sub))
            continue
        before = len(ops)
        _call(node, consts, add, consumed)
        if len(ops) > before and ops[-1].kind not in ("read", "rows"):
            _consume_arguments(node, consumed)
    return ops


def _consume_arguments(node: ast.Call, consumed: set[int]) -> None:
    """Calls and selections inside an operation's arguments are part of it, not operations."""
    for a in [*node.args, *(k.value for k in node.keywords)]:
        for sub in ast.walk(a):
            consumed.add(id(sub))


def _frames(tree: ast.Module) -> set[str]:
    """Variables holding tables: assigned from a reader, ``DataFrame(...)`` or another table."""
    frames: set[str] = set()
    assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]
    for _ in range(3):
        for n in assigns:
            root = _chain(n.value)[-1]
            calls = [c for c in _chain(n.value) if isinstance(c, ast.Call)]
            is_frame = any(_last(c.func) in READERS or _last(c.func) == "DataFrame" for c in calls) or (
                isinstance(root, ast.Name) and root.id in frames
            )
            if is_frame:
                frames.update(t.id for t in n.targets if isinstance(t, ast.Name))
    return frames


def _assign(node: ast.Assign, consts: dict[str, Any], add: Any, consumed: set[int]) -> None:
    for target in node.targets:
        if not isinstance(target, ast.Subscript):
            continue
        sl = target.slice
        if isinstance(target.value, ast.Attribute) and target.value.attr == "loc" and isinstance(sl, ast.Tuple):
            if len(sl.elts) == 2 and _is_mask(sl.elts[0]):
                cond, cf = _render(sl.elts[0], consts)
                col, colf = _render(sl.elts[1], consts)
                val, vf = _render(node.value, consts)
                add("column", f"Set column {col.strip(chr(39))} to {val} where {cond}", node, cf + colf + vf)
                consumed.add(id(target))
                return
        if isinstance(sl, ast.Constant) and isinstance(sl.value, str):
            val, vf = _render(node.value, consts)
            add("column", f"Compute the column `{sl.value}` = {val}", node, [sl.value, *vf])
            consumed.add(id(target))
            for sub in ast.walk(node.value):
                if isinstance(sub, ast.Call) and _last(sub.func) not in READERS:
                    consumed.add(id(sub))
            return


def _call(node: ast.Call, consts: dict[str, Any], add: Any, consumed: set[int]) -> None:
    name = _last(node.func)
    full = dotted_name(node.func)
    if name in READERS:
        src = (
            node.args[0]
            if node.args
            else next((k.value for k in node.keywords if k.arg in ("filepath_or_buffer", "io", "path", "fname")), None)
        )
        path, facts = _render(src, consts, 120) if src is not None else ("the data", [])
        opts, of = _kwargs(node, READER_OPTIONS, consts)
        add("read", f"Read the {READERS[name]} {path}" + (f" ({opts})" if opts else ""), node, facts + of)
        return
    if name == "query" and node.args and isinstance(node.args[0], ast.Constant):
        q = str(node.args[0].value)
        nums = re.findall(r"-?\d+(?:\.\d+)?", q)
        words = [w for w in re.findall(r"[A-Za-z_]\w*", q) if w not in ("and", "or", "not", "in")]
        add("filter", f"Keep only the rows where {q}", node, words + nums)
        return
    if name in ("seed", "default_rng", "RandomState", "manual_seed", "set_seed") and node.args:
        text, facts = _render(node.args[0], consts)
        add("seed", f"Use the random seed {text} ({full})", node, facts)
        return
    for kw in node.keywords:
        if kw.arg in ("random_state", "seed") and isinstance(kw.value, ast.Constant) and kw.value.value is not None:
            add("seed", f"Use random_state={kw.value.value} for {name}", node, [str(kw.value.value)])
    if name in AGGREGATIONS:
        chain = _chain(node)
        grp = next((c for c in chain[1:] if isinstance(c, ast.Call) and _last(c.func) == "groupby"), None)
        if grp is not None:
            consumed.add(id(grp))
            keys, kf = _render(grp.args[0], consts) if grp.args else _kwargs(grp, {"by", "level"}, consts)
            sel = [c for c in chain[1 : chain.index(grp)] if isinstance(c, ast.Subscript)]
            what, wf = _render(sel[0].slice, consts) if sel else ("every column", [])
            args = ", ".join(_render(a, consts, 100)[0] for a in node.args)
            kw, kwf = _kwargs(node, None, consts)
            how = name + (f"({', '.join(x for x in (args, kw) if x)})" if (args or kw) else "")
            add("group", f"Group the rows by {keys} and compute {how} of {what}", node,
                kf + wf + kwf + [f for a in node.args for f in _render(a, consts)[1]]
                + ([name] if name in ("mean", "median", "sum", "std", "count", "min", "max") else []))  # fmt: skip
            return
    if name == "groupby" and id(node) not in consumed:
        keys, kf = _render(node.args[0], consts) if node.args else ("(keys)", [])
        add("group", f"Group the rows by {keys}", node, kf)
        return
    if (name in ROW_OPS and isinstance(node.func, ast.Attribute)) or name == "concat":
        args = [_render(a, consts, 100) for a in node.args if not isinstance(a, ast.Name)]
        kw, kwf = _kwargs(node, None, consts)
        detail = ", ".join([a for a, _ in args] + ([kw] if kw else []))
        add("rows", ROW_OPS[name] + (f" ({detail})" if detail else ""), node, [f for _, fs in args for f in fs] + kwf)
        return
    if name in STAT_TESTS:
        args = ", ".join(_render(a, consts, 80)[0] for a in node.args)
        kw, kwf = _kwargs(node, None, consts)
        facts = [f for a in node.args for f in _render(a, consts)[1]] + kwf
        add("test", f"Compute {name}({', '.join(x for x in (args, kw) if x)})", node, facts)
        return
    if name[:1].isupper() and (name in _ESTIMATORS or any(p in full for p in ("sklearn", "statsmodels"))):
        kw, kwf = _kwargs(node, None, consts)
        add("model", f"Fit {name}" + (f"({kw})" if kw else " (default parameters)"), node, kwf)
        return
    if name in ("ols", "glm", "logit", "mixedlm", "OLS") and node.args and isinstance(node.args[0], ast.Constant):
        add("model", f"Fit the statsmodels {name} model `{node.args[0].value}`", node, [str(node.args[0].value)])
        return
    if name in PLOTS and isinstance(node.func, ast.Attribute) and not full.startswith(("np.", "numpy.")):
        args = [_render(a, consts, 60) for a in node.args[:3]]
        kw, kwf = _kwargs(
            node,
            {"x", "y", "hue", "bins", "label", "yerr", "xerr", "col", "row", "kind", "estimator", "errorbar"},
            consts,
        )
        detail = ", ".join([a for a, _ in args] + ([kw] if kw else []))
        add("plot", f"Plot a {PLOTS[name]}" + (f" of {detail}" if detail else ""), node,
            [f for _, fs in args for f in fs] + kwf)  # fmt: skip
        return
    if name in LABELS and node.args and isinstance(node.args[0], ast.Constant):
        add("label", f"Set the {LABELS[name]} to {node.args[0].value!r}", node, [str(node.args[0].value)])
        return
    if name in WRITERS and (node.args or node.keywords):
        target = node.args[0] if name not in ("dump", "save", "savez", "savetxt") or not node.args else None
        if name in ("save", "savez", "savez_compressed", "savetxt") and node.args:
            target = node.args[0]
        if name == "dump" and len(node.args) >= 2:
            target = node.args[1]
        where, wf = _render(target, consts, 120) if target is not None else ("the output", [])
        opts, of = _kwargs(node, WRITER_OPTIONS, consts)
        add("write", f"Write {where}" + (f" ({opts})" if opts else ""), node, wf + of)


_ESTIMATORS = {
    "LinearRegression", "LogisticRegression", "Ridge", "Lasso", "ElasticNet", "RandomForestClassifier",
    "RandomForestRegressor", "GradientBoostingClassifier", "GradientBoostingRegressor", "SVC", "SVR",
    "KNeighborsClassifier", "KNeighborsRegressor", "DecisionTreeClassifier", "DecisionTreeRegressor",
    "MLPClassifier", "MLPRegressor", "StandardScaler", "MinMaxScaler", "PCA", "KMeans", "DBSCAN", "TSNE",
    "GaussianMixture", "AgglomerativeClustering", "PolynomialFeatures", "KFold", "StratifiedKFold",
    "GaussianNB", "XGBClassifier", "XGBRegressor", "LGBMClassifier", "LGBMRegressor", "IsolationForest",
}  # fmt: skip


def operation_steps(source: str | None, limit: int = 30) -> list[str]:
    """The operations as numbered-list sentences (duplicates dropped, at most ``limit``)."""
    steps: list[str] = []
    for op in program_operations(source):
        if op.text not in steps:
            steps.append(op.text)
    return steps[:limit]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower().replace("`", "").replace('"', "'"))


def _fact_in(fact: str, text: str) -> bool:
    f = _norm(fact)
    if f in text:
        return True
    try:
        v = float(fact)
    except ValueError:
        return False
    # 3 and 3.0, 0.05 and 5% say the same number
    nums = {float(m) for m in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)}
    pct = {float(m) / 100 for m in re.findall(r"(\d+(?:\.\d+)?)\s*%", text)}
    return any(abs(v - n) <= 1e-9 * max(1.0, abs(v)) for n in nums | pct)


def instruction_coverage(instruction: str, source: str | None) -> dict[str, Any]:
    """How many of the gold program's operations an instruction states with all their facts.

    ``{"operations": n, "covered": k, "ratio": k/n, "missing": [operation sentences]}``; file
    writes are left out (the output paragraph states them), and an operation without facts counts
    as covered. A deterministic proxy for answerability when no model is available to solve the task.
    """
    text = _norm(instruction)
    ops = [op for op in program_operations(source) if op.kind not in ("write", "label")]
    missing = [op.text for op in ops if not all(_fact_in(f, text) for f in op.facts)]
    n = len(ops)
    return {
        "operations": n,
        "covered": n - len(missing),
        "ratio": round((n - len(missing)) / n, 3) if n else 1.0,
        "missing": list(dict.fromkeys(missing))[:20],
    }
