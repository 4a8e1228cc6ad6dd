"""Evaluations per minute on the CPU back-end (cold and warm cache) and warm re-evaluation latency.

    python benchmarks/eval_throughput.py [--tasks DIR] [--jobs N] [--limit K]

Uses the bundled dataset (or --tasks DIR); a fresh VERIFORGE_HOME per run so "cold" means cold
(the CPU runtime build is reported separately; PyTorch→CUDA candidates are forked from a fork server
that imports torch once). Prints a small table; exit 1 if warm latency is >= 50 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--limit", type=int, default=0, help="at most K tasks")
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="vf-bench-")
    os.environ["VERIFORGE_HOME"] = home

    from veriforge.core.store import RunStore
    from veriforge.cuda.evaluate.executor import ThreadExecutor
    from veriforge.cuda.evaluate.harness import evaluate
    from veriforge.cuda.tasks import bundled_tasks, iter_tasks, load_task

    folders = list(iter_tasks(args.tasks)) if args.tasks else bundled_tasks()
    if args.limit:
        folders = folders[: args.limit]
    jobs = []
    for folder in folders:
        spec = load_task(folder)
        jobs += [(spec, folder / impl.file) for impl in spec.implementations]
    store = RunStore(Path(home) / "runs.sqlite")

    t0 = time.perf_counter()
    from veriforge.cuda.tasks.validate import warm_up

    warm_up(folders)  # CPU runtime build; the torch fork server starts in the background
    build_s = time.perf_counter() - t0
    families = {"c2cuda": 0, "torch2cuda": 0}
    for spec, _ in jobs:
        families[spec.family] = families.get(spec.family, 0) + 1

    def run(job):
        return evaluate(job[0], job[1], store=store, estimate=False)

    rows = []
    for label in ("cold", "warm"):
        started = time.perf_counter()
        with ThreadExecutor(args.jobs) as ex:
            results = ex.map(run, jobs)
        secs = time.perf_counter() - started
        correct = sum(r.verdict.correct for r in results)
        cached = sum(r.cached for r in results)
        rows.append((label, len(jobs), correct, cached, secs, 60 * len(jobs) / secs))
    lat = []
    for job in jobs[: min(len(jobs), 30)]:
        s = time.perf_counter()
        r = run(job)
        lat.append(time.perf_counter() - s)
        assert r.cached
    print(f"tasks: {len(folders)}  evaluations: {len(jobs)} ({', '.join(f'{k}: {v}' for k, v in families.items())})"
          f"  jobs: {args.jobs}  warm-up (runtime build): {build_s:.1f} s")
    print(f"{'cache':<6} {'evals':>6} {'correct':>8} {'cached':>7} {'seconds':>9} {'evals/min':>10}")
    for label, n, ok, cached, secs, rate in rows:
        print(f"{label:<6} {n:>6} {ok:>8} {cached:>7} {secs:>9.1f} {rate:>10.0f}")
    p50, worst = statistics.median(lat) * 1e3, max(lat) * 1e3
    print(f"warm re-evaluation latency: median {p50:.1f} ms, max {worst:.1f} ms (limit 50 ms)")
    return 0 if worst < 50 else 1


if __name__ == "__main__":
    sys.exit(main())
