"""Does the CudaPerf reward order each task's bundled implementations as their strategies predict?

For every bundled task, every implementation is evaluated on the CPU back-end (so speed is the cost
model's *estimated* time) and rewarded against the task's first (naive) implementation. For every
pair of implementations with different ``quality`` labels, the pair agrees when the higher-quality
one gets the higher reward; ties count as disagreements. Issue 14's target is >= 90 % of pairs.

    python benchmarks/cudaperf_reward_order.py [--family c2cuda] [--tasks a,b] [--preset veriforge]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time


def main(argv: list[str] | None = None) -> int:
    from veriforge.core.store import RunStore
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.tasks import bundled_tasks, load_task
    from veriforge.cudaperf.reward import reward

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="", help="c2cuda or torch2cuda (default: both)")
    ap.add_argument("--tasks", default="", help="comma-separated task ids")
    ap.add_argument("--preset", default="veriforge")
    args = ap.parse_args(argv)
    wanted = {t for t in args.tasks.split(",") if t}
    store = RunStore()
    started = time.time()
    agree = total = ties = 0
    failures: list[str] = []
    print(f"CudaPerf reward vs quality labels, preset {args.preset}, CPU back-end (estimated times, H100-SXM)")
    for family in ([args.family] if args.family else ["c2cuda", "torch2cuda"]):
        for folder in bundled_tasks(family):
            spec = load_task(folder)
            if wanted and spec.id not in wanted:
                continue
            results = {i.name: evaluate(spec, spec.folder / i.file, store=store) for i in spec.implementations}
            base = results[spec.implementations[0].name]
            rewards = {i.name: reward(results[i.name], base, config=args.preset) for i in spec.implementations}
            quality = {i.name: i.quality for i in spec.implementations}
            for a, b in itertools.combinations(spec.implementations, 2):
                if quality[a.name] == quality[b.name]:
                    continue
                hi, lo = (a, b) if quality[a.name] > quality[b.name] else (b, a)
                total += 1
                ra, rb = rewards[hi.name].value, rewards[lo.name].value
                if ra > rb:
                    agree += 1
                else:
                    ties += ra == rb
                    failures.append(f"{family}/{spec.id}: {hi.name} (q{quality[hi.name]}) {ra:.3f} <= "
                                    f"{lo.name} (q{quality[lo.name]}) {rb:.3f}")
            cells = " ".join(f"{n}={r.value:.3f}" for n, r in rewards.items())
            print(f"{family:10} {spec.id:26} {cells}", flush=True)
    print(f"\npairs ordered as the quality labels predict: {agree}/{total} "
          f"({100 * agree / max(1, total):.0f}%), {ties} ties; wall time {time.time() - started:.0f} s")
    for line in failures:
        print("  disagree:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
