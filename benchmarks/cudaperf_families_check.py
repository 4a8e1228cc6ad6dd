"""Verify a random sample of generated CudaPerf tasks on the CPU back-end: pass rate and throughput.

The dataset build drops every task whose implementations fail verification, so a family is only as
large as its pass rate lets it be; this script is the quick check a family author runs before
committing: it draws ``--per-family`` tasks of each named family (seeded), writes them to a temp
directory, runs ``validate_many`` and prints, per family, how many tasks passed, each failure's
reason, and how many tasks were verified per minute.

    python benchmarks/cudaperf_families_check.py c_elementwise c_reduce --per-family 15 [--jobs 2]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from veriforge.cuda.tasks.validate import validate_many
    from veriforge.cudaperf.dataset.family import families, get_family

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("families", nargs="*", help="family names (default: every c2cuda family)")
    ap.add_argument("--per-family", type=int, default=15, help="tasks sampled per family")
    ap.add_argument("--seed", type=int, default=0, help="family seed (the dataset's)")
    ap.add_argument("--sample-seed", type=int, default=1, help="seed of the random sample")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ids", default="", help="comma-separated task ids to check instead of a sample")
    ns = ap.parse_args(argv)
    names = ns.families or [f.name for f in families("c2cuda")]
    wanted = {t for t in ns.ids.split(",") if t}
    rng = random.Random(ns.sample_seed)
    total = passed = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cudaperf-check-") as tmp:
        for name in names:
            tasks = list(get_family(name).generate(ns.seed))
            sample = [t for t in tasks if t.id in wanted] if wanted else \
                rng.sample(tasks, min(ns.per_family, len(tasks)))
            if not sample:
                continue
            folders = [t.write(Path(tmp)) for t in sample]
            t0 = time.perf_counter()
            reports = validate_many(folders, ns.jobs)
            dt = time.perf_counter() - t0
            ok = sum(r.ok for r in reports)
            total += len(reports)
            passed += ok
            print(f"{name}: {ok}/{len(reports)} passed of {len(tasks)} tasks in {dt:.1f} s "
                  f"({60 * len(reports) / dt:.1f} tasks/min)", flush=True)
            for r in reports:
                if r.ok:
                    continue
                print(f"  FAIL {r.task_id}: {'; '.join(r.problems)}")
                for i in r.impls:
                    if not i.correct:
                        print(f"    {i.name} ({i.strategy}): {i.reason[:600]}")
    elapsed = time.perf_counter() - started
    rate = 100.0 * passed / total if total else 0.0
    print(f"total: {passed}/{total} passed ({rate:.1f}%), {elapsed:.1f} s, "
          f"{60 * total / elapsed if elapsed else 0:.1f} tasks verified per minute")
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
