"""Dataset build throughput: tasks and implementations verified per minute on this machine.

Builds N tasks (default 40, spread over every registered family: ``--limit ceil(N / families)``,
then ``--max-tasks N``) into a temporary folder with ``--jobs 2`` and the cost-model estimate on,
exactly as ``veriforge cudaperf dataset build`` does, then extrapolates the wall time of the full
build from the number of tasks every family can generate. Every figure is a measured wall time on
this machine (CPU runtime verification; no GPU involved), printed with the machine it ran on.

    .venv/bin/python benchmarks/cudaperf_dataset_throughput.py [--tasks 40] [--jobs 2]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="keep the build here (default: a temp dir)")
    args = ap.parse_args()

    from veriforge.cudaperf.dataset.build import BuildOptions, build
    from veriforge.cudaperf.dataset.family import families

    fams = families()
    counts = {}
    for fam in fams:
        try:
            counts[fam.name] = sum(1 for _ in fam.generate(args.seed))
        except Exception as exc:  # a broken family counts what it yielded before failing
            counts[fam.name] = 0
            print(f"family {fam.name}: generator failed ({type(exc).__name__}: {exc})")
    per_family = max(1, math.ceil(args.tasks / max(1, len(fams))))
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "ds"
        started = time.perf_counter()
        summary = build(BuildOptions(out=out, limit=per_family, max_tasks=args.tasks, jobs=args.jobs,
                                     seed=args.seed, progress=False))
        wall = time.perf_counter() - started
    tot = summary.total()
    generable = sum(counts.values())
    tpm = 60 * tot.verified / wall if wall else 0.0
    ipm = 60 * tot.impls_verified / wall if wall else 0.0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"date: {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"machine: {platform.platform()}, {cpus} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"families: {len(fams)}; tasks per family generable (seed {args.seed}): {counts}")
    print(f"build: {tot.generated} generated, {tot.duplicates} duplicates, {tot.bundled} bundled-leak, "
          f"{tot.malformed} malformed, {tot.verified} verified ({tot.kept} kept, {tot.dropped} dropped), "
          f"{tot.impls_verified} implementations, --jobs {args.jobs}, estimates on")
    print(f"wall time (measured on this machine): {wall:.1f} s")
    print(f"throughput: {tpm:.1f} tasks verified/min, {ipm:.1f} implementations verified/min")
    if tpm:
        hours = generable / tpm / 60
        print(f"extrapolated full build: {generable} generable tasks / {tpm:.1f} per min = {hours:.1f} h "
              f"(upper bound: duplicates are skipped before verification)")


if __name__ == "__main__":
    main()
