"""Task instructions in a domain scientist's voice (D3-Gym pipeline stage 6).

An instruction must let an agent solve the task without seeing the gold program: which files to
read, what analysis to run, and exactly where and in which format to write the result (the
evaluator compares files, so a vague output spec makes a correct analysis fail). With a model
(:class:`veriforge.llm.LLMClient`) the instruction is written from the program, its outputs and
the dataset previews; without one, a deterministic template names the inputs, describes the
analysis from the program's calls ("fit a logistic regression", "run an independent two-sample
t-test") and spells out every output (path, columns/keys/shape). Either way the result is checked
to name every output path; a model answer that forgets one gets the template's output paragraph.

``info`` keys (all optional except ``outputs``): ``program_source``, ``outputs`` (paths under
``pred_results/``), ``gold_dir`` (gold outputs, to describe columns/keys/shapes), ``inputs``
(dataset paths the program reads), ``datasets_dir``, ``dataset_preview``, ``dataset_folder_tree``,
``domain``, ``github_name``, ``src_file_or_path``.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from veriforge.discovery.evalsynth.model import run_sync
from veriforge.discovery.evalsynth.plan import normalize_output, plan_output
from veriforge.discovery.progops import dotted_name, instruction_coverage, operation_steps

# Calls (last dotted name) -> what a scientist would call the step. Order of appearance in the
# program decides the order of the sentences.
ANALYSES: dict[str, str] = {
    "LogisticRegression": "fit a logistic regression",
    "LinearRegression": "fit a linear regression",
    "Ridge": "fit a ridge regression",
    "Lasso": "fit a lasso regression",
    "RandomForestClassifier": "train a random forest classifier",
    "RandomForestRegressor": "train a random forest regressor",
    "GradientBoostingClassifier": "train a gradient boosting classifier",
    "SVC": "train a support vector classifier",
    "KNeighborsClassifier": "train a k-nearest-neighbours classifier",
    "DecisionTreeClassifier": "train a decision tree classifier",
    "MLPClassifier": "train a multilayer perceptron classifier",
    "StandardScaler": "standardize the features",
    "MinMaxScaler": "rescale the features to [0, 1]",
    "train_test_split": "split the data into training and test sets",
    "cross_val_score": "estimate performance by cross-validation",
    "KFold": "use k-fold cross-validation",
    "StratifiedKFold": "use stratified k-fold cross-validation",
    "accuracy_score": "report the accuracy",
    "roc_auc_score": "report the ROC AUC",
    "f1_score": "report the F1 score",
    "precision_score": "report the precision",
    "recall_score": "report the recall",
    "confusion_matrix": "compute the confusion matrix",
    "mean_squared_error": "report the mean squared error",
    "r2_score": "report the coefficient of determination (R²)",
    "KMeans": "cluster the samples with k-means",
    "PCA": "reduce dimensionality with principal component analysis",
    "TSNE": "embed the samples with t-SNE",
    "ttest_ind": "run an independent two-sample t-test",
    "ttest_rel": "run a paired t-test",
    "ttest_1samp": "run a one-sample t-test",
    "mannwhitneyu": "run a Mann-Whitney U test",
    "wilcoxon": "run a Wilcoxon signed-rank test",
    "f_oneway": "run a one-way ANOVA",
    "kruskal": "run a Kruskal-Wallis test",
    "chi2_contingency": "run a chi-squared test of independence",
    "fisher_exact": "run Fisher's exact test",
    "pearsonr": "compute the Pearson correlation",
    "spearmanr": "compute the Spearman rank correlation",
    "linregress": "fit a least-squares line",
    "shapiro": "test for normality (Shapiro-Wilk)",
    "curve_fit": "fit a model curve by non-linear least squares",
    "minimize": "minimize an objective numerically",
    "odeint": "integrate the ordinary differential equations",
    "solve_ivp": "integrate the ordinary differential equations",
    "fft": "compute the Fourier transform",
    "polyfit": "fit a polynomial",
    "histogram": "compute a histogram",
    "corrcoef": "compute the correlation matrix",
    "corr": "compute the correlation matrix",
    "cumsum": "compute cumulative sums",
    "convolve": "convolve the signal",
    "groupby": "group the records",
    "pivot_table": "build a pivot table",
    "merge": "join the tables",
    "dropna": "drop records with missing values",
    "fillna": "fill in missing values",
    "describe": "compute summary statistics",
    "agg": "aggregate per group",
    "value_counts": "count occurrences of each category",
    "quantile": "compute quantiles",
    "std": "compute standard deviations",
    "mean": "compute means",
    "median": "compute medians",
    "savefig": "plot the results as a figure",
    "hist": "plot histograms",
    "scatter": "plot a scatter plot",
    "boxplot": "plot box plots",
    "imshow": "plot the field as an image",
}


def analysis_steps(program_source: str | None) -> list[str]:
    """The analysis, step by step in plain words, read from the program's calls (in order).

    Calls are ordered by where their name ends, so a chain ``df.groupby(...).agg(...)`` reads
    in execution order (group, then aggregate).
    """
    if not program_source:
        return []
    try:
        tree = ast.parse(program_source)
    except SyntaxError:
        return []
    calls = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Call)),
        key=lambda n: (n.lineno, n.func.end_lineno or 0, n.func.end_col_offset or 0),
    )
    steps: list[str] = []
    for call in calls:
        name = dotted_name(call.func).split(".")[-1]
        phrase = ANALYSES.get(name)
        if phrase is None:
            continue
        if name == "groupby" and call.args and isinstance(call.args[0], (ast.Constant, ast.List)):
            keys = [
                e.value
                for e in (call.args[0].elts if isinstance(call.args[0], ast.List) else [call.args[0]])
                if isinstance(e, ast.Constant)
            ]
            phrase = f"group the records by {', '.join(map(repr, keys))}"
        if phrase not in steps:
            steps.append(phrase)
    return steps


def input_files(program_source: str | None, datasets_dir: Path | str | None = None) -> list[str]:
    """Dataset paths the program reads: ``datasets/...`` literals, else the files of the folder."""
    found: list[str] = []
    if program_source:
        for m in re.finditer(r"""["']((?:\./)?datasets/[^"'\s{}]+)["']""", program_source):
            p = m.group(1).removeprefix("./")
            if p not in found and Path(p).suffix:
                found.append(p)
    if not found and datasets_dir is not None and Path(datasets_dir).is_dir():
        root = Path(datasets_dir)
        found = [
            f"{root.name}/{p.relative_to(root).as_posix()}"
            for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".")
        ]
    return found


def describe_output(gold_dir: Path | str | None, rel: str, program_source: str | None = None) -> str:
    """``pred_results/x.csv``, a CSV table with columns ... — the exact format an evaluator expects."""
    rel = normalize_output(rel)
    where = f"`pred_results/{rel}`"
    gold = Path(gold_dir) / rel if gold_dir is not None else None
    if gold is None or not gold.is_file():
        return f"{where}"
    entry = plan_output(gold, rel, program_source)
    kind, params = entry["kind"], entry.get("params", {})
    if kind == "table":
        cols = ", ".join(f"`{c}`" for c in params["columns"])
        sep = "tab-separated" if params.get("sep") == "\t" else "comma-separated"
        n = _table_rows(gold, params.get("sep", ","))
        per = f", one row per {', '.join(params['key_columns'])}" if params.get("key_columns") else ""
        order = (
            "; keep the rows sorted as the analysis orders them" if params["row_order"] == "ordered" else ""
        )
        return f"{where}: a {sep} table with a header row and the columns {cols} ({n} rows{per}{order})"
    if kind == "json":
        data = json.loads(gold.read_text(encoding="utf-8-sig"))
        if isinstance(data, dict):
            keys = ", ".join(f'"{k}"' for k in list(data)[:20])
            return f"{where}: a JSON object with the keys {keys}"
        return f"{where}: a JSON {type(data).__name__}" + (
            f" of {len(data)} items" if isinstance(data, list) else ""
        )
    if kind == "array":
        return f"{where}: {_array_desc(gold)}"
    if kind == "scalar":
        return f"{where}: a plain-text file containing only the number"
    if kind == "figure":
        return f"{where}: {figure_summary(Path(gold_dir), rel)}"
    if kind == "image":
        from PIL import Image

        with Image.open(gold) as im:
            return f"{where}: a {im.format or 'PNG'} figure of {im.size[0]}x{im.size[1]} pixels"
    if kind == "text":
        return f"{where}: a plain-text report"
    return where


_KIND_WORDS = {
    "xy": "line/scatter series",
    "bar": "bars",
    "errorbar": "error bars",
    "area": "a shaded band",
    "grid": "an image/heatmap",
}


def figure_summary(gold_dir: Path, rel: str) -> str:
    """What a figure must show, from the gold's recorded plot data (never its pixels)."""
    from veriforge.discovery.plotrec import load_plotdata

    data = load_plotdata(gold_dir, rel) or {}
    parts = []
    axes = [ax for ax in data.get("axes") or [] if ax.get("series")]
    for i, ax in enumerate(axes, 1):
        bits = []
        for kind, word in _KIND_WORDS.items():
            ss = [s for s in ax["series"] if s.get("kind") == kind]
            if not ss:
                continue
            labels = [s["label"] for s in ss if s.get("label")]
            desc = f"{len(ss)} {word}" if kind in ("xy", "bar") and len(ss) > 1 else word
            if kind == "bar":
                n = sum(len(s.get("bars") or []) for s in ss)
                cats = [t for _, t in ax.get("xticks") or [] if str(t).strip()]
                desc = f"{n} bars" + (f" over the categories {', '.join(cats[:12])}" if cats else "")
            if kind == "grid":
                shape = (ss[0].get("array") or {}).get("shape")
                desc = f"{word} of shape {tuple(shape) if shape else '?'}"
            if labels:
                desc += " labelled " + ", ".join(repr(lab) for lab in labels[:8])
            bits.append(desc)
        names = ", ".join(f"{k} {ax[k]!r}" for k in ("title", "xlabel", "ylabel") if str(ax.get(k) or "").strip())
        parts.append(f"panel {i}: " + "; ".join(bits) + (f" ({names})" if names else ""))
    fmt = Path(rel).suffix.lstrip(".").upper() or "PNG"
    how = f"a {fmt} figure saved with matplotlib's savefig"
    if data.get("library") == "plotly":  # judged from the figure object: the agent must use plotly too
        writer = {"write_json": "fig.write_json", "write_html": "fig.write_html"}.get(
            str(data.get("writer")), "fig.write_image"
        )
        how = f"a plotly figure written with {writer} (plotly's own {fmt} output of the figure object)"
    return f"{how}, judged by the data it plots (not its style): " + (
        "; ".join(parts) if parts else "its plotted data"
    )


