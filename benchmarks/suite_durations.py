"""Where the test suite's time goes, and the per-file table the suite orders itself by.

Reads pytest logs written with ``--durations=0`` (one per package, run serially, e.g.
``pytest -p no:cacheprovider -q --durations=0 tests/cuda > cuda.log``) and prints the seconds per
package and the slowest files; with ``--write`` it stores ``{file: seconds}`` in tests/durations.json,
which tests/suite_order.py uses to hand the slowest files to the xdist workers first.

``--collect FILE`` (the output of ``pytest --collect-only -q``) adds the number of tests per file and
simulates ``-n WORKERS --dist loadfile`` on these serial figures: whole files go, in order, to whichever
worker is free first. It prints when each worker finishes for xdist's default order (most tests first)
and for the slowest-first order, so the idle time at the end of a run can be compared without running
the whole suite twice. (It ignores the parallelism inside a few tests, e.g. ``validate_many(jobs=2)``,
so it overstates the idle tail somewhat.)

    python benchmarks/suite_durations.py logs/*.log --collect collect.txt [--write]
"""

from __future__ import annotations

import argparse
import heapq
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "tests" / "durations.json"
_LINE = re.compile(r"^([\d.]+)s (call|setup|teardown)\s+(\S+)")


def file_seconds(logs: list[Path]) -> Counter[str]:
    """Seconds per test file, summed over setup, call and teardown of every test in ``logs``."""
    seconds: Counter[str] = Counter()
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            m = _LINE.match(line)
            if m:
                seconds[m.group(3).split("::", 1)[0]] += float(m.group(1))
    return seconds


def collected_counts(path: Path) -> dict[str, int]:
    """Tests per file, in collection order, from ``pytest --collect-only -q`` output."""
    counts: dict[str, int] = {}
    for line in path.read_text(errors="replace").splitlines():
        if "::" in line and not line.startswith(" "):
            f = line.split("::", 1)[0]
            counts[f] = counts.get(f, 0) + 1
    return counts


def simulate(order: list[str], seconds: dict[str, float], workers: int) -> list[float]:
    """When each worker finishes if whole files go, in ``order``, to the first free worker."""
    heap = [(0.0, w) for w in range(workers)]
    for f in order:
        t, w = heapq.heappop(heap)
        heapq.heappush(heap, (t + seconds.get(f, 0.0), w))
    return sorted(t for t, _ in heap)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", type=Path, help="pytest logs written with --durations=0")
    ap.add_argument("--collect", type=Path, help="output of pytest --collect-only -q (for the simulation)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--top", type=int, default=25, help="how many of the slowest files to list")
    ap.add_argument("--write", action="store_true", help=f"store the per-file seconds in {TABLE.relative_to(ROOT)}")
    args = ap.parse_args(argv)

    seconds = file_seconds(args.logs)
    if not seconds:
        print("no --durations=0 lines in the given logs", file=sys.stderr)
        return 2
    packages: Counter[str] = Counter()
    for f, s in seconds.items():
        parts = f.split("/")
        packages["/".join(parts[:2]) if len(parts) > 2 else f] += s
    print(f"total {sum(seconds.values()):.0f} s serial over {len(seconds)} files")
    for pkg, s in packages.most_common():
        print(f"  {s:8.1f} s  {pkg}")
    print(f"slowest {args.top} files:")
    for f, s in seconds.most_common(args.top):
        print(f"  {s:8.1f} s  {f}")

    if args.collect:
        import importlib.util

        spec = importlib.util.spec_from_file_location("suite_order", ROOT / "tests" / "suite_order.py")
        assert spec is not None and spec.loader is not None
        order_mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(order_mod)
        counts = collected_counts(args.collect)
        est = order_mod.estimated_seconds(counts, dict(seconds))
        by_count = sorted(counts, key=lambda f: -counts[f])  # xdist's --loadscope-reorder (stable)
        nodeids = [f"{f}::t" for f, n in counts.items() for _ in range(n)]
        slow_first = list(dict.fromkeys(order_mod.file_of(n) for n in
                                        order_mod.slowest_files_first(nodeids, str, dict(seconds))))
        for name, order in (("most tests first (xdist default)", by_count), ("slowest first", slow_first)):
            ends = simulate(order, est, args.workers)
            print(f"{args.workers} workers, {name}: finish at " + ", ".join(f"{t:.0f}" for t in ends)
                  + f" s (idle at the end: {ends[-1] - ends[0]:.0f} s)")
    if args.write:
        TABLE.write_text(json.dumps({"source": "benchmarks/suite_durations.py (--durations=0 logs)",
                                     "files": {f: round(s, 1) for f, s in sorted(seconds.items())}},
                                    indent=1) + "\n")
        print(f"wrote {TABLE.relative_to(ROOT)} ({len(seconds)} files)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
