"""Evaluator quality benchmark for D3-Gym's synthesized evaluators.

For synthetic tasks covering every deterministic output type (tables with and without a key,
sorted tables, JSON, .npy/.npz arrays, scalars, text, figures), a labelled set of predictions:
correct variants that differ harmlessly (row order, column order, float noise within tolerance,
extra columns, key order, whitespace, image noise) and wrong ones (perturbed values, missing
rows, wrong column, swapped labels, wrong plot). Every prediction is judged by the synthesized
evaluator run in the sandbox exactly as the environment runs it; we report agreement with the
labels (target >= 95%) and write benchmarks/results/d3gym_evaluators.txt.

    python benchmarks/d3gym_evaluators.py
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from veriforge.discovery.evalcheck import run_evaluator
from veriforge.discovery.evalsynth import synthesize

RESULTS = Path(__file__).parent / "results" / "d3gym_evaluators.txt"
rng = np.random.default_rng(7)


def csv_text(header, rows, sep=","):
    return (sep.join(header) + "\n" + "".join(sep.join(map(str, r)) + "\n" for r in rows)).encode()


def npy(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def npz(**arrs):
    buf = io.BytesIO()
    np.savez(buf, **arrs)
    return buf.getvalue()


def figure(ys, noise=0, width=3, color=(31, 119, 180)):
    im = Image.new("RGB", (320, 240), "white")
    d = ImageDraw.Draw(im)
    d.line([(30, 210), (30, 10)], fill="black")
    d.line([(30, 210), (310, 210)], fill="black")
    for i in range(5):
        d.text((25 + 60 * i, 215), str(i), fill="black")
    pts = [(40 + 30 * i, 210 - int(190 * y)) for i, y in enumerate(ys)]
    d.line(pts, fill=color, width=width)
    a = np.asarray(im).astype(int)
    if noise:
        a = np.clip(a + rng.integers(-noise, noise + 1, a.shape), 0, 255)
    buf = io.BytesIO()
    Image.fromarray(a.astype("uint8")).save(buf, format="PNG")
    return buf.getvalue()


def tasks():
    """(name, {output: gold bytes}, program_source, [(label, True/False, {output: pred bytes})])."""
    groups = ["control", "low", "high", "very_high"]
    rows = [
        (g, round(float(rng.normal(5, 1)), 6), round(float(rng.uniform(0.1, 1)), 6), int(rng.integers(5, 50)))
        for g in groups
    ]
    hdr = ["treatment", "mean", "std", "n"]
    t = []
    gold = csv_text(hdr, rows)
    t.append(
        (
            "table_keyed",
            {"summary.csv": gold},
            "df.groupby('treatment').agg(...)",
            [
                ("identical", True, {"summary.csv": gold}),
                ("rows_shuffled", True, {"summary.csv": csv_text(hdr, rows[::-1])}),
                (
                    "columns_reordered",
                    True,
                    {"summary.csv": csv_text(["n", "std", "mean", "treatment"], [r[::-1] for r in rows])},
                ),
                (
                    "float_noise",
                    True,
                    {"summary.csv": csv_text(hdr, [(g, m * (1 + 3e-6), s, n) for g, m, s, n in rows])},
                ),
                (
                    "extra_column",
                    True,
                    {"summary.csv": csv_text([*hdr, "sem"], [(*r, r[2] / r[3] ** 0.5) for r in rows])},
                ),
                ("crlf_and_spaces", True, {"summary.csv": gold.replace(b"\n", b"\r\n")}),
                (
                    "perturbed_mean",
                    False,
                    {"summary.csv": csv_text(hdr, [(g, m * 1.02, s, n) for g, m, s, n in rows])},
                ),
                ("missing_row", False, {"summary.csv": csv_text(hdr, rows[:-1])}),
                ("wrong_column", False, {"summary.csv": csv_text(["treatment", "median", "std", "n"], rows)}),
                (
                    "swapped_labels",
                    False,
                    {
                        "summary.csv": csv_text(
                            hdr, [(rows[1][0], *rows[0][1:]), (rows[0][0], *rows[1][1:]), *rows[2:]]
                        )
                    },
                ),
                (
                    "std_as_variance",
                    False,
                    {"summary.csv": csv_text(hdr, [(g, m, s * s, n) for g, m, s, n in rows])},
                ),
            ],
        )
    )
    pts = [(round(float(x), 5), round(float(y), 5)) for x, y in rng.normal(size=(30, 2))]
    gold = csv_text(["x", "y"], pts, "\t")
    t.append(
        (
            "table_unkeyed_tsv",
            {"pts.tsv": gold},
            None,
            [
                ("identical", True, {"pts.tsv": gold}),
                (
                    "rows_shuffled",
                    True,
                    {"pts.tsv": csv_text(["x", "y"], sorted(pts, key=lambda p: p[1]), "\t")},
                ),
                (
                    "columns_swapped_with_names",
                    True,
                    {"pts.tsv": csv_text(["y", "x"], [(b, a) for a, b in pts], "\t")},
                ),
                (
                    "more_digits",
                    True,
                    {"pts.tsv": csv_text(["x", "y"], [(a + 1e-9, b) for a, b in pts], "\t")},
                ),
                (
                    "one_point_moved",
                    False,
                    {"pts.tsv": csv_text(["x", "y"], [*pts[:-1], (pts[-1][0] + 0.5, pts[-1][1])], "\t")},
                ),
                ("x_y_swapped", False, {"pts.tsv": csv_text(["x", "y"], [(b, a) for a, b in pts], "\t")}),
                ("comma_separated", False, {"pts.tsv": csv_text(["x", "y"], pts, ",")}),
            ],
        )
    )
    ranked = sorted(
        [(f"gene{i}", round(float(v), 4)) for i, v in enumerate(rng.uniform(size=8))], key=lambda r: -r[1]
    )
    gold = csv_text(["gene", "score"], ranked)
    t.append(
        (
            "table_ranked",
            {"ranked.csv": gold},
            "df.sort_values('score', ascending=False)",
            [
                ("identical", True, {"ranked.csv": gold}),
                (
                    "extra_rank_column",
                    True,
                    {
                        "ranked.csv": csv_text(
                            ["gene", "score", "rank"], [(*r, i + 1) for i, r in enumerate(ranked)]
                        )
                    },
                ),
                ("ascending_order", False, {"ranked.csv": csv_text(["gene", "score"], ranked[::-1])}),
                (
                    "top_two_swapped",
                    False,
                    {"ranked.csv": csv_text(["gene", "score"], [ranked[1], ranked[0], *ranked[2:]])},
                ),
            ],
        )
    )
    doc = {
        "model": "logistic_regression",
        "metrics": {"accuracy": 0.8125, "roc_auc": 0.8734, "f1": 0.7901},
        "coefficients": [0.52, -1.13, 0.07],
        "n_test": 48,
    }
    gold = json.dumps(doc, indent=2).encode()
    t.append(
        (
            "json_metrics",
            {"metrics.json": gold},
            None,
            [
                ("identical", True, {"metrics.json": gold}),
                (
                    "key_order_compact",
                    True,
                    {"metrics.json": json.dumps(dict(reversed(list(doc.items())))).encode()},
                ),
                (
                    "float_noise",
                    True,
                    {
                        "metrics.json": json.dumps(
                            {**doc, "metrics": {k: v + 1e-7 for k, v in doc["metrics"].items()}}
                        ).encode()
                    },
                ),
                ("int_as_float", True, {"metrics.json": json.dumps({**doc, "n_test": 48.0}).encode()}),
                (
                    "wrong_accuracy",
                    False,
                    {
                        "metrics.json": json.dumps(
                            {**doc, "metrics": {**doc["metrics"], "accuracy": 0.79}}
                        ).encode()
                    },
                ),
                (
                    "missing_key",
                    False,
                    {"metrics.json": json.dumps({k: v for k, v in doc.items() if k != "n_test"}).encode()},
                ),
                (
                    "coef_reordered",
                    False,
                    {"metrics.json": json.dumps({**doc, "coefficients": doc["coefficients"][::-1]}).encode()},
                ),
                (
                    "string_model",
                    False,
                    {"metrics.json": json.dumps({**doc, "model": "random_forest"}).encode()},
                ),
            ],
        )
    )
    field = rng.normal(size=(16, 16))
    snaps = rng.normal(size=(5, 8))
    t.append(
        (
            "arrays",
            {"field.npy": npy(field), "snaps.npz": npz(t=np.arange(5), u=snaps)},
            None,
            [
                ("identical", True, {"field.npy": npy(field), "snaps.npz": npz(t=np.arange(5), u=snaps)}),
                (
                    "float32_noise",
                    True,
                    {"field.npy": npy(field.astype(np.float32)), "snaps.npz": npz(u=snaps, t=np.arange(5))},
                ),
                (
                    "one_cell_off",
                    False,
                    {
                        "field.npy": npy(np.where(np.eye(16, dtype=bool) & (np.arange(16) == 3), 9.0, field)),
                        "snaps.npz": npz(t=np.arange(5), u=snaps),
                    },
                ),
                ("transposed", False, {"field.npy": npy(field.T), "snaps.npz": npz(t=np.arange(5), u=snaps)}),
                (
                    "snapshot_missing",
                    False,
                    {"field.npy": npy(field), "snaps.npz": npz(t=np.arange(4), u=snaps[:4])},
                ),
                (
                    "renamed_array",
                    False,
                    {"field.npy": npy(field), "snaps.npz": npz(time=np.arange(5), u=snaps)},
                ),
            ],
        )
    )
    t.append(
        (
            "scalar",
            {"energy.txt": b"1234.56789\n"},
            None,
            [
                ("identical", True, {"energy.txt": b"1234.56789\n"}),
                ("fewer_digits", True, {"energy.txt": b"1234.568"}),
                ("scientific", True, {"energy.txt": b"1.23456789e3\n"}),
                ("off_by_one_percent", False, {"energy.txt": b"1246.9"}),
                ("with_label", False, {"energy.txt": b"energy = 1234.56789"}),
            ],
        )
    )
    report = b"Treatment effect: 1.25 (95% CI 0.8 to 1.7), p = 0.0031\nConclusion: significant.\n"
    t.append(
        (
            "text_report",
            {"report.txt": report},
            None,
            [
                ("identical", True, {"report.txt": report}),
                (
                    "whitespace",
                    True,
                    {
                        "report.txt": b"Treatment effect:  1.250 (95% CI 0.80 to 1.70),\n"
                        b" p = 0.0031 Conclusion: significant."
                    },
                ),
                ("wrong_number", False, {"report.txt": report.replace(b"1.25", b"1.52")}),
                (
                    "wrong_conclusion",
                    False,
                    {"report.txt": report.replace(b"significant", b"not significant")},
                ),
            ],
        )
    )
    ys = [0.1, 0.35, 0.3, 0.6, 0.55, 0.8, 0.7, 0.9, 0.85]
    gold = figure(ys)
    t.append(
        (
            "figure",
            {"trend.png": gold},
            None,
            [
                ("identical", True, {"trend.png": gold}),
                ("pixel_noise", True, {"trend.png": figure(ys, noise=3)}),
                ("reversed_trend", False, {"trend.png": figure(ys[::-1])}),
                (
                    "different_data",
                    False,
                    {"trend.png": figure([0.5, 0.1, 0.9, 0.2, 0.8, 0.3, 0.7, 0.4, 0.6])},
                ),
                ("blank_axes", False, {"trend.png": figure([])}),
            ],
        )
    )
    return t


def main() -> int:
    t0 = time.perf_counter()
    rows, jobs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, outputs, program, preds in tasks():
            gold_dir = Path(tmp) / name
            for rel, data in outputs.items():
                (gold_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                (gold_dir / rel).write_bytes(data)
            script = synthesize(gold_dir, list(outputs), program_source=program)
            for label, want, files in preds:
                jobs.append((name, label, want, script.code, files, outputs))
        with ThreadPoolExecutor(max_workers=2) as pool:
            verdicts = list(
                pool.map(lambda j: run_evaluator(j[3], "eval_mod", j[4], j[5], timeout_s=60), jobs)
            )
    agree = 0
    per_task: dict[str, list[int]] = {}
    fp = fn = 0
    for (name, label, want, *_), (got, msg, _crashed) in zip(jobs, verdicts, strict=True):
        ok = got == want
        agree += ok
        fp += bool(got) and not want
        fn += want and not got
        per_task.setdefault(name, [0, 0])[0] += ok
        per_task[name][1] += 1
        rows.append(
            f"  {'ok ' if ok else 'BAD'} {name:18s} {label:28s} label={'pass' if want else 'fail'} "
            f"got={'pass' if got else 'fail'}  {msg[:90]}"
        )
    n = len(jobs)
    lines = [
        "D3-Gym evaluator quality benchmark (benchmarks/d3gym_evaluators.py)",
        "Deterministic synthesized evaluators (no model), run in veriforge.sandbox as separate processes.",
        f"tasks: {len(per_task)}  labelled predictions: {n} "
        f"({sum(j[2] for j in jobs)} correct variants, {sum(not j[2] for j in jobs)} wrong)",
        f"agreement with labels: {agree}/{n} = {100 * agree / n:.1f}%  "
        "(target >= 95%; paper: 87.5% vs human gold)",
        f"false passes (wrong answer accepted): {fp}   false fails (correct answer rejected): {fn}",
        f"wall time: {time.perf_counter() - t0:.1f} s",
        "",
        "per task:",
        *[f"  {k:18s} {a}/{b}" for k, (a, b) in per_task.items()],
        "",
        "per prediction:",
        *rows,
    ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[: 9 + len(per_task)]))
    return 0 if agree / n >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
