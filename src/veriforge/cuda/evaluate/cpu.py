"""The CPU back-end: C→CUDA candidates run as whole programs on veriforge's CPU runtime;
PyTorch→CUDA candidates run on CPU tensors through the veriforge binding.

Numbers it produces are honest about where they came from: the wall time of each call on the
CPU runtime is ``emulated`` (useful only to compare candidates on this machine), and the
cost-model time (added by the harness) is ``estimated``. Streams on the CPU runtime execute
synchronously, so work hidden on a side stream is always finished when ``solve`` returns here;
the GPU back-end is where the timer must wait on every stream.

Dynamic checks a GPU would make (docs/tasks.md "Dynamic checks"), each turned into a problem that
rejects the candidate: host code dereferencing a device pointer (the runtime's device-memory guard
kills the program with a ``veriforge: host code ... device memory`` line), ``solve`` copying most
of its input to the host (the runtime's copy counters), and outputs that change when blocks and
threads run in reverse order (a second call per case, ``CRequest.race_check``).
"""

from __future__ import annotations

import re
import secrets
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from veriforge.core.types import Measurement
from veriforge.errors import CompileError, UnsupportedFeatureError

from .backend import Backend, BackendRun, CaseOutput, CRequest, TorchRequest, describe_exit
from .driver import (
    MARK_ERROR,
    CaseChecks,
    driver_source,
    read_case_checks,
    read_case_output,
    write_case_input,
)

__all__ = ["CpuBackend"]

LABEL = "cpu-runtime"
COPY_SHARE = 0.5
"""A call that copies at least this share of its input bytes device→host is doing the work on the host."""
COPY_MIN_BYTES = 256
"""...unless it copied fewer bytes than this (a flag or a few partial sums of a tiny input)."""
_HOST_DEREF = re.compile(r"^veriforge: host code (read|wrote|accessed) device memory at (.*?)(; a GPU would fault "
                         r"here\))?\s*$", re.M)


