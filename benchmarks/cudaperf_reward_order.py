"""Does the CudaPerf reward order each task's bundled implementations as their strategies predict?

For every bundled task, every implementation is evaluated on the CPU back-end (so speed is the cost
model's *estimated* time) and rewarded against the task's first (naive) implementation. Every bundled
task declares ``[[timing]]`` configurations (H100-scale sizes: tens to hundreds of MB of traffic,
1024^3 GEMMs); the CPU back-end never runs them, it only estimates them, and the reward's speed term
uses ONLY those timing configurations (``reward._time``), not the small verification configs, whose
times are mostly launch overhead. For every pair of implementations with different ``quality``
labels, the pair agrees when the higher-quality one gets the higher reward; ties count as
disagreements. Issue 14's target is >= 90 % of pairs.

Each disagreement is printed with both candidates' estimated timing-config times (or why a time is
unknown) and speed/structure terms, so the cause can be read off: a clipped speed term (both at least
``max_speedup`` faster than the baseline: structure decides), an unknown estimate, an upper bound.
``--max-speedup X`` is a diagnostic only (the preset's clip replaced by X); the recorded figure uses
the preset unchanged.

    python benchmarks/cudaperf_reward_order.py [--family c2cuda] [--tasks a,b] [--preset veriforge]
                                               [--max-speedup X]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
import time


def _why(result, r) -> str:
    """One candidate's timing-config times (or why unknown) and its speed / structure terms."""
    est = result.details.get("estimate") or {}
    names = est.get("timing") or list(est.get("configs") or {})
    parts = []
    for name in names:
        c = (est.get("configs") or {}).get(name) or {}
        if c.get("time_s") is not None:
            parts.append(f"{c['time_s'] * 1e6:.4g} us" + (" (upper bound)" if c.get("status") == "upper_bound" else ""))
        else:
            why = "; ".join(c.get("unknown") or ["no estimate"])
            parts.append(f"unknown: {why[:110]}")
    return (", ".join(parts) + f"; speed {r.terms.get('speed', 0.0):+.3f}"
            + (f" slower {r.terms['slower']:+.2f}" if "slower" in r.terms else "")
            + f" structure {r.terms.get('structure', 0.0):.3f}")


def main(argv: list[str] | None = None) -> int:
    from veriforge.core.store import RunStore
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.tasks import bundled_tasks, load_task
    from veriforge.cudaperf.reward import PRESETS, _time, reward

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="", help="c2cuda or torch2cuda (default: both)")
    ap.add_argument("--tasks", default="", help="comma-separated task ids")
    ap.add_argument("--preset", default="veriforge")
    ap.add_argument("--max-speedup", type=float, default=None,
                    help="diagnostic: replace the preset's max_speedup (the speed term's clip)")
    ap.add_argument("--structure", type=float, default=None,
                    help="diagnostic: replace the preset's structure weight")
    args = ap.parse_args(argv)
    config = PRESETS[args.preset]
    if args.max_speedup is not None:
        config = dataclasses.replace(config, max_speedup=args.max_speedup)
    if args.structure is not None:
        config = dataclasses.replace(config, structure=args.structure)
    wanted = {t for t in args.tasks.split(",") if t}
    store = RunStore()
    started = time.time()
    agree = total = ties = time_agree = 0
    failures: list[str] = []
    clip = "" if args.max_speedup is None else f" (diagnostic: max_speedup {args.max_speedup:g})"
    clip += "" if args.structure is None else f" (diagnostic: structure {args.structure:g})"
    print(f"CudaPerf reward vs quality labels, preset {args.preset}{clip}, CPU back-end (estimated times, "
          "H100-SXM; speed on the [[timing]] configurations)")
    for family in ([args.family] if args.family else ["c2cuda", "torch2cuda"]):
        for folder in bundled_tasks(family):
            spec = load_task(folder)
            if wanted and spec.id not in wanted:
                continue
            results = {i.name: evaluate(spec, spec.folder / i.file, store=store) for i in spec.implementations}
            base = results[spec.implementations[0].name]
            rewards = {i.name: reward(results[i.name], base, config=config) for i in spec.implementations}
            quality = {i.name: i.quality for i in spec.implementations}
            times = {i.name: _time(results[i.name], "estimated")[0] for i in spec.implementations}
            for a, b in itertools.combinations(spec.implementations, 2):
                if quality[a.name] == quality[b.name]:
                    continue
                hi, lo = (a, b) if quality[a.name] > quality[b.name] else (b, a)
                total += 1
                ra, rb = rewards[hi.name].value, rewards[lo.name].value
                ta, tb = times[hi.name], times[lo.name]
                time_agree += ta is not None and tb is not None and ta < tb
                if ra > rb:
                    agree += 1
                else:
                    ties += ra == rb
                    why = f"{_why(results[hi.name], rewards[hi.name])} | {_why(results[lo.name], rewards[lo.name])}"
                    failures.append(f"{family}/{spec.id}: {hi.name} (q{quality[hi.name]}) {ra:.3f} <= "
                                    f"{lo.name} (q{quality[lo.name]}) {rb:.3f}  [{why}]")
            cells = " ".join(f"{n}={r.value:.3f}" for n, r in rewards.items())
            print(f"{family:10} {spec.id:26} {cells}", flush=True)
    print(f"\npairs ordered as the quality labels predict: {agree}/{total} "
          f"({100 * agree / max(1, total):.0f}%), {ties} ties; wall time {time.time() - started:.0f} s")
    print(f"(diagnostic) pairs whose estimated timing-config time alone is ordered as the labels predict: "
          f"{time_agree}/{total} ({100 * time_agree / max(1, total):.0f}%)")
    for line in failures:
        print("  disagree:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
