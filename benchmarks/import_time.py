"""Import-time figures: how long `import veriforge…` and `veriforge --help` take.

Run: python benchmarks/import_time.py
Prints the median of several cold-process runs for each target (seconds, measured on this CPU).
Speed goals are checked here, not by timed unit tests.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

TARGETS = {
    "import veriforge": [sys.executable, "-c", "import veriforge"],
    "import veriforge.core.store": [sys.executable, "-c", "import veriforge.core.store"],
    "import veriforge.llm": [sys.executable, "-c", "import veriforge.llm"],
    "import veriforge.sandbox": [sys.executable, "-c", "import veriforge.sandbox"],
    "veriforge --help": [sys.executable, "-m", "veriforge", "--help"],
}


def time_cmd(cmd: list[str], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    base = time_cmd([sys.executable, "-c", "pass"])
    print(f"{'target':32s} {'median s':>9s} {'minus bare python':>18s}")
    print(f"{'python -c pass':32s} {base:9.3f} {0.0:18.3f}")
    for name, cmd in TARGETS.items():
        t = time_cmd(cmd)
        print(f"{name:32s} {t:9.3f} {t - base:18.3f}")


if __name__ == "__main__":
    main()