def _table_rows(path: Path, sep: str) -> int:
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    return max(
        0, sum(1 for r in csv.reader(io.StringIO(text), delimiter=sep) if any(c.strip() for c in r)) - 1
    )


def _array_desc(path: Path) -> str:
    import numpy as np

    if path.suffix.lower() == ".npz":
        with np.load(path, allow_pickle=False) as z:
            parts = [f"`{k}` (shape {z[k].shape}, {z[k].dtype})" for k in z.files]
        return "a NumPy .npz archive with the arrays " + ", ".join(parts)
    a = np.load(path, mmap_mode="r", allow_pickle=False)
    return f"a NumPy .npy array of shape {tuple(a.shape)} and dtype {a.dtype}"


def _output_paragraph(info: dict[str, Any]) -> str:
    outs = [describe_output(info.get("gold_dir"), o, info.get("program_source")) for o in info["outputs"]]
    if len(outs) == 1:
        return f"Save the result to {outs[0]}."
    return "Save the results as follows:\n" + "\n".join(f"- {o}" for o in outs)


def helpers_paragraph(info: dict[str, Any]) -> str:
    """What the vendored helper modules offer, or "" when the task has none.

    The gold program imports them, so a solver must know they exist and how to call them; the
    paragraph is appended verbatim to template and model instructions alike.
    """
    helpers = info.get("helpers") or []
    if not helpers:
        return ""
    lines = ["The study's own helper modules are importable as they are (folder `lib/`, already on the import path):"]
    for h in helpers:
        api = "; ".join(h.get("api") or []) or "see `lib/`"
        lines.append(f"- `import {h['module']}`: {api}")
    return "\n".join(lines)


