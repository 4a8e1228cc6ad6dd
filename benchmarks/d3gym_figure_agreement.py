"""Figure evaluators vs human judgement: plot-data comparison against pixel SSIM (issue 18 part 3).

Five gold figures of the kinds research scripts draw (labelled line series, bars with error
bars, a two-group scatter, group means with error bars on a categorical axis, a heatmap), and
for each a set of predicted figures drawn by real matplotlib programs, each labelled with the
verdict a scientist reading the figure would give: the same data in another style (colours,
markers, line styles, figure size, dpi, style sheet, drawing order) is correct; float noise far
below the table tolerance is correct; swapped series, a dropped category or series, wrong
intervals (SD drawn instead of SEM), one value off by 10% and a different statistic (median
for mean) are wrong.

Every program runs with the plot recorder installed (as gold and agent runs do). Each pair is
judged twice, each time by a synthesized evaluator run in ``veriforge.sandbox`` exactly as the
environment runs it: the data evaluator (kind ``figure``; SSIM only reported) and the former
pixel evaluator (kind ``image``: SSIM >= 0.95). Writes benchmarks/results/d3gym_figure_agreement.txt.

    python benchmarks/d3gym_figure_agreement.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from veriforge.discovery.evalcheck import run_evaluator
from veriforge.discovery.evalsynth import synthesize
from veriforge.discovery.evalsynth.codegen import render_script
from veriforge.discovery.plotrec import recorder_env

RESULTS = Path(__file__).parent / "results" / "d3gym_figure_agreement.txt"

PRELUDE = """
import numpy as np
import matplotlib
import matplotlib.pyplot as plt
style = {style!r}
if style:
    plt.style.use(style)
rng = np.random.default_rng(3)
"""

LINE = """
t = np.arange(12)
series = {{"control": 1.0 + 0.30 * t, "treated": 1.0 + 0.12 * t, "washout": 1.0 + 0.2 * t}}
{mutate}
fig, ax = plt.subplots(figsize={size!r})
for name in {order!r}:
    ax.plot(t, series[name], {fmt!r}, label=name, lw={lw})
ax.set_xlabel("day"); ax.set_ylabel("growth"); ax.legend()
fig.savefig("pred_results/fig.png", dpi={dpi})
"""

BARS = """
data = {{g: rng.normal(loc, 1.0, 20) for g, loc in zip(["A", "B", "C", "D"], [5.0, 7.0, 6.0, 8.0])}}
{mutate}
groups = {groups!r}
mean = [data[g].mean() for g in groups]
sem = [data[g].std(ddof=1) / np.sqrt(len(data[g])) for g in groups]
{mutate_after}
fig, ax = plt.subplots(figsize={size!r})
if {percat}:  # one call (one container, its own colour) per bar, as colour-by-category code does
    for g, m, e in zip(groups, mean, sem):
        ax.bar(g, m, yerr=e, capsize={capsize}, width={width}, label=g)
else:
    ax.bar(groups, mean, yerr=sem, color={colour!r}, capsize={capsize}, width={width})
ax.set_ylabel("mean response")
fig.savefig("pred_results/fig.png", dpi={dpi})
"""

SCATTER = """
x = rng.normal(0, 1, 40)
y = {{"wild type": 2.0 * x + rng.normal(0, 0.3, 40), "mutant": -1.0 * x + rng.normal(0, 0.3, 40)}}
{mutate}
fig, ax = plt.subplots(figsize={size!r})
for name in {order!r}:
    ax.scatter(x, y[name], s={s}, marker={marker!r}, label=name)
