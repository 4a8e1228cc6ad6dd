"""Coverage of the CPU back-end's *estimated* time over the bundled implementations.

For every bundled c2cuda implementation (its ``solve``-style entry) and every torch2cuda
implementation (the ``extern "C"`` host launchers in its ``CUDA_SRC``), it records whether
:func:`veriforge.cuda.evaluate.estimate.estimate_c` / ``estimate_torch_impl`` produces an estimated
time for the task's configurations, and the first reason when it does not. The second part checks
the cost model's *ordering*: within each task, for every pair of implementations with different
``quality`` labels, is the estimated time summed over their common configs lower for
the higher-quality one? (A sanity figure for the cost model, not a test gate.)

    python benchmarks/estimate_coverage.py [--family c2cuda] [--tasks a,b] [--no-order]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter


def c2cuda_rows(wanted: set[str]) -> list[dict]:
    from veriforge.cuda.evaluate.backend import CCase
    from veriforge.cuda.evaluate.estimate import estimate_c
    from veriforge.cuda.tasks import bundled_tasks, load_task
    from veriforge.cuda.tasks.generate import make_case

    rows = []
    for folder in bundled_tasks("c2cuda"):
        spec = load_task(folder)
        if wanted and spec.id not in wanted:
            continue
        cases = []
        for cfg in spec.configs:
            case = make_case(spec, cfg.name, 0)
            cases.append(CCase(config=cfg.name, trial=0, args=case.args, variables=dict(case.env)))
        for impl in spec.implementations:
            t0 = time.perf_counter()
            source = (spec.folder / impl.file).read_text()
            ms, _features, notes = estimate_c(spec, source, cases)
            times = {m.details["config"]: m.value for m in ms}
            rows.append({"family": "c2cuda", "task": spec.id, "impl": impl.name, "quality": impl.quality,
                         "configs": len({c.config for c in cases}), "estimated": len(times), "times": times,
                         "last": cases[-1].config, "why": notes[0] if notes else "",
                         "launches": max((len(m.details["launches"]) for m in ms), default=0),
                         "seconds": time.perf_counter() - t0})
    return rows


def torch_rows(wanted: set[str]) -> list[dict]:
    from veriforge.cuda.evaluate.estimate import estimate_torch_impl
    from veriforge.cuda.tasks import bundled_tasks, load_task

    rows = []
    for folder in bundled_tasks("torch2cuda"):
        spec = load_task(folder)
        if wanted and spec.id not in wanted:
            continue
        for impl in spec.implementations:
            t0 = time.perf_counter()
            times, notes, launches = estimate_torch_impl(spec, spec.folder / impl.file)
            rows.append({"family": "torch2cuda", "task": spec.id, "impl": impl.name, "quality": impl.quality,
                         "configs": len(spec.configs), "estimated": len(times), "times": times,
                         "last": spec.configs[-1].name, "why": notes[0] if notes else "",
                         "launches": launches, "seconds": time.perf_counter() - t0})
    return rows


def ordering(rows: list[dict]) -> tuple[int, int, int, list[str]]:
    """(agreeing pairs, comparable pairs, ties, disagreements): per task, pairs of impls with different
    quality labels compared by their estimated time summed over the configs both have."""
    by_task: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by_task.setdefault((r["family"], r["task"]), []).append(r)
    agree = total = ties = 0
    bad = []
    for (_fam, task), impls in by_task.items():
        for i, a in enumerate(impls):
            for b in impls[i + 1:]:
                if a["quality"] is None or b["quality"] is None or a["quality"] == b["quality"]:
                    continue
                common = sorted(set(a["times"]) & set(b["times"]))
                if not common:
                    continue
                total += 1
                hi, lo = (a, b) if a["quality"] > b["quality"] else (b, a)
                t_hi, t_lo = (sum(x["times"][c] for c in common) for x in (hi, lo))
                if t_hi < t_lo * (1 - 1e-9):
                    agree += 1
                    continue
                ties += abs(t_hi - t_lo) <= 1e-9 * t_lo
                bad.append(f"{task}: {hi['impl']} (q{hi['quality']}) {t_hi * 1e6:.2f}us >= "
                           f"{lo['impl']} (q{lo['quality']}) {t_lo * 1e6:.2f}us")
    return agree, total, ties, bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="c2cuda,torch2cuda")
    ap.add_argument("--tasks", default="")
    ap.add_argument("--no-order", action="store_true")
    args = ap.parse_args(argv)
    wanted = {t for t in args.tasks.split(",") if t}
    started = time.time()
    rows: list[dict] = []
    fams = args.family.split(",")
    if "c2cuda" in fams:
        rows += c2cuda_rows(wanted)
    if "torch2cuda" in fams:
        rows += torch_rows(wanted)
    print("Estimated-time coverage of the bundled implementations (CPU back-end, H100-SXM cost model)")
    print(f"{'family':10} {'task':26} {'impl':22} {'q':>2} {'est/cfg':>7} {'launches':>8} {'last cfg us':>11}  why not")
    for r in rows:
        t = r["times"].get(r["last"])
        us = t * 1e6 if t is not None else float("nan")
        q = r["quality"] if r["quality"] is not None else "-"
        print(f"{r['family']:10} {r['task']:26} {r['impl']:22} {q:>2} {r['estimated']:>3}/{r['configs']:<3} "
              f"{r['launches']:>8} {us:>11.2f}  {r['why'][:150]}", flush=True)
    print()
    for fam in fams:
        sel = [r for r in rows if r["family"] == fam]
        full = sum(r["estimated"] == r["configs"] for r in sel)
        some = sum(r["estimated"] > 0 for r in sel)
        if sel:
            print(f"{fam}: estimate on every config for {full}/{len(sel)} impls ({full / len(sel):.0%}); "
                  f"on at least one config {some}/{len(sel)}")
    reasons = Counter(r["why"].split(": estimated time unknown: ")[-1][:90] for r in rows if r["why"])
    if reasons:
        print("reasons (first note per impl):")
        for why, n in reasons.most_common():
            print(f"  {n:3d}  {why}")
    if not args.no_order:
        for fam in fams:
            agree, total, ties, _ = ordering([r for r in rows if r["family"] == fam])
            if total:
                print(f"\n{fam}: cost-model ordering vs quality labels (time summed over common configs, pairs "
                      f"with different labels): {agree}/{total} agree ({agree / total:.0%}); {ties} of the "
                      f"disagreements are exact ties")
        agree, total, ties, bad = ordering(rows)
        for line in bad:
            print(f"  disagree: {line}")
    print(f"\nwall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