def _tail(text: str, limit: int = 2000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


class CpuBackend(Backend):
    """Runs candidates on the CPU (no GPU needed)."""

    name = "cpu"

    def label(self) -> str:
        return LABEL

    def isolates(self, family: str) -> bool:
        # C→CUDA candidates run as separate programs with a time limit; Python candidates are
        # imported, so the harness must put them in a subprocess.
        return family == "c2cuda"

    def run_c(self, request: CRequest) -> BackendRun:
        from veriforge.cuda import cpu

        source = request.source.rstrip() + "\n" + driver_source(request.entry, request.params,
                                                               race=request.race_check)
        defines = {"main": "vf_candidate_main_unused_"}
        try:
            cpu.build_program(source, defines=defines, sanitize=request.memcheck, filename=request.filename)
        except UnsupportedFeatureError as exc:
            return BackendRun(status="unsupported", message=str(exc))
        except CompileError as exc:
            return BackendRun(status="compile_error", message=_explain_compile_error(str(exc), request),
                              log=getattr(exc, "log", "") or "")
        with tempfile.TemporaryDirectory(prefix="vf-eval-") as tmp:
            argv: list[str] = []
            for k, case in enumerate(request.cases):
                inp, out = Path(tmp) / f"case{k}.in", Path(tmp) / f"case{k}.out"
                write_case_input(inp, request.params, case.args)
                argv += [str(inp), str(out)]
            token = secrets.randbits(63) | 1
            result = cpu.run_program(source, argv=argv, stdin=token.to_bytes(8, "little"), timeout=request.timeout_s,
                                     defines=defines, sanitize=request.memcheck, filename=request.filename, cwd=tmp)
            outputs: list[CaseOutput] = []
            checks: list[CaseChecks] = []
            bad_file = ""
            for k, case in enumerate(request.cases):
                out = Path(tmp) / f"case{k}.out"
                if not out.exists() and not out.is_symlink():
                    break
                try:
                    seconds, values = read_case_output(out, request.params, case.args)
                    checks.append(read_case_checks(Path(f"{out}.chk"), request.params, case.args))
                    if checks[-1].token != token:
                        raise ValueError("it does not carry this run's token: written by the candidate, not the "
                                         "driver")
                except (OSError, ValueError) as exc:
                    bad_file = f"the result file of case {k} was not the driver's ({exc})"
                    break
                outputs.append(CaseOutput(config=case.config, trial=case.trial, outputs=values, seconds=seconds))
        run = BackendRun(status="ok", cases=outputs, log=_tail(result.stdout + result.stderr, 8000))
        run.features["isolation"] = result.isolation
        implausible = _implausible_times(outputs, result.seconds)
        if bad_file or implausible:
            run.status = "error"
            run.message = bad_file or implausible
            run.cases = [replace(c, problems=[*c.problems, run.message]) for c in outputs] or [
                CaseOutput(config=request.cases[0].config, trial=request.cases[0].trial, problems=[run.message])]
            return run
        _add_check_problems(request, outputs, checks)
        _locate_order_problem(request, outputs)
        if len(outputs) == len(request.cases) and (result.returncode != 0 or result.timed_out):
            # Every result was written, but the process then crashed or hung: on a GPU that is a
            # failed program (e.g. a host-side write through a bad pointer after the last case).
            outputs.pop()
        deref = _host_deref_problem(result.stderr) if not result.timed_out else ""
        if deref and len(outputs) < len(request.cases):
            bad = request.cases[len(outputs)]
            problem = f"{deref} (config {bad.config!r}, trial {bad.trial})"
            run.status = "error"
            run.message = problem
            run.failed_case = f"{bad.config}/{bad.trial}"
            run.cases = [*outputs, CaseOutput(config=bad.config, trial=bad.trial, problems=[problem])]
            run.measurements = _emulated_times(outputs)
            return run
        if len(outputs) < len(request.cases):
            bad = request.cases[len(outputs)]
            run.failed_case = f"{bad.config}/{bad.trial}"
            where = f"config {bad.config!r} (trial {bad.trial})"
            if result.timed_out:
                run.status = "timeout"
                run.message = (f"{where}: the candidate did not finish within {request.timeout_s:g} s on the CPU "
                               f"runtime (endless loop, deadlock, or too much work) and was killed")
            else:
                run.status = "crash"
                detail = "\n".join(line.replace(MARK_ERROR, "CUDA error in case").strip()
                                   for line in result.stderr.splitlines() if line.strip())
                if MARK_ERROR in result.stderr:  # the driver's own exit: a CUDA call failed
                    label, how = "CUDA error", f"stopped on a CUDA error (exit status {result.returncode})"
                else:
                    label, how = describe_exit(result.returncode, result.stderr)
                run.features["crash"] = label
                run.message = f"{where}: the candidate crashed: its program {how}"
                if detail:
                    run.message += f":\n{_tail(detail)}"
        run.measurements = _emulated_times(outputs)
        return run

    def run_torch(self, request: TorchRequest) -> BackendRun:
        from .torchrun import run_torch_request

        return run_torch_request(request, device="cpu", label=LABEL)


def _host_deref_problem(stderr: str) -> str:
    """The problem sentence for the runtime's device-memory guard report, or ""."""
    m = _HOST_DEREF.search(stderr)
    if not m:
        return ""
    where = m.group(2).strip()
    if where.count("(") > where.count(")"):
        where += ")"
    return (f"host code dereferenced a device pointer (this crashes on a GPU): it {m.group(1)} device memory at "
            f"{where}; device memory may only be read and written by kernels and cudaMemcpy/cudaMemset")


def _add_check_problems(request: CRequest, outputs: list[CaseOutput], checks: list[CaseChecks]) -> None:
    """Turn the driver's copy counters and reverse-order run into problems: the first case that shows
    each kind of finding (per output, for the order) gets one sentence (the harness rejects on any)."""
    found: set[str] = set()
    for out, chk, case in zip(outputs, checks, request.cases, strict=False):
        where = f"config {case.config!r}, trial {case.trial}"
        if "copies" not in found:
            problem = _copy_problem(request, case.args, chk, where)
            if problem:
                out.problems.append(problem)
                found.add("copies")
        if chk.reverse_run is None:
            continue
        for p in request.params:
            if p.name not in out.outputs or f"order:{p.name}" in found:
                continue
            problem = _order_problem(p.name, out.outputs[p.name], chk.reverse_run[p.name],
                                     _race_tolerance(request, p.name, out.outputs[p.name].dtype), where)
            if problem:
                out.problems.append(problem)
                found.add(f"order:{p.name}")


ORDER_PROBLEM = "differs when threads run in another order"


def _locate_order_problem(request: CRequest, outputs: list[CaseOutput]) -> None:
    """Name the kernel and launch behind the first "differs when threads run in another order"
    problem: only then (no cost without a race) that case runs again as its own program, traced,
    in index and in reverse order (:mod:`veriforge.cuda.cpu.race`); the sentence gets the first
    launch whose memory differs."""
    for k, out in enumerate(outputs):
        for j, problem in enumerate(out.problems):
            if ORDER_PROBLEM in problem:
                try:
                    where = _locate_race(request, k)
                except Exception as exc:  # locating is a courtesy: never lose the verdict over it
                    where = f" (the racy launch could not be located: {type(exc).__name__})"
                out.problems[j] = problem + where
                return


def _locate_race(request: CRequest, k: int) -> str:
    """" - first differing launch: kernel 'k' launched at file:line, ..." for case ``k``, or ""."""
    import shutil

    from veriforge.cuda import cpu
    from veriforge.cuda.cpu import race as race_mod
    from veriforge.cuda.cpu.program import _run_exe

    source = request.source.rstrip() + "\n" + driver_source(request.entry, request.params, race=False)
    defines = {"main": "vf_candidate_main_unused_"}
    exe = cpu.build_program(source, defines=defines, sanitize=request.memcheck, filename=request.filename)
    tmp = Path(tempfile.mkdtemp(prefix="vf-race-"))
    try:
        tmp.chmod(0o755)
        inp, out = tmp / "case.in", tmp / "case.out"
        write_case_input(inp, request.params, request.cases[k].args)
        argv = [str(inp), str(out)]
        verdict, _ = race_mod.check(
            lambda program, env, cwd: _run_exe(program, argv, b"", request.timeout_s, request.memcheck, cwd, env),
            exe, None, cwd=tmp, sources=[request.source])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not verdict.found or verdict.kernel is None:
        return ""
    text = f" - the first launch whose memory differs: kernel '{verdict.kernel}'"
    if verdict.location:
        text += f" launched at {verdict.location}"
    if verdict.allocation:
        text += f", {verdict.allocation}: {verdict.differences} of {verdict.elements} elements differ"
    elif verdict.notes:
        text += f" ({verdict.notes[0]})"
    return text


def _copy_problem(request: CRequest, args: list[Any], chk: CaseChecks, where: str) -> str:
    inputs = sum(int(np.asarray(a).nbytes) for p, a in zip(request.params, args, strict=True)
                 if p.is_pointer and p.role in ("in", "inout"))
    d2h = chk.device_to_host
    if inputs == 0 or d2h < COPY_MIN_BYTES or d2h < COPY_SHARE * inputs:
        return ""
    back = " and back" if chk.host_to_device else ""
    what = f"{d2h} of {inputs} input bytes" if d2h <= inputs else f"{d2h} bytes (its inputs are {inputs} bytes)"
    return (f"solve() copied {what} to the host{back}: the work must be done by kernels ({where}: "
            f"{d2h} bytes device-to-host and {chk.host_to_device} host-to-device in one call; only small "
            f"results such as a flag or a few partial sums may be copied to the host)")


def _race_tolerance(request: CRequest, name: str, dtype: np.dtype) -> tuple[float, float] | None:
    if request.tolerances is not None and name in request.tolerances:
        return request.tolerances[name]
    from veriforge.cuda.tasks.schema import Tolerance

    return Tolerance().for_output(name, dtype.name)


def _order_problem(name: str, first: np.ndarray, second: np.ndarray, tol: tuple[float, float] | None,
                   where: str) -> str:
    """A sentence if output ``name`` of the reverse-order run differs from the normal run's.

    Exact outputs (integers, bools; ``tol is None``) must be bitwise identical. Floating-point ones
    may differ by rounding when atomics or a reduction's order changes: each element may differ by
    twice the task's tolerance (both runs within tolerance of the true value), so only what could
    fail the comparison with the reference in some order counts."""
    a = np.asarray(first).reshape(-1)
    b = np.asarray(second).reshape(-1)
    if a.shape != b.shape:
        return ""
    if tol is None:
        bad = a != b
    else:
        rtol, atol = tol
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        finite = a64[np.isfinite(a64)]
        scale = float(np.max(np.abs(finite))) if finite.size else 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(a64 - b64) <= 2 * (atol * scale + rtol * np.maximum(np.abs(a64), np.abs(b64)))
        bad = ~(close | (a64 == b64) | (np.isnan(a64) & np.isnan(b64)))
    nbad = int(np.count_nonzero(bad))
    if not nbad:
        return ""
    i = int(np.flatnonzero(bad)[0])
    return (f"output {name!r} differs when threads run in another order (data race or order-dependent "
            f"reduction): {nbad} of {a.size} elements differ between a call with blocks and threads in index "
            f"order and one in reverse order ({where}; first at index {i}: {_num(a[i])} in index order, "
            f"{_num(b[i])} in reverse)")


def _num(x: Any) -> str:
    return f"{float(x):.7g}" if isinstance(x, np.floating) else str(x.item() if hasattr(x, "item") else x)


def _explain_compile_error(message: str, request: CRequest) -> str:
    lowered = message.lower()
    if request.entry in message and ("conflicting declaration" in lowered or "previous declaration" in lowered
                                     or "ambiguating" in lowered):
        proto = ", ".join(f"{p.ctype} {p.name}" for p in request.params)
        return (f"{message}\n\nveriforge: the candidate's {request.entry}() does not match the task's signature; "
                f'it must be exactly: extern "C" void {request.entry}({proto})')
    return message


def _implausible_times(outputs: list[CaseOutput], wall_s: float) -> str:
    """A reason if the per-case times the driver reported (from inside the candidate's process)
    cannot be true: negative, not finite, or more in total than the sandbox's wall clock."""
    import math

    secs = [c.seconds for c in outputs if c.seconds is not None]
    if any(not math.isfinite(t) or t < 0 for t in secs):
        return "the candidate's process reported an impossible time for a case (negative or not finite)"
    if wall_s and sum(secs) > wall_s * 1.05 + 0.01:
        return (f"the candidate's process reported {sum(secs):.3f} s of case time in a {wall_s:.3f} s run: "
                f"its timing was tampered with")
    return ""


def _emulated_times(outputs: list[CaseOutput]) -> list[Measurement]:
    by_config: dict[str, list[float]] = {}
    for c in outputs:
        if c.seconds is not None:
            by_config.setdefault(c.config, []).append(c.seconds)
    out = []
    for config, secs in by_config.items():
        out.append(Measurement(name="time_s", value=statistics.median(secs), unit="s", provenance="emulated",
                               backend=LABEL, samples=len(secs),
                               spread=(max(secs) - min(secs)) if len(secs) > 1 else None,
                               details={"config": config,
                                        "note": "wall time of the call on the CPU runtime; not a GPU time"}))
    return out
