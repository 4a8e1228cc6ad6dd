#!/usr/bin/env python3
"""GPU check: build, verify and time the whole bundled seed dataset on a real NVIDIA GPU.

Run on a machine with a GPU, nvcc and (for PyTorch→CUDA tasks) torch with CUDA:

    PYTHONPATH=src python benchmarks/gpu_check.py [--out benchmarks/results/gpu_check] [--deadline 540]

Phases (each checks the global deadline; every task is in its own try/except; results.json and
results.md are rewritten after every row, so a run cut short still leaves a table):

1. environment (GPU, nvcc, torch, ncu) → ``env`` in results.json;
2. parallel nvcc pre-build of every C→CUDA implementation and driver (cached on disk);
3. every C→CUDA implementation evaluated on the GPU back-end: correctness on every configuration,
   timing (warm-up, CUDA events, L2 flush, interleaved with the task's best implementation as
   baseline), median / IQR / speedup, review and side-stream flags;
4. the project's ``@pytest.mark.gpu`` tests;
5. every PyTorch→CUDA implementation (extensions pre-built in parallel), timed against the
   reference Model;
6. CPU-runtime vs GPU agreement on the smallest configuration of C→CUDA tasks (same inputs, both
   back-ends, outputs compared with the task's tolerance);
7. Nsight Compute profiles of a few correct candidates when ``ncu`` exists.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))


class Check:
    """Results so far, the deadline, and the writers (called after every row)."""

    def __init__(self, out: Path, deadline_s: float) -> None:
        self.out = out
        self.start = time.monotonic()
        self.deadline = self.start + deadline_s
        self.data: dict[str, Any] = {"env": {}, "c2cuda": [], "torch2cuda": [], "pytest": {}, "agreement": [],
                                     "profiles": [], "phases": {}, "errors": []}
        out.mkdir(parents=True, exist_ok=True)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def log(self, msg: str) -> None:
        print(f"[{time.monotonic() - self.start:7.1f}s] {msg}", flush=True)

    def error(self, where: str, exc: BaseException) -> None:
        self.data["errors"].append({"where": where, "error": f"{type(exc).__name__}: {exc}",
                                    "trace": traceback.format_exc()[-2000:]})
        self.log(f"ERROR {where}: {type(exc).__name__}: {exc}")

    def save(self) -> None:
        self.data["elapsed_s"] = round(time.monotonic() - self.start, 1)
        tmp = self.out / "results.json.tmp"
        tmp.write_text(json.dumps(self.data, indent=1, default=str))
        tmp.replace(self.out / "results.json")
        (self.out / "results.md").write_text(markdown(self.data))


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def markdown(d: dict[str, Any]) -> str:
    env = d.get("env", {})
    lines = ["# veriforge GPU check", "",
             f"- GPU: {env.get('gpu', '?')} (cc {env.get('compute_cap', '?')}), nvcc {env.get('nvcc', '?')}, "
             f"torch {env.get('torch', '?')} (CUDA {env.get('torch_cuda', '?')}), ncu: {env.get('ncu', 'no')}",
             f"- elapsed: {d.get('elapsed_s', '?')} s; phases: "
             + ", ".join(f"{k} {v}" for k, v in d.get("phases", {}).items()), ""]
    for fam in ("c2cuda", "torch2cuda"):
        rows = d.get(fam, [])
        ok = sum(1 for r in rows if r.get("correct"))
        lines += [f"## {fam}: {ok}/{len(rows)} implementations correct on the GPU", "",
                  "| task | impl | strategy | correct | config | median ms | IQR ms | baseline ms | speedup | flags |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            timings = r.get("timings") or [{}]
            for i, t in enumerate(timings):
                flags = []
                if t.get("review"):
                    flags.append("review>10x")
                if t.get("side_stream_suspect"):
                    flags.append("side-stream")
                head = [r["task"], r["impl"], r.get("strategy", ""), "yes" if r.get("correct") else
                        f"NO: {r.get('reason', '')[:80]}"] if i == 0 else ["", "", "", ""]
                cells = [*head, t.get("config", "-"), _fmt(t.get("median_ms")), _fmt(t.get("iqr_ms")),
                         _fmt(t.get("baseline_median_ms")), _fmt(t.get("speedup"), 3), " ".join(flags)]
                lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    py = d.get("pytest", {})
    lines += ["## pytest -m gpu", "", f"exit status {py.get('returncode', 'not run')}: {py.get('summary', '')}", ""]
    ag = d.get("agreement", [])
    lines += [f"## CPU runtime vs GPU ({sum(1 for a in ag if a.get('agree'))}/{len(ag)} agree)", "",
              "| task | impl | config | agree | max abs diff | note |", "|---|---|---|---|---|---|"]
    for a in ag:
        lines.append(f"| {a['task']} | {a['impl']} | {a.get('config', '')} | {a.get('agree')} | "
                     f"{_fmt(a.get('max_abs_diff'))} | {a.get('note', '')[:80]} |")
    lines += ["", "## Nsight Compute profiles", ""]
    for p in d.get("profiles", []):
        feats = ", ".join(f"{k.removeprefix('ncu.')}={_fmt(v, 3)}" for k, v in p.get("features", {}).items())
        lines.append(f"- {p['task']}/{p['impl']}: {p.get('error') or feats}")
    if d.get("errors"):
        lines += ["", "## Errors", ""] + [f"- {e['where']}: {e['error']}" for e in d["errors"]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------

def phase_env(ck: Check) -> None:
    env: dict[str, Any] = {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()}
    from veriforge.cuda.evaluate.gpu_build import detect_gpu

    info = detect_gpu()
    env["gpu"], env["compute_cap"] = (info.name, info.compute_cap) if info else (None, None)
    try:
        from veriforge.cuda.toolchain import find_toolchain

        env["nvcc"] = find_toolchain().version
    except Exception as exc:
        env["nvcc"] = f"missing ({exc})"
    try:
        import torch

        env["torch"], env["torch_cuda"], env["torch_cuda_available"] = (torch.__version__, torch.version.cuda,
                                                                          torch.cuda.is_available())
    except Exception as exc:
        env["torch"] = f"missing ({exc})"
    try:
        from veriforge.cuda.profile import find_ncu

        env["ncu"] = str(find_ncu())
    except Exception:
        env["ncu"] = None
    ck.data["env"] = env
    ck.log(f"env: {env}")


def _tasks(family: str, pattern: str | None) -> list[Any]:
    from veriforge.cuda.tasks.load import bundled_tasks, load_task

    specs = [load_task(p) for p in bundled_tasks(family)]
    return [s for s in specs if not pattern or pattern in s.id]


def _best_impl(spec: Any) -> Any:
    impls = list(spec.implementations)
    return max(impls, key=lambda i: (i.quality if i.quality is not None else -1)) if impls else None


def _timing_rows(res: Any) -> list[dict[str, Any]]:
    rows = []
    for m in res.measurements:
        if m.provenance != "measured" or m.name != "time_s":
            continue
        d = m.details
        rows.append({k: d.get(k) for k in ("config", "median_ms", "iqr_ms", "std_ms", "wall_median_ms",
                                             "baseline_median_ms", "speedup", "review", "side_stream_suspect")})
    return rows


def phase_prebuild_c(ck: Check, specs: list[Any], jobs: int) -> None:
    from veriforge.cuda.evaluate.backend import CParam
    from veriforge.cuda.evaluate.gpu import GpuBackend
    from veriforge.cuda.evaluate.gpu_build import build_driver, build_library

    arch = GpuBackend().arch()
    work = []
    for spec in specs:
        params = [CParam(p.name, p.type, p.role) for p in spec.params]
        work.append(("driver", spec.id, lambda s=spec, p=params: build_driver(s.entry, p, arch)))
        for impl in spec.implementations:
            src = (spec.folder / impl.file).read_text()
            work.append((impl.name, spec.id, lambda src=src, f=Path(impl.file).name: build_library(src, arch,
                                                                                                 filename=f)))
    ck.log(f"pre-building {len(work)} C→CUDA artefacts with {jobs} parallel nvcc jobs for {arch}")
    failures = 0
    with cf.ThreadPoolExecutor(jobs) as pool:
        futs = {pool.submit(fn): (name, tid) for name, tid, fn in work}
        for fut in cf.as_completed(futs):
            try:
                fut.result()
            except Exception as exc:
                failures += 1
                ck.log(f"  build failed: {futs[fut][1]}/{futs[fut][0]}: {str(exc)[:200]}")
    ck.log(f"pre-build done ({failures} failures)")


def phase_c2cuda(ck: Check, specs: list[Any], args: argparse.Namespace) -> None:
    from veriforge.cuda.evaluate.backend import TimingOptions
    from veriforge.cuda.evaluate.gpu import GpuBackend
    from veriforge.cuda.evaluate.harness import evaluate

    timing = TimingOptions(warmup=args.warmup, trials=args.trials, flush_l2=True)
    for n, spec in enumerate(specs, 1):
        if ck.left() < args.reserve:
            ck.log(f"deadline: skipping the remaining {len(specs) - n + 1} C→CUDA tasks")
            break
        best = _best_impl(spec)
        baseline = (spec.folder / best.file).read_text() if best else None
        be = GpuBackend(baseline_source=baseline)
        for impl in spec.implementations:
            row: dict[str, Any] = {"task": spec.id, "impl": impl.name, "strategy": impl.strategy,
                                   "baseline": best.name if best else None}
            t0 = time.monotonic()
            try:
                res = evaluate(spec, (spec.folder / impl.file).read_text(), backend=be, trials=2, timing=timing)
                row.update(correct=res.verdict.correct, reason=res.verdict.reason, timings=_timing_rows(res))
            except Exception as exc:
                ck.error(f"c2cuda {spec.id}/{impl.name}", exc)
                row.update(correct=False, reason=f"harness error: {type(exc).__name__}: {exc}")
            row["seconds"] = round(time.monotonic() - t0, 2)
            ck.data["c2cuda"].append(row)
            med = ", ".join(f"{t['config']}={_fmt(t['median_ms'])}ms" for t in row.get("timings", []))
            ck.log(f"c2cuda [{n}/{len(specs)}] {spec.id}/{impl.name}: "
                   f"{'OK' if row['correct'] else 'FAIL ' + str(row.get('reason'))[:120]} {med}")
            ck.save()


def phase_pytest(ck: Check, budget: float) -> None:
    if budget < 30:
        ck.data["pytest"] = {"returncode": None, "summary": "skipped: no time left"}
        return
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "-x", "--timeout", "300",
           str(ROOT / "tests")]
    ck.log(f"running {' '.join(cmd[2:])} (budget {budget:.0f}s)")
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=budget, cwd=ROOT, env=env)
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
        ck.data["pytest"] = {"returncode": proc.returncode, "summary": lines[-1] if lines else "",
                             "tail": "\n".join(lines[-40:]) + proc.stderr[-2000:]}
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        ck.data["pytest"] = {"returncode": "timeout", "summary": f"stopped after {budget:.0f}s", "tail": out[-4000:]}
    ck.log(f"pytest: {ck.data['pytest'].get('summary')}")
    ck.save()


_PREBUILD = """
import sys, types
src = open(sys.argv[1]).read()
m = types.ModuleType("vf_prebuild"); exec(compile(src, sys.argv[1], "exec"), m.__dict__)
"""


def phase_torch(ck: Check, specs: list[Any], args: argparse.Namespace) -> None:
    from veriforge.cuda.evaluate.backend import TimingOptions
    from veriforge.cuda.evaluate.harness import evaluate

    impls = [(s, i) for s in specs for i in s.implementations]
    if not impls:
        ck.log("no PyTorch→CUDA tasks bundled")
        return
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "MAX_JOBS": str(max(1, (os.cpu_count() or 4) // args.jobs_torch))}
    ck.log(f"pre-building {len(impls)} PyTorch extensions, {args.jobs_torch} at a time")
    procs: list[subprocess.Popen] = []
    pending = list(impls)
    started = time.monotonic()
    while (pending or procs) and ck.left() > args.reserve:
        while pending and len(procs) < args.jobs_torch:
            spec, impl = pending.pop(0)
            procs.append(subprocess.Popen([sys.executable, "-c", _PREBUILD, str(spec.folder / impl.file)], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        procs = [p for p in procs if p.poll() is None]
    for p in procs:
        p.kill()
    ck.log(f"pre-build finished in {time.monotonic() - started:.0f}s")
    timing = TimingOptions(warmup=args.warmup, trials=args.trials, flush_l2=True)
    for n, (spec, impl) in enumerate(impls, 1):
        if ck.left() < args.reserve:
            ck.log(f"deadline: skipping the remaining {len(impls) - n + 1} PyTorch→CUDA implementations")
            break
        row: dict[str, Any] = {"task": spec.id, "impl": impl.name, "strategy": impl.strategy,
                               "baseline": "reference Model"}
        t0 = time.monotonic()
        try:
            res = evaluate(spec, (spec.folder / impl.file).read_text(), backend="gpu", trials=2, timing=timing,
                           timeout=min(300.0, max(60.0, ck.left() - args.reserve)))
            row.update(correct=res.verdict.correct, reason=res.verdict.reason, timings=_timing_rows(res))
        except Exception as exc:
            ck.error(f"torch2cuda {spec.id}/{impl.name}", exc)
            row.update(correct=False, reason=f"harness error: {type(exc).__name__}: {exc}")
        row["seconds"] = round(time.monotonic() - t0, 2)
        ck.data["torch2cuda"].append(row)
        ck.log(f"torch2cuda [{n}/{len(impls)}] {spec.id}/{impl.name}: "
               f"{'OK' if row['correct'] else 'FAIL ' + str(row.get('reason'))[:120]}")
        ck.save()


def phase_agreement(ck: Check, specs: list[Any], args: argparse.Namespace) -> None:
    """Same inputs through the CPU runtime and the GPU; outputs compared with the task tolerance."""
    import numpy as np

    from veriforge.cuda.evaluate.backend import CCase, CParam, CRequest, TimingOptions
    from veriforge.cuda.evaluate.compare import compare
    from veriforge.cuda.evaluate.cpu import CpuBackend
    from veriforge.cuda.evaluate.gpu import GpuBackend
    from veriforge.cuda.tasks.generate import make_case

    cpu_be, gpu_be = CpuBackend(), GpuBackend()
    for spec in specs:
        if ck.left() < args.reserve:
            ck.log("deadline: stopping the agreement check")
            break
        impl = _best_impl(spec)
        if impl is None:
            continue
        config = min(spec.configs, key=lambda c: sum(v for v in c.variables.values()
                                                      if isinstance(v, int | float) and not isinstance(v, bool)))
        row: dict[str, Any] = {"task": spec.id, "impl": impl.name, "config": config.name}
        try:
            case = make_case(spec, config.name, 0)
            params = [CParam(p.name, p.type, p.role) for p in spec.params]
            src = (spec.folder / impl.file).read_text()

            requests = []
            for _ in range(2):  # one private copy of the inputs per back-end
                args_copy = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
                requests.append(CRequest(task_id=spec.id, source=src, entry=spec.entry, params=params,
                                         cases=[CCase(config.name, 0, args_copy, dict(case.env))], timeout_s=120.0,
                                         timing=TimingOptions(enabled=False), filename=Path(impl.file).name))
            c_run, g_run = cpu_be.run_c(requests[0]), gpu_be.run_c(requests[1])
            if not (c_run.ok and g_run.ok):
                row.update(agree=False, note=f"cpu: {c_run.status} {c_run.message[:60]}; "
                                             f"gpu: {g_run.status} {g_run.message[:60]}")
            else:
                worst, agree = 0.0, True
                for p in spec.params:
                    if not p.is_output:
                        continue
                    a, b = c_run.cases[0].outputs[p.name], g_run.cases[0].outputs[p.name]
                    cmp = compare(p.name, b, a, spec.tolerance.for_output(p.name, p.dtype))
                    agree = agree and cmp.passed
                    worst = max(worst, cmp.max_abs_error or 0.0)
                row.update(agree=agree, max_abs_diff=worst)
        except Exception as exc:
            ck.error(f"agreement {spec.id}", exc)
            row.update(agree=False, note=f"{type(exc).__name__}: {exc}")
        ck.data["agreement"].append(row)
        ck.log(f"agreement {spec.id}/{impl.name} ({config.name}): {row.get('agree')} {row.get('note', '')[:100]}")
        ck.save()


def phase_profile(ck: Check, specs: list[Any], args: argparse.Namespace) -> None:
    if not ck.data["env"].get("ncu"):
        ck.log("ncu not found: no profiles")
        return
    from veriforge.cuda.evaluate.backend import TimingOptions
    from veriforge.cuda.evaluate.gpu import GpuBackend
    from veriforge.cuda.evaluate.harness import evaluate

    done = 0
    for spec in specs:
        if done >= args.profiles or ck.left() < args.reserve:
            break
        impl = _best_impl(spec)
        if impl is None:
            continue
        row: dict[str, Any] = {"task": spec.id, "impl": impl.name}
        try:
            res = evaluate(spec, (spec.folder / impl.file).read_text(), backend=GpuBackend(), trials=2,
                           configs=[spec.configs[-1].name], timing=TimingOptions(trials=1, warmup=0, profile=True))
            row["features"] = {k: v for k, v in res.features.items() if k.startswith("ncu.")}
            row["error"] = res.features.get("profile_error")
            row["kernels"] = [k.get("name") for k in res.features.get("ncu_kernels", [])]
        except Exception as exc:
            ck.error(f"profile {spec.id}", exc)
            row["error"] = f"{type(exc).__name__}: {exc}"
        ck.data["profiles"].append(row)
        done += 1
        ck.log(f"profile {spec.id}/{impl.name}: {row.get('error') or len(row.get('features', {}))} features")
        ck.save()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "gpu_check"))
    ap.add_argument("--deadline", type=float, default=540.0, help="global time limit in seconds (default 540)")
    ap.add_argument("--reserve", type=float, default=15.0, help="seconds kept free at the end of each phase")
    ap.add_argument("--tasks", default=None, help="only tasks whose id contains this text")
    ap.add_argument("--trials", type=int, default=20, help="timed trials per configuration")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel nvcc builds")
    ap.add_argument("--jobs-torch", type=int, default=4, help="parallel PyTorch extension builds")
    ap.add_argument("--profiles", type=int, default=3, help="Nsight Compute profiles to take")
    ap.add_argument("--pytest-budget", type=float, default=120.0)
    ap.add_argument("--skip", default="", help="comma-separated phases to skip: c2cuda,pytest,torch,agreement,profile")
    args = ap.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    ck = Check(Path(args.out), args.deadline)
    ck.log(f"veriforge GPU check -> {ck.out} (deadline {args.deadline:.0f}s)")

    def phase(name: str, fn: Any, *a: Any) -> None:
        if name in skip:
            ck.data["phases"][name] = "skipped"
            return
        t0 = time.monotonic()
        try:
            fn(*a)
            ck.data["phases"][name] = f"{time.monotonic() - t0:.0f}s"
        except Exception as exc:
            ck.error(f"phase {name}", exc)
            ck.data["phases"][name] = "failed"
        ck.save()

    phase("env", phase_env, ck)
    from veriforge.cuda.evaluate.gpu import GpuBackend

    why = GpuBackend().unavailable_reason()
    if why:
        ck.log(f"the GPU back-end cannot run here: {why}")
        ck.data["errors"].append({"where": "gpu", "error": why})
        ck.save()
        return 2
    c_specs: list[Any] = []
    t_specs: list[Any] = []
    try:
        c_specs = _tasks("c2cuda", args.tasks)
        t_specs = _tasks("torch2cuda", args.tasks)
    except Exception as exc:
        ck.error("loading tasks", exc)
    ck.log(f"{len(c_specs)} C→CUDA and {len(t_specs)} PyTorch→CUDA tasks")
    if "c2cuda" not in skip:
        phase("prebuild", phase_prebuild_c, ck, c_specs, args.jobs)
    phase("c2cuda", phase_c2cuda, ck, c_specs, args)
    phase("pytest", lambda: phase_pytest(ck, min(args.pytest_budget, ck.left() - args.reserve - 60)))
    phase("torch", phase_torch, ck, t_specs, args)
    phase("agreement", phase_agreement, ck, c_specs, args)
    phase("profile", phase_profile, ck, c_specs, args)
    ck.save()
    rows = ck.data["c2cuda"] + ck.data["torch2cuda"]
    ck.log(f"done: {sum(1 for r in rows if r.get('correct'))}/{len(rows)} correct; results in {ck.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
