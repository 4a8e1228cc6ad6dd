"""Time to compile a small kernel with the CPU CUDA runtime, plain and with AddressSanitizer.

Every compile is a cache miss (each kernel differs by a constant), so the figure is what a search or
a ``--memcheck`` evaluation pays per new candidate: the host compiler (in the sandbox), the link,
and the signing of the executable. The runtime variants are built first, in a fresh
``VERIFORGE_HOME``, and timed separately. CPU seconds are the children's user+sys time (the compiler
and linker), which a busy machine inflates far less than wall time; the load average is printed
before and after.

    python benchmarks/cpu_compile_time.py [--kernels 8] [--out benchmarks/results/cpu_compile_time.txt]

To compare two checkouts, run it with each one's ``src`` on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

KERNEL = """__global__ void scale_{k}(float* a, const float* b, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * {k}.5f + b[i];
}}
"""


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _timed(fn) -> tuple[float, float]:
    """(wall seconds, children's CPU seconds) of ``fn()``."""
    wall, cpu = time.perf_counter(), _children_cpu()
    fn()
    return time.perf_counter() - wall, _children_cpu() - cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=8, help="distinct kernels compiled per variant")
    ap.add_argument("--out", type=Path, help="also write the report here")
    args = ap.parse_args(argv)

    # The sandboxed compiler must reach the cache: keep it under the user's cache folder, as by default.
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    base.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="vf-bench-compile-", dir=base))
    os.environ["VERIFORGE_HOME"] = str(home)
    from veriforge.cuda import cpu
    from veriforge.cuda.cpu import build

    lines = [f"load average before: {os.getloadavg()[0]:.2f} (1 min)",
             f"compiler: {build.host_compiler().version}"]
    try:
        stamp = int(time.time())
        for sanitize in (False, True):
            name = "AddressSanitizer" if sanitize else "plain -O2"
            wall, cpu_s = _timed(lambda s=sanitize: build.runtime(sanitize=s))
            pch = (build.runtime(sanitize=sanitize).root / "vf_cuda.h.gch").is_file()
            lines.append(f"{name}: runtime build {wall:.1f} s wall, {cpu_s:.1f} s CPU "
                         f"(precompiled header: {'yes' if pch else 'no'})")
            walls, cpus = [], []
            for k in range(args.kernels):
                source = f"// {stamp}\n" + KERNEL.format(k=k)
                built: list = []
                wall, cpu_s = _timed(lambda src=source, s=sanitize, out=built: out.append(cpu.compile(src, sanitize=s)))
                for m in built:
                    m.close()
                walls.append(wall)
                cpus.append(cpu_s)
            lines.append(f"{name}: {args.kernels} kernels, per compile median {statistics.median(walls):.2f} s wall, "
                         f"{statistics.median(cpus):.2f} s CPU (min {min(cpus):.2f}, max {max(cpus):.2f})")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    lines.append(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
