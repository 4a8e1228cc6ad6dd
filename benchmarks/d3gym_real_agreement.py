"""Evaluator agreement on tasks built from *real* repositories (not our synthetic ones).

    python benchmarks/d3gym_real_agreement.py TASKS_ROOT [TASKS_ROOT ...]

TASKS_ROOT is the ``--out`` folder of ``veriforge d3gym build`` (e.g. the folders the yield survey
``benchmarks/d3gym_yield.py`` leaves behind). For every built task the real gold outputs are turned
into labelled predictions:

- *correct* (label pass): harmless rewrites a careful human would accept -- table rows shuffled
  (unless the evaluator's plan says row order matters), columns reordered, float noise at 1e-9
  relative, values re-printed with 12 significant digits, CRLF line ends; JSON keys reordered and
  re-indented; a figure restyled (the plot recorder's data unchanged, another picture);
- *wrong* (label fail): the validation's negative controls -- perturbed values, missing rows or
  columns, constant output, wrong type, missing/empty file, swapped series, dropped categories,
  wrong intervals.

Each prediction is judged by the task's own evaluator, run in the sandbox exactly as the
environment runs it. Printed: agreement per output kind (tables, figures, other) and overall, false
passes and false fails with their messages. The labels are by construction, not by a human panel:
they say what the evaluator must accept and reject, on outputs of code we did not write.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from veriforge.discovery.evalcheck import (
    _FIGURE_POSITIVE,
    _task_python,
    negative_controls,
    plan_outputs,
    run_evaluator,
)

TABLE_SEPS = {".csv": ",", ".tsv": "\t", ".txt": None}


def _floats(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def table_variants(data: bytes, sep: str, ordered: bool, xlsx: bool = False) -> list[tuple[str, bytes]]:
    """Harmless rewrites of a delimited table, or of an Excel sheet as a workbook (label: pass)."""
    encoding = "utf-8"
    if xlsx:
        from veriforge.discovery.evalsynth.runtime import xlsx_sheets

        rows = xlsx_sheets(io.BytesIO(data))[0][1]
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:  # research tables are often Latin-1 (Excel exports)
            encoding, text = "latin-1", data.decode("latin-1")
        rows = list(csv.reader(io.StringIO(text), delimiter=sep))
    if len(rows) < 2 or len(rows[0]) < 1:
        return []
    header, body = rows[0], [r for r in rows[1:] if r]

    def dump(hdr: list[str], rows_: list[list[str]], end: str = "\n") -> bytes:
        if xlsx:
            from veriforge.discovery.xlsxwrite import write_xlsx

            return write_xlsx([hdr, *rows_], sheet="renamed")  # another sheet name is harmless too
        buf = io.StringIO()
        csv.writer(buf, delimiter=sep, lineterminator=end).writerows([hdr, *rows_])
        return buf.getvalue().encode(encoding)

    out: list[tuple[str, bytes]] = []
    rng = random.Random(3)
    if not ordered and len(body) > 1:
        shuffled = body[:]
        rng.shuffle(shuffled)
        if shuffled != body:
            out.append(("rows_shuffled", dump(header, shuffled)))
    if len(header) > 1 and len(set(header)) == len(header) and all(header):
        order = list(reversed(range(len(header))))
        out.append(("columns_reordered", dump([header[i] for i in order], [[r[i] for i in order] for r in body
                                                                         if len(r) == len(header)])))

    def remap(f) -> list[list[str]]:
        return [[f(c) if _floats(c) is not None and "." in c else c for c in r] for r in body]

    out.append(("float_noise_1e-9", dump(header, remap(lambda c: repr(float(c) * (1 + 1e-9))))))
    out.append(("reprinted_12_digits", dump(header, remap(lambda c: f"{float(c):.12g}"))))
    if not xlsx:
        out.append(("crlf", dump(header, body, "\r\n")))
    return [(n, b) for n, b in out if b != data]


def json_variants(data: bytes) -> list[tuple[str, bytes]]:
    try:
        obj = json.loads(data)
    except ValueError:
        return []

    def rev(o):
        if isinstance(o, dict):
            return {k: rev(o[k]) for k in reversed(list(o))}
        if isinstance(o, list):
            return [rev(v) for v in o]
        return o

    return [("keys_reordered_reindented", json.dumps(rev(obj), indent=4).encode())]


def cases_for(task_dir: Path) -> tuple[dict, list[tuple[str, str, str, bool, dict]]]:
    """``(task.json, [(case, output, kind, label_pass, pred files)])``."""
    task = json.loads((task_dir / "task.json").read_text())
    gold_dir = task_dir / "gold_results"
    plan = (task.get("veriforge") or {}).get("eval_plan") or {}
    if not plan.get("outputs"):
        plan = plan_outputs(gold_dir, [o.removeprefix("pred_results/") for o in task["veriforge"]["outputs"]])
    kinds = {e["path"]: e.get("kind", "other") for e in plan["outputs"]}
    negatives, _skipped = negative_controls(gold_dir, plan)
    gold_files = negatives[0][2]
    out = []
    for name, rel, files in negatives:
        base = name.split(":")[0]
        positive = name == "gold" or base in _FIGURE_POSITIVE
        out.append((name, rel, kinds.get(rel, "all") if rel else "all", positive, files))
    for entry in plan["outputs"]:
        rel, kind = entry["path"], entry.get("kind", "other")
        gold = gold_files.get(rel)
        if gold is None:
            continue
        params = entry.get("params") or {}
        if kind == "table":
            sep = params.get("sep") or TABLE_SEPS.get(Path(rel).suffix) or ","
            variants = table_variants(gold, sep, params.get("row_order", "unordered") != "unordered",
                                      xlsx=rel.lower().endswith(".xlsx"))
        elif kind == "json":
            variants = json_variants(gold)
        else:
            variants = []
        for vname, b in variants:
            out.append((f"{vname}:{rel}", rel, kind, True, {**gold_files, rel: b}))
    return task, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    t0 = time.perf_counter()
    tasks = sorted(p.parent for root in args.roots for p in root.glob("*/task.json"))
    jobs = []
    for tdir in tasks:
        task, cases = cases_for(tdir)
        name = task.get("eval_script_name") or "eval.py"
        script = (tdir / "eval" / name).read_text()
        module = Path(name).stem if Path(name).stem.isidentifier() else "eval_mod"
        gold = cases[0][4]
        py = _task_python(tdir, task)
        for case in cases:
            jobs.append((tdir.name, case, script, module, gold, py))

    def judge(job):
        tname, (cname, _rel, kind, label, files), script, module, gold, py = job
        got, msg, _crashed = run_evaluator(script, module, files, gold, python=py, timeout_s=120)
        return tname, cname, kind, label, got, msg

    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        results = list(pool.map(judge, jobs))
    agree: Counter = Counter()
    total: Counter = Counter()
    misses = []
    for tname, cname, kind, label, got, msg in results:
        group = "figure" if kind in ("figure", "image") else "table" if kind == "table" else "other"
        total[group] += 1
        if got is label:
            agree[group] += 1
        else:
            misses.append((tname, cname, label, got, msg))
    print(f"D3-Gym evaluator agreement on real-repository tasks ({len(tasks)} tasks from {len(args.roots)} "
          f"build folder(s)); labels by construction")
    for group in ("table", "figure", "other"):
        if total[group]:
            print(f"  {group:<7} {agree[group]:>4}/{total[group]:<4} = {100 * agree[group] / total[group]:.1f}%")
    n, a = sum(total.values()), sum(agree.values())
    print(f"  overall {a:>4}/{n:<4} = {100 * a / max(n, 1):.1f}%  "
          f"(false passes {sum(1 for m in misses if not m[2])}, false fails {sum(1 for m in misses if m[2])})")
    print(f"  labelled predictions: {sum(1 for r in results if r[3])} correct, "
          f"{sum(1 for r in results if not r[3])} wrong; wall time {time.perf_counter() - t0:.1f} s")
    for tname, cname, label, got, msg in misses:
        print(f"  MISS {tname} {cname}: label={'pass' if label else 'fail'} got={got}: {msg[:200]}")


if __name__ == "__main__":
    main()