def template_instruction(info: dict[str, Any]) -> str:
    """The deterministic instruction: inputs, analysis in plain words, exact outputs."""
    inputs = list(info.get("inputs") or input_files(info.get("program_source"), info.get("datasets_dir")))
    steps = analysis_steps(info.get("program_source"))
    domain = info.get("domain")
    lead = f"In this {domain} study, " if domain else ""
    if inputs:
        files = ", ".join(f"`{p}`" for p in inputs)
        first = f"{lead}we have data in {files}."
    else:
        first = f"{lead}we have data in the `datasets/` folder."
    if steps:
        body = (
            "Using these data, "
            + "; ".join(steps[:-1])
            + ("; then " if len(steps) > 1 else "")
            + steps[-1]
            + "."
        )
        body = body[0].upper() + body[1:]
    else:
        body = "Reproduce the analysis of these data that produces the outputs below."
    ops = operation_steps(info.get("program_source"))
    if ops:
        body += "\nDo exactly the following, in this order (column names in backticks):\n" + "\n".join(
            f"{i}. {op}." for i, op in enumerate(ops, 1)
        )
    helpers = helpers_paragraph(info)
    return f"{first[0].upper()}{first[1:]} {body}\n{_output_paragraph(info)}" + (f"\n{helpers}" if helpers else "")


