"""OptiML-X on kernels that are not bundled tasks: the user-kernel path, as a CUDA engineer runs it.

Eight naive kernels of the kinds people write (benchmarks/user_kernels/: column and row sums, an
out-of-place transpose, a 2-D heat step, a digit histogram with global atomics, batched dot products,
a softmax-like row shift, a linear layer with ReLU) are optimised exactly as
``veriforge optimize FILE.cu --kernel K --grid ... --block ... --param ...`` does: the original kernel
is the reference, no task folder, built-in operators only, CPU back-end. Nothing in the project names
these kernels; an operator that helps here helps because of the kernel's structure.

Sizes are realistic (4-64 MB per array), so most given sizes are too slow to emulate for every
candidate: they are then timed (estimated) only and correctness is checked at shrunk sizes
(docs/optiml.md, "Sizes the CPU runtime cannot emulate in time"); the "verified at" column says where.

Per kernel it prints the estimated start and best times (H100-SXM cost model: *estimated*, not
measured), the speedup, the evaluations used, how many candidates hit the CPU emulation limit, the
held-out check of the winner (sizes no proposer saw), and the operators on the winning path. The
summary is the distribution of speedups (each value, quartiles, geometric mean, how many reached
1.1x and 2x), not one count.

    python benchmarks/optiml_user_kernels.py --budget 16 [--kernels col_sum,transpose] [--out FILE]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent / "user_kernels"

# file stem -> (grid, block, params, sizes)
KERNELS: dict[str, tuple[str, str, dict[str, str], dict[str, str]]] = {
    "col_sum": ("(cols + 127) / 128", "128", {"rows": "4096", "cols": "2048"}, {"A": "rows*cols", "out": "cols"}),
    "transpose": ("(cols + 15) / 16, (rows + 15) / 16", "16, 16", {"rows": "4096", "cols": "2048"},
                  {"in": "rows*cols", "out": "rows*cols"}),
    "heat_step": ("(nx + 15) / 16, (ny + 15) / 16", "16, 16", {"nx": "2048", "ny": "2048", "alpha": "0.1"},
                  {"u": "nx*ny", "v": "nx*ny"}),
    "digit_hist": ("(n + 255) / 256", "256", {"n": "4194304"}, {"x": "n", "hist": "10"}),
    "batched_dot": ("(batch + 127) / 128", "128", {"batch": "8192", "len": "512"},
                    {"x": "batch*len", "y": "batch*len", "out": "batch"}),
    "row_shift": ("(rows + 127) / 128", "128", {"rows": "4096", "cols": "1024"},
                  {"A": "rows*cols", "out": "rows*cols"}),
    "linear_relu": ("(N + 15) / 16, (M + 15) / 16", "16, 16", {"M": "512", "N": "512", "K": "512"},
                    {"x": "M*K", "W": "N*K", "b": "N", "y": "M*N"}),
    "row_sum": ("(rows + 127) / 128", "128", {"rows": "8192", "cols": "1024"}, {"A": "rows*cols", "out": "rows"}),
}


def verified_at(built) -> str:
    """The first verified configuration's sizes, marked when the given ones were too slow to emulate."""
    first = built.spec.configs[0]
    sizes = ",".join(str(v) for v in first.variables.values() if isinstance(v, int))
    return f"{sizes} (shrunk)" if built.emulation else sizes


def main(argv: list[str] | None = None) -> int:
    from veriforge.core.store import RunStore
    from veriforge.optiml.user_kernel import build_user_task
    from veriforge.optiml.xsearch import XSearchSettings, optimize

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=16, help="evaluations per search (default 16)")
    ap.add_argument("--kernels", default="", help="comma-separated kernel names (default: all eight)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="also write the table to this file")
    args = ap.parse_args(argv)
    wanted = [k for k in args.kernels.split(",") if k] or list(KERNELS)
    unknown = [k for k in wanted if k not in KERNELS]
    if unknown:
        ap.error(f"unknown kernel(s) {unknown}; have {', '.join(KERNELS)}")
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    store = RunStore()
    started = time.time()
    say(f"OptiML-X on user kernels (not bundled tasks): built-in operators, CPU back-end, times *estimated* by "
        f"the H100-SXM cost model; budget {args.budget} evaluations, seed {args.seed}")
    say(f"{'kernel':12} {'start':>10} {'best':>10} {'speedup':>8} {'evals':>5} {'emu-lim':>7} "
        f"{'held-out':>9} {'verified at':>22}  winning path")
    speedups: dict[str, float] = {}
    root = Path(tempfile.mkdtemp(prefix="vf-user-kernels-"))
    for name in wanted:
        grid, block, params, sizes = KERNELS[name]
        t0 = time.time()
        try:
            built = build_user_task(HERE / f"{name}.cu", name, grid, block, params, sizes, root=root)
            settings = XSearchSettings(max_evaluations=args.budget, seed=args.seed)
            res = optimize(settings=settings, store=store, resolved=(built.spec, built.start, built.label))
        except Exception as exc:  # one kernel's failure is its row, not the benchmark's
            say(f"{name:12} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            continue
        tree = res.tree_json()
        checks = (res.heldout or {}).get("checks") or {}
        held = f"{sum(1 for c in checks.values() if c.get('passed'))}/{len(checks)} ok" if checks else "-"
        path = [(e.get("metadata") or {}).get("operator") or str(e.get("description", ""))[:28]
                for e in res.best.edits()]
        speedups[name] = res.speedup
        say(f"{name:12} {res.start_time * 1e6:8.2f}us {res.best_time * 1e6:8.2f}us {res.speedup:7.2f}x "
            f"{res.search.stats.unique_evaluations:5d} {len(tree.get('emulation_limited') or []):7d} "
            f"{held:>9} {verified_at(built):>22}  {' -> '.join(path) or 'start'}  ({time.time() - t0:.0f} s)")
    if speedups:
        xs = list(speedups.values())
        gm = math.exp(sum(math.log(x) for x in xs) / len(xs))
        q1, med, q3 = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else (xs[0],) * 3
        ranked = sorted(speedups.items(), key=lambda kv: kv[1])
        say(f"\nspeedup distribution over {len(xs)} kernels: " + ", ".join(f"{k} {v:.2f}x" for k, v in ranked))
        say(f"min {min(xs):.2f}x  q1 {q1:.2f}x  median {med:.2f}x  q3 {q3:.2f}x  max {max(xs):.2f}x  "
            f"geomean {gm:.2f}x; >= 1.1x: {sum(x >= 1.1 for x in xs)}/{len(xs)}, >= 2x: {sum(x >= 2 for x in xs)}/"
            f"{len(xs)}")
    say(f"wall time {time.time() - started:.0f} s")
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
