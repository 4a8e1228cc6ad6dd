"""The CPU back-end: C→CUDA candidates run as whole programs on veriforge's CPU runtime;
PyTorch→CUDA candidates run on CPU tensors through the veriforge binding.

Numbers it produces are honest about where they came from: the wall time of each call on the
CPU runtime is ``emulated`` (useful only to compare candidates on this machine), and the
cost-model time (added by the harness) is ``estimated``. Streams on the CPU runtime execute
synchronously, so work hidden on a side stream is always finished when ``solve`` returns here;
the GPU back-end is where the timer must wait on every stream.
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

from veriforge.core.types import Measurement
from veriforge.errors import CompileError, UnsupportedFeatureError

from .backend import Backend, BackendRun, CaseOutput, CRequest, TorchRequest
from .driver import MARK_ERROR, driver_source, read_case_output, write_case_input

__all__ = ["CpuBackend"]

LABEL = "cpu-runtime"


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

        source = request.source.rstrip() + "\n" + driver_source(request.entry, request.params)
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
            result = cpu.run_program(source, argv=argv, timeout=request.timeout_s, defines=defines,
                                     sanitize=request.memcheck, filename=request.filename, cwd=tmp)
            outputs: list[CaseOutput] = []
            bad_file = ""
            for k, case in enumerate(request.cases):
                out = Path(tmp) / f"case{k}.out"
                if not out.exists() and not out.is_symlink():
                    break
                try:
                    seconds, values = read_case_output(out, request.params, case.args)
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
        if len(outputs) == len(request.cases) and (result.returncode != 0 or result.timed_out):
            # Every result was written, but the process then crashed or hung: on a GPU that is a
            # failed program (e.g. a host-side write through a bad pointer after the last case).
            outputs.pop()
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
                run.message = f"{where}: the candidate crashed (exit status {result.returncode})"
                if detail:
                    run.message += f":\n{_tail(detail)}"
        run.measurements = _emulated_times(outputs)
        return run

    def run_torch(self, request: TorchRequest) -> BackendRun:
        from .torchrun import run_torch_request

        return run_torch_request(request, device="cpu", label=LABEL)


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