ax.legend()
fig.savefig("pred_results/fig.png", dpi={dpi})
"""

POINTS = """
data = {{g: rng.normal(loc, 1.0, 15) for g, loc in zip(["low", "mid", "high"], [2.0, 3.0, 5.0])}}
{mutate}
groups = {groups!r}
mean = [data[g].mean() for g in groups]
sem = [data[g].std(ddof=1) / np.sqrt(len(data[g])) for g in groups]
{mutate_after}
fig, ax = plt.subplots(figsize={size!r})
ax.errorbar(groups, mean, yerr=sem, fmt={fmt!r}, capsize=4)
fig.savefig("pred_results/fig.png", dpi={dpi})
"""

HEAT = """
m = np.outer(np.linspace(0, 1, 6), np.linspace(1, 2, 5)) + rng.normal(0, 0.05, (6, 5))
{mutate}
fig, ax = plt.subplots(figsize={size!r})
im = ax.imshow(m, cmap={cmap!r}, aspect="auto")
fig.colorbar(im)
fig.savefig("pred_results/fig.png", dpi={dpi})
"""

BASE = {"style": "", "size": (5, 3.5), "dpi": 60, "mutate": "", "mutate_after": ""}
CHARTS: dict[str, tuple[str, dict[str, Any]]] = {
    "lines": (LINE, {"order": ["control", "treated", "washout"], "fmt": "-", "lw": 1.5}),
    "bars": (BARS, {"groups": ["A", "B", "C", "D"], "colour": "tab:blue", "capsize": 3, "width": 0.8, "percat": False}),
    "scatter": (SCATTER, {"order": ["wild type", "mutant"], "s": 20, "marker": "o"}),
    "points": (POINTS, {"groups": ["low", "mid", "high"], "fmt": "o-"}),
    "heatmap": (HEAT, {"cmap": "viridis"}),
}

# (chart, variant, changes, human verdict)
CASES: list[tuple[str, str, dict[str, Any], bool]] = [
    ("lines", "rerun", {}, True),
    ("lines", "restyled", {"fmt": "o--", "lw": 3, "size": (7, 4), "dpi": 50}, True),
    ("lines", "other_order_ggplot", {"order": ["washout", "treated", "control"], "style": "ggplot"}, True),
    ("lines", "noise_1e-9", {"mutate": "series = {k: v * (1 + 1e-9) for k, v in series.items()}"}, True),
    (
        "lines",
        "swapped_series",
        {"mutate": "series['control'], series['treated'] = series['treated'], series['control']"},
        False,
    ),
    ("lines", "dropped_series", {"order": ["control", "treated"]}, False),
    ("lines", "one_value_off", {"mutate": "series['treated'][5] *= 1.1"}, False),
    ("lines", "wrong_slope", {"mutate": "series['washout'] = 1.0 + 0.25 * t"}, False),
    ("bars", "rerun", {}, True),
    ("bars", "restyled", {"colour": "darkorange", "capsize": 8, "width": 0.5, "size": (6, 4)}, True),
    ("bars", "reordered_categories", {"groups": ["D", "C", "B", "A"], "style": "seaborn-v0_8-whitegrid"}, True),
    ("bars", "dpi_and_size", {"dpi": 90, "size": (4, 3)}, True),
    ("bars", "one_call_per_bar", {"percat": True}, True),
    (
        "bars",
        "swapped_categories",
        {"mutate": "data['B'], data['C'] = data['C'], data['B']"},
        False,
    ),
    ("bars", "dropped_category", {"groups": ["A", "B", "D"]}, False),
    (
        "bars",
        "sd_not_sem",
        {"mutate_after": "sem = [data[g].std(ddof=1) for g in groups]"},
        False,
    ),
    ("bars", "median_not_mean", {"mutate_after": "mean = [np.median(data[g]) for g in groups]"}, False),
    ("bars", "one_bar_off", {"mutate_after": "mean[1] *= 1.1"}, False),
    ("scatter", "rerun", {}, True),
    ("scatter", "restyled", {"s": 60, "marker": "^", "size": (6, 6)}, True),
    ("scatter", "other_order_dark", {"order": ["mutant", "wild type"], "style": "dark_background"}, True),
    (
        "scatter",
        "swapped_groups",
        {"mutate": "y['wild type'], y['mutant'] = y['mutant'], y['wild type']"},
        False,
    ),
    ("scatter", "dropped_group", {"order": ["wild type"]}, False),
    (
        "scatter",
        "outliers_removed",
        {"mutate": "keep = np.abs(x) < 1.5; x = x[keep]; y = {k: v[keep] for k, v in y.items()}"},
        False,
    ),
    ("scatter", "one_point_off", {"mutate": "y['mutant'][7] += 0.5"}, False),
    ("points", "rerun", {}, True),
    ("points", "reordered_categories", {"groups": ["high", "low", "mid"], "fmt": "s"}, True),
    ("points", "swapped_categories", {"mutate": "data['low'], data['high'] = data['high'], data['low']"}, False),
    ("points", "sd_not_sem", {"mutate_after": "sem = [data[g].std(ddof=1) for g in groups]"}, False),
    ("points", "dropped_category", {"groups": ["low", "high"]}, False),
    ("heatmap", "rerun", {}, True),
    ("heatmap", "other_colormap", {"cmap": "magma", "size": (6, 5)}, True),
    ("heatmap", "noise_1e-9", {"mutate": "m = m * (1 + 1e-9)"}, True),
    ("heatmap", "transposed", {"mutate": "m = m.T"}, False),
    ("heatmap", "rows_swapped", {"mutate": "m = m[[1, 0, 2, 3, 4, 5]]"}, False),
    ("heatmap", "one_cell_off", {"mutate": "m[2, 3] *= 1.1"}, False),
    ("heatmap", "normalised", {"mutate": "m = (m - m.mean()) / m.std()"}, False),
]


def program(chart: str, changes: dict[str, Any]) -> str:
    body, defaults = CHARTS[chart]
    params = {**BASE, **defaults, **changes}
    return PRELUDE.format(**params) + body.format(**params)


def draw(work: Path, code: str) -> Path:
    """Run ``code`` with the plot recorder, as the gold run and the environment do."""
    (work / "pred_results").mkdir(parents=True)
    (work / "prog.py").write_text(code)
    env = {**os.environ, "MPLBACKEND": "Agg", **recorder_env(work)}
    res = subprocess.run([sys.executable, "prog.py"], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    if res.returncode:
        raise RuntimeError(f"figure program failed:\n{code}\n{res.stderr[-2000:]}")
    return work / "pred_results"


def files(results: Path) -> dict[str, bytes]:
    return {p.relative_to(results).as_posix(): p.read_bytes() for p in results.rglob("*") if p.is_file()}


def main() -> int:
    t0 = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        golds: dict[str, tuple[Path, str, str]] = {}
        for chart in CHARTS:
            g = draw(root / f"gold_{chart}", program(chart, {}))
            data_script = synthesize(g, ["fig.png"], script_name="eval_fig.py")
            assert data_script.plan["outputs"][0]["kind"] == "figure", data_script.plan
            pixel_plan = {
                **data_script.plan,
                "outputs": [{**data_script.plan["outputs"][0], "kind": "image"}],
            }
            golds[chart] = (g, data_script.code, render_script(pixel_plan, name="eval_fig.py"))
        preds = []
        for i, (chart, variant, changes, label) in enumerate(CASES):
            preds.append((chart, variant, label, draw(root / f"pred_{i}", program(chart, changes))))

        def judge(item: tuple[str, str, bool, Path]) -> tuple[str, str, bool, Any, Any]:
            chart, variant, label, pred = item
            g, data_code, pixel_code = golds[chart]
            gold_files = files(g)
            pred_files = files(pred)
            d = run_evaluator(data_code, "eval_fig", pred_files, gold_files)
            p = run_evaluator(pixel_code, "eval_fig", pred_files, gold_files)
            return chart, variant, label, d, p

        with ThreadPoolExecutor(max_workers=2) as pool:
            rows = list(pool.map(judge, preds))
    wall = time.perf_counter() - t0
    n = len(rows)
    data_ok = sum(1 for _, _, lab, d, _ in rows if d[0] == lab)
    pix_ok = sum(1 for _, _, lab, _, p in rows if p[0] == lab)
    n_pass = sum(1 for r in rows if r[2])

    def fp(i: int) -> int:
        return sum(1 for r in rows if not r[2] and r[i][0])

    def fn(i: int) -> int:
        return sum(1 for r in rows if r[2] and not r[i][0])

    lines = [
        "D3-Gym figure evaluator agreement with human verdicts (benchmarks/d3gym_figure_agreement.py)",
        "Real matplotlib programs, run with the plot recorder; evaluators run in veriforge.sandbox.",
        f"figure pairs: {n} ({n_pass} correct restyles/reruns, {n - n_pass} wrong figures), {len(CHARTS)} gold figures",
        f"plot-data evaluator (kind figure): {data_ok}/{n} = {100 * data_ok / n:.1f}%  "
        f"false passes {fp(3)}, false fails {fn(3)}",
        f"pixel evaluator (SSIM >= 0.95):    {pix_ok}/{n} = {100 * pix_ok / n:.1f}%  "
        f"false passes {fp(4)}, false fails {fn(4)}",
        f"wall time: {wall:.1f} s",
        "",
        "per pair: chart variant human | data verdict | SSIM verdict",
    ]
    for chart, variant, label, d, p in rows:
        mark = "ok " if d[0] == label else "BAD"
        lines.append(
            f"  {mark} {chart:8s} {variant:22s} human={'pass' if label else 'fail'} "
            f"data={'pass' if d[0] else 'fail'} ssim={'pass' if p[0] else 'fail'}  {d[1][:150]}"
        )
    text = "\n".join(lines) + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    print(text)
    return 0 if data_ok / n >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
