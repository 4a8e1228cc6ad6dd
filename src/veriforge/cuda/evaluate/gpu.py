"""The GPU back-end: run candidates on a real NVIDIA GPU, check them, and time them honestly.

C→CUDA: the candidate is built by nvcc into a shared library and run by a generated driver
program (:mod:`.gpu_driver`) in a fresh process per evaluation (a CUDA fault poisons the context,
so no process ever runs a second candidate after one), with a time limit and a process-group
kill. PyTorch→CUDA: correctness through :mod:`.torchrun` on CUDA tensors (the harness already
runs this in a fresh subprocess), then ``Model`` and ``ModelNew`` timed with CUDA events in the
same loop (:mod:`.gpu_torch`).

Timing follows what the field converged on (docs/gpu-backend.md): warm-up, many trials timed
with CUDA events, the L2 cache flushed between trials, input sets cycled so no trial re-reads
the previous one's data, candidate and baseline interleaved in random order, median and IQR
reported, side-stream work detected, and speedups over 10× flagged for review. Every number
produced here has provenance ``measured``.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from veriforge.core.types import Measurement
from veriforge.errors import CompileError

from .backend import (
    Backend,
    BackendRun,
    BackendUnavailableError,
    CaseOutput,
    CRequest,
    TorchRequest,
    describe_exit,
)
from .driver import read_case_output, write_case_input
from .gpu_build import build_driver, build_library, detect_gpu
from .gpu_driver import MARK_ERROR
from .timing import side_stream_suspect, speedup_review, summarize

__all__ = ["GpuBackend", "timing_measurements"]

SIDE_STREAM_PROBLEM = ("the candidate leaves work running after it returns (wall time after "
                       "cudaDeviceSynchronize is {wall:.3f} ms, CUDA-event time {event:.3f} ms on config {config!r}): "
                       "work on a side stream the timer does not wait for")


def _tail(text: str, limit: int = 4000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


class GpuBackend(Backend):
    """Runs candidates on the first visible NVIDIA GPU.

    ``baseline_source``: a CUDA source with the same ``extern "C"`` entry (e.g. the task's best
    bundled implementation); when given (here or as ``request.baseline_source``) it is timed
    interleaved with the candidate and every measurement carries the speedup. ``arch`` overrides
    the target (default: the GPU's own, from ``nvidia-smi``).
    """

    name = "gpu"

    def __init__(self, baseline_source: str | None = None, *, arch: str | None = None,
                 nvcc_flags: tuple[str, ...] = ("-O3",), seed: int | None = None) -> None:
        self.baseline_source = baseline_source
        self._arch = arch
        self.nvcc_flags = tuple(nvcc_flags)
        self.seed = random.randrange(2**31) if seed is None else int(seed)

    # ---- identity ------------------------------------------------------------------------------
    def label(self) -> str:
        info = detect_gpu()
        return f"gpu:{info.name}" if info else "gpu"

    def arch(self) -> str:
        if self._arch:
            return self._arch
        info = detect_gpu()
        return info.arch if info else "native"

    def unavailable_reason(self) -> str | None:
        if detect_gpu() is None:
            return "no NVIDIA GPU is visible (nvidia-smi is missing or lists no device)"
        try:
            from veriforge.cuda.toolchain import find_toolchain

            find_toolchain()
        except Exception as exc:  # ToolchainNotFoundError and friends: say why, do not crash
            return f"nvcc is not available: {exc}"
        return None

    def isolates(self, family: str) -> bool:
        # C→CUDA candidates run inside the driver program (own process, time limit); PyTorch
        # candidates are Python modules and need the harness's subprocess.
        return family == "c2cuda"

    # ---- C→CUDA ----------------------------------------------------------------------------------
    def run_c(self, request: CRequest) -> BackendRun:
        why = self.unavailable_reason()
        if why:
            raise BackendUnavailableError(why)
        arch = self.arch()
        try:
            lib = build_library(request.source, arch, filename=request.filename, flags=self.nvcc_flags)
        except CompileError as exc:
            return BackendRun(status="compile_error", message=str(exc), log=_tail(exc.log, 8000))
        notes: list[str] = []
        baseline = self.baseline_source or getattr(request, "baseline_source", None)
        base_lib = None
        if baseline and request.timing.enabled:
            try:
                base_lib = build_library(baseline, arch, filename="baseline.cu", flags=self.nvcc_flags)
            except CompileError as exc:
                notes.append(f"baseline not timed: it does not compile ({exc})")
        try:
            driver = build_driver(request.entry, request.params, arch)
        except CompileError as exc:  # the harness's fault, not the candidate's
            raise BackendUnavailableError(f"the GPU driver program does not build: {exc}\n{exc.log}") from exc
        with tempfile.TemporaryDirectory(prefix="vf-gpu-eval-") as tmp:
            work = Path(tmp)
            (work / "cand.so").symlink_to(lib)
            plan = ["lib cand.so"]
            if base_lib is not None:
                (work / "base.so").symlink_to(base_lib)
                plan.append("lib base.so")
            t = request.timing
            if t.enabled and t.trials > 0:
                plan.append(f"timing {max(t.warmup, 0)} {t.trials} {int(t.flush_l2)} {self.seed} timing.json")
            for k, case in enumerate(request.cases):
                write_case_input(work / f"case{k}.in", request.params, case.args)
                plan.append(f"case {case.config} case{k}.in case{k}.out")
            (work / "plan.txt").write_text("\n".join(plan) + "\n")
            lent = [str(lib)] + ([str(base_lib)] if base_lib is not None else [])
            code, out, err, timed_out = _run_driver([str(driver), "plan.txt"], work, request.timeout_s, lent)
            outputs: list[CaseOutput] = []
            for k, case in enumerate(request.cases):
                path = work / f"case{k}.out"
                if not path.exists():
                    break
                seconds, values = read_case_output(path, request.params, case.args)
                outputs.append(CaseOutput(config=case.config, trial=case.trial, outputs=values, seconds=seconds))
            run = BackendRun(status="ok", cases=outputs, log=_tail(out + err, 8000))
            if len(outputs) < len(request.cases) or code != 0:
                _set_failure(run, request, outputs, code, err, timed_out)
            elif (work / "timing.json").exists():
                timing = json.loads((work / "timing.json").read_text())
                run.measurements = timing_measurements(timing, self.label(), baseline=base_lib is not None)
                run.features["gpu_timing"] = {k: v for k, v in timing.items() if k != "configs"}
                _side_stream_problems(run)
            if run.ok and t.profile:
                run.features.update(_profile(driver, work, request))
        if notes:
            run.features["notes"] = notes
        return run

    # ---- PyTorch→CUDA ----------------------------------------------------------------------------
    def run_torch_timing(self, request: TorchRequest) -> BackendRun:
        """Only the interleaved CUDA-event timing (correctness is judged across the trust boundary
        by :mod:`.torchsplit`); measurements, and problems carried by one case."""
        why = self.unavailable_reason()
        if why:
            raise BackendUnavailableError(why)
        from .gpu_torch import guard_timers, time_torch

        originals = guard_timers()
        measurements, problems = time_torch(request, originals, label=self.label(), seed=self.seed)
        run = BackendRun(status="ok", measurements=measurements)
        if problems:
            run.cases.append(CaseOutput(config=request.configs[0].name, trial=0, problems=problems))
        return run

    def run_torch(self, request: TorchRequest) -> BackendRun:
        why = self.unavailable_reason()
        if why:
            raise BackendUnavailableError(why)
        from .gpu_torch import guard_timers, time_torch
        from .torchrun import run_torch_request

        originals = guard_timers()  # before the candidate is imported: it must not patch what we time with
        run = run_torch_request(request, device="cuda", label=self.label())
        if run.ok and request.timing.enabled and request.timing.trials > 0:
            try:
                measurements, problems = time_torch(request, originals, label=self.label(), seed=self.seed)
            except Exception as exc:  # a candidate that ran once but fails when timed is still the candidate's
                run.status = "error"
                run.message = f"timing the candidate failed: {type(exc).__name__}: {exc}"
                return run
            run.measurements = [m for m in run.measurements if m.provenance != "measured"] + measurements
            if problems and run.cases:
                run.cases[0].problems.extend(problems)
        return run


def _run_driver(cmd: list[str], cwd: Path, timeout: float, expose: list[str] | None = None
                ) -> tuple[int, str, str, bool]:
    """The driver program executes the candidate: it runs in the sandbox (GPU policy: no address
    space limit, devices usable), with the built libraries lent read-only."""
    from veriforge.sandbox import ToolTimeoutError, run_tool

    try:
        code, _, res = run_tool(cmd, cwd=cwd, timeout=timeout, gpu=True, expose=[cmd[0], *(expose or [])])
    except ToolTimeoutError:
        return -9, "", f"the driver did not finish within {timeout:g} s and was killed", True
    return code, res.stdout_text, res.stderr_text, False


def _set_failure(run: BackendRun, request: CRequest, outputs: list[CaseOutput], code: int, err: str,
                 timed_out: bool) -> None:
    if len(outputs) < len(request.cases):
        bad = request.cases[len(outputs)]
        run.failed_case = f"{bad.config}/{bad.trial}"
        where = f"config {bad.config!r} (trial {bad.trial})"
    else:
        where = "timing (after every case passed through once)"
        run.failed_case = f"{request.cases[-1].config}/{request.cases[-1].trial}" if request.cases else None
    detail = "\n".join(line.replace(MARK_ERROR, "CUDA error:").strip() for line in err.splitlines() if line.strip())
    if timed_out:
        run.status = "timeout"
        run.message = (f"{where}: the candidate did not finish within {request.timeout_s:g} s on the GPU and was "
                       f"killed")
    else:
        run.status = "crash"
        label, how = (("CUDA error", f"stopped on a CUDA error (exit status {code})") if MARK_ERROR in err
                      else describe_exit(code, err))
        run.features["crash"] = label
        run.message = f"{where}: the candidate failed on the GPU: its program {how}"
        if detail:
            run.message += f":\n{_tail(detail, 2000)}"


def timing_measurements(timing: dict[str, Any], label: str, *, baseline: bool) -> list[Measurement]:
    """One ``time_s`` Measurement per configuration from the driver's timing JSON.

    ``value`` is the median CUDA-event time, ``spread`` the IQR; ``details`` has the standard
    deviation, the wall-clock median, the side-stream flag and — with a baseline — its median,
    the speedup and whether it needs review (> 10×).
    """
    out = []
    for cfg in timing.get("configs", []):
        libs = cfg["libs"]
        ev = summarize(libs[0]["event_ms"])
        wall = summarize(libs[0]["wall_ms"])
        details: dict[str, Any] = {
            "config": cfg["config"], "median_ms": ev.median_ms, "iqr_ms": ev.iqr_ms, "std_ms": ev.std_ms,
            "min_ms": ev.min_ms, "max_ms": ev.max_ms, "wall_median_ms": wall.median_ms,
            "side_stream_suspect": side_stream_suspect(ev.median_ms, wall.median_ms),
            "input_sets": cfg.get("sets"), "warmup": timing.get("warmup"),
            "flush_l2_bytes": timing.get("flush_bytes"), "device": timing.get("device"),
            "compute_capability": timing.get("cc"), "timer": "cuda-events",
        }
        if baseline and len(libs) > 1:
            base = summarize(libs[1]["event_ms"])
            speedup, review = speedup_review(ev.median_ms, base.median_ms)
            details.update({"baseline_median_ms": base.median_ms, "baseline_iqr_ms": base.iqr_ms,
                            "speedup": speedup, "review": review, "interleaved": True})
        out.append(Measurement(name="time_s", value=ev.median_ms * 1e-3, unit="s", spread=ev.iqr_ms * 1e-3,
                               provenance="measured", backend=label, samples=ev.n, details=details))
    return out


def _side_stream_problems(run: BackendRun) -> None:
    for m in run.measurements:
        d = m.details
        if d.get("side_stream_suspect"):
            sentence = SIDE_STREAM_PROBLEM.format(wall=d["wall_median_ms"], event=d["median_ms"], config=d["config"])
            for case in run.cases:
                if case.config == d["config"]:
                    case.problems.append(sentence)
                    break


def _profile(driver: Path, work: Path, request: CRequest) -> dict[str, Any]:
    """Nsight Compute metrics of the candidate on the first case (``ncu`` optional)."""
    from veriforge.cuda import profile

    try:
        ncu = profile.find_ncu()
    except Exception as exc:
        return {"profile_error": str(exc)}
    first = request.cases[0]
    (work / "profile_plan.txt").write_text(f"lib cand.so\ncase {first.config} case0.in profile.out\n")
    try:
        lent = [str((work / "cand.so").resolve())]
        kernels = profile.run_ncu([str(driver), "profile_plan.txt"], ncu=ncu, launch_count=8, cwd=work,
                                  timeout=max(120.0, request.timeout_s), expose=lent)
    except Exception as exc:
        return {"profile_error": f"{type(exc).__name__}: {exc}"}
    main = max(kernels, key=lambda k: k.time_s or 0.0)
    feats = {f"ncu.{k}": v for k, v in main.features.items()}
    feats["ncu_kernels"] = [k.to_dict() for k in kernels]
    feats["ncu_config"] = first.config
    return feats


def gpu_available() -> bool:
    """True when a GPU and nvcc are both present (what ``@pytest.mark.gpu`` tests need)."""
    return shutil.which("nvidia-smi") is not None and GpuBackend().unavailable_reason() is None
