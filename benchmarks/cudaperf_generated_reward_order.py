"""Does the CudaPerf reward order each GENERATED task's implementations as their quality labels predict?

The companion of ``cudaperf_reward_order.py`` (the 63 bundled tasks) for the dataset families
(``veriforge.cudaperf.dataset.families``). A deterministic sample of tasks per family — ``--per-family``
evenly spaced over the family's enumeration, so different variants (dtypes, layouts, ops) are hit — is
written to a temporary folder; every implementation is evaluated on the CPU back-end (verified on the
small configurations, then *estimated* by the H100-SXM cost model, never run, at the task's
``[[timing]]`` configuration) and rewarded against the task's first implementation
(``veriforge.cudaperf.reward.reward(res, base)``). The reward's speed term uses only the timing
configuration. For every pair of implementations with different ``quality`` labels, the pair agrees
when the higher-quality one gets the higher reward; ties count as disagreements.

Printed: one line per task (each implementation's reward and estimated timing time), the figure, the
same figure per family, how many implementations got a complete timing estimate, and every
disagreement with both candidates' timing estimates (time, or why unknown; "upper bound" when the cost
model priced some access at its worst case) and reward terms, so the cause can be read off.

    python benchmarks/cudaperf_generated_reward_order.py [--per-family 3] [--families a,b]
                                                         [--kind c2cuda|torch2cuda] [--seed 0] [--jobs 2]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any


def sample(tasks: list[Any], k: int) -> list[Any]:
    """``k`` tasks evenly spaced over the enumeration (the midpoints of k equal slices): deterministic."""
    n = len(tasks)
    return [tasks[(2 * i + 1) * n // (2 * k)] for i in range(min(k, n))]


def _timing_text(result: Any) -> tuple[str, bool]:
    """(the timing configuration's estimate in words, whether it has a time)."""
    est = result.details.get("estimate") or {}
    names = est.get("timing") or []
    parts, complete = [], bool(names)
    for name in names:
        c = (est.get("configs") or {}).get(name) or {}
        if c.get("time_s") is not None:
            parts.append(f"{c['time_s'] * 1e6:.4g} us" + (" (upper bound)" if c.get("status") == "upper_bound" else ""))
        else:
            complete = False
            parts.append("unknown: " + "; ".join(c.get("unknown") or ["no estimate"])[:160])
    if not names:
        parts.append(f"no timing estimate ({result.verdict.reason or 'not verified'})"[:160])
    return ", ".join(parts), complete


def evaluate_task(folder: str) -> dict[str, Any]:
    """Evaluate and reward every implementation of one task folder (a process-pool job: plain data back)."""
    from veriforge.core.store import RunStore
    from veriforge.cuda.evaluate.harness import evaluate
    from veriforge.cuda.tasks import load_task
    from veriforge.cudaperf.reward import reward

    spec = load_task(folder)
    store = RunStore()
    started = time.time()
    results = {i.name: evaluate(spec, spec.folder / i.file, "cpu", store=store) for i in spec.implementations}
    base = results[spec.implementations[0].name]
    impls = []
    for i in spec.implementations:
        res = results[i.name]
        r = reward(res, base)
        text, complete = _timing_text(res)
        impls.append({"name": i.name, "quality": i.quality, "correct": bool(res.verdict.correct),
                      "reward": r.value, "speed": r.terms.get("speed", 0.0), "slower": r.terms.get("slower"),
                      "structure": r.terms.get("structure", 0.0), "timing": text, "complete": complete})
    return {"id": spec.id, "impls": impls, "wall_s": time.time() - started}


def pairs(task: dict[str, Any]) -> list[tuple[bool, bool, str]]:
    """(agrees, tie, description) for every pair of implementations with different quality labels."""
    out = []
    for a, b in itertools.combinations(task["impls"], 2):
        if a["quality"] == b["quality"]:
            continue
        hi, lo = (a, b) if a["quality"] > b["quality"] else (b, a)
        agrees = hi["reward"] > lo["reward"]

        def why(x: dict[str, Any]) -> str:
            slower = f" slower {x['slower']:+.2f}" if x["slower"] is not None else ""
            return f"{x['timing']}; speed {x['speed']:+.3f}{slower} structure {x['structure']:.3f}"

        text = (f"{task['id']}: {hi['name']} (q{hi['quality']}) {hi['reward']:.3f} {'>' if agrees else '<='} "
                f"{lo['name']} (q{lo['quality']}) {lo['reward']:.3f}  [{why(hi)} | {why(lo)}]")
        out.append((agrees, hi["reward"] == lo["reward"], text))
    return out


def main(argv: list[str] | None = None) -> int:
    from veriforge.cudaperf.dataset.family import families

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-family", type=int, default=3, help="tasks sampled per family (default 3)")
    ap.add_argument("--families", default="", help="comma-separated family names (default: all)")
    ap.add_argument("--kind", default="", help="c2cuda or torch2cuda (default: both)")
    ap.add_argument("--seed", type=int, default=0, help="family seed")
    ap.add_argument("--jobs", type=int, default=2, help="tasks evaluated at once (processes, default 2)")
    args = ap.parse_args(argv)
    wanted = [f for f in args.families.split(",") if f]
    fams = [f for f in families(args.kind or None) if not wanted or f.name in wanted]
    unknown = sorted(set(wanted) - {f.name for f in fams})
    if unknown:
        print(f"error: unknown families {', '.join(unknown)}", file=sys.stderr)
        return 2
    started = time.time()
    print(f"CudaPerf reward vs quality labels on GENERATED tasks: {args.per_family} per family, seed {args.seed}, "
          "preset veriforge, CPU back-end (verified on the small configs; speed = the cost model's ESTIMATED "
          "time on the H100-SXM at each task's [[timing]] configuration, never run)")
    with tempfile.TemporaryDirectory(prefix="vf-gen-order-") as tmp:
        jobs: list[tuple[str, str]] = []
        for fam in fams:
            for t in sample(list(fam.generate(args.seed)), args.per_family):
                jobs.append((fam.name, str(t.write(Path(tmp)))))
        with ProcessPoolExecutor(max_workers=max(1, min(args.jobs, 2))) as pool:
            done = list(pool.map(evaluate_task, [folder for _, folder in jobs]))
    agree = total = ties = complete = impls = 0
    per_family: dict[str, Counter[str]] = defaultdict(Counter)
    failures: list[str] = []
    for (fam, _), task in zip(jobs, done, strict=True):
        cells = " ".join(f"{i['name']}(q{i['quality']})={i['reward']:.3f}" for i in task["impls"])
        print(f"{fam:26} {task['id']:44} {cells}", flush=True)
        for i in task["impls"]:
            impls += 1
            complete += i["complete"]
            per_family[fam]["complete"] += i["complete"]
            per_family[fam]["impls"] += 1
            print(f"{'':28}{i['name']:22} {i['timing']}")
        for ok, tie, text in pairs(task):
            total += 1
            agree += ok
            ties += tie
            per_family[fam]["pairs"] += 1
            per_family[fam]["agree"] += ok
            if not ok:
                failures.append(f"{fam}/{text}")
    print(f"\npairs ordered as the quality labels predict: {agree}/{total} ({100 * agree / max(1, total):.0f}%), "
          f"{ties} ties; "
          f"implementations with a complete timing estimate: {complete}/{impls}; "
          f"{len(done)} tasks, wall time {time.time() - started:.0f} s")
    for fam in (f.name for f in fams):
        c = per_family[fam]
        print(f"  {fam:26} pairs {c['agree']}/{c['pairs']}   complete timing estimates {c['complete']}/{c['impls']}")
    for line in failures:
        print("  disagree:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
