"""What containment costs: per-run latency of each sandbox door against a plain subprocess.

    python benchmarks/sandbox_overhead.py [--n 20]

Prints median / p90 wall time (ms) for: a plain ``subprocess.run(["true"])``; ``sandbox.run(["true"])``
with the full candidate policy and with the filesystem view turned off (to show what the mount
namespace costs); ``run_python("pass")``; ``run_tool`` (what compilers pay); ``spawn`` + wait (the
kernel server's door); and a forked, confined fork-server child (``prepare_child`` +
``confine_child``, what a PyTorch candidate pays) against an unconfined forked child. All numbers
are measured on this machine (wall clock, not CPU time).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _timed(fn, n: int) -> tuple[float, float]:
    fn()  # warm-up (probes, imports)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.9 * len(times)))]


def _fork_child(confined: bool) -> None:
    from veriforge.sandbox import Policy
    from veriforge.sandbox.confine import confine_child, lend, prepare_child

    child = prepare_child(Policy()) if confined else None
    try:
        if child is not None:
            lend(child)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                if child is not None:
                    confine_child(child.spec)
            except BaseException:
                code = 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        if child is not None:
            child.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20)
    args = ap.parse_args()
    os.environ.setdefault("VERIFORGE_HOME", tempfile.mkdtemp(prefix="vf-bench-sbx-"))

    from veriforge.sandbox import Policy, planned_isolation, run, run_python, run_tool, spawn

    work = Path(tempfile.mkdtemp(prefix="vf-bench-tool-"))
    rows = [
        ("subprocess.run(['true']) (no isolation)", lambda: subprocess.run(["true"], check=True)),
        ("sandbox.run(['true']), candidate policy", lambda: run(["true"])),
        ("sandbox.run(['true']), no filesystem view", lambda: run(["true"], policy=Policy(filesystem=False))),
        ("run_python('pass')", lambda: run_python("pass")),
        ("run_tool(['true']) (compilers, drivers)", lambda: run_tool(["/bin/true"], cwd=work, timeout=30)),
        ("spawn(['true']).wait() (kernel server)", lambda: spawn(["true"]).wait(30)),
        ("fork, unconfined child", lambda: _fork_child(False)),
        ("fork, confined child (PyTorch candidates)", lambda: _fork_child(True)),
    ]
    iso = planned_isolation(Policy())
    print(f"python {sys.version.split()[0]}  full isolation here: {not Policy().missing_layers(iso)}  n={args.n}")
    print(f"{'door':<46} {'median ms':>10} {'p90 ms':>8}")
    for label, fn in rows:
        med, p90 = _timed(fn, args.n)
        print(f"{label:<46} {med:>10.1f} {p90:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