PROMPT = """You are a {domain}scientist writing a task for a research assistant. The assistant will write
a Python program that reads the input data and writes result files, without seeing the reference program.
Write the task instruction in your own voice (2-6 sentences): what to compute and why, which input files
to read, and exactly which output files to write, in which format (columns / keys / shape).
Never mention the reference program. Answer with the instruction only.

Reference program (hidden from the assistant):
```python
{program}
```
Dataset folder:
{tree}
{previews}
Outputs the program writes:
{outputs}
What the program does, step by step; a solver must be able to reproduce the outputs from your
instruction alone, so state every step with its constants (thresholds, column names, groupings,
model parameters, seeds, what is plotted against what):
{operations}
"""


async def write_instruction_async(info: dict[str, Any], client: Any = None) -> str:
    """:func:`write_instruction` for asyncio callers."""
    if not info.get("outputs"):
        raise ValueError("info['outputs'] must name the task's outputs")
    if client is None:
        return template_instruction(info)
    prompt = PROMPT.format(
        domain=f"{info['domain']} " if info.get("domain") else "",
        program=(info.get("program_source") or "")[:6000],
        tree=info.get("dataset_folder_tree") or "(not given)",
        previews=(info.get("dataset_preview") or "")[:6000],
        outputs=_output_paragraph(info),
        operations="\n".join(f"- {op}" for op in operation_steps(info.get("program_source"))) or "(none found)",
    )
    try:
        text = (await client.complete(prompt, temperature=0.3)).strip()
    except Exception:  # any model failure falls back to the template; the build must go on
        return template_instruction(info)
    text = re.sub(r"^```\w*\n|\n```$", "", text).strip()
    if len(text) < 40:
        return template_instruction(info)
    missing = [o for o in info["outputs"] if f"pred_results/{normalize_output(o)}" not in text]
    if missing:
        text = f"{text}\n{_output_paragraph(info)}"
    # Check the model's text against what the program does: any operation it leaves out (or
    # states without its constants) is appended verbatim, so the task stays answerable.
    cov = instruction_coverage(text, info.get("program_source"))
    if cov["missing"]:
        text += "\nDetails of the analysis to follow exactly:\n" + "\n".join(f"- {m}." for m in cov["missing"])
    helpers = helpers_paragraph(info)
    return f"{text}\n{helpers}" if helpers else text


def write_instruction(info: dict[str, Any], client: Any = None) -> str:
    """An instruction in a domain scientist's voice (model) or from the template (no model)."""
    return run_sync(write_instruction_async(info, client))
