"""Stage 4 -- run the standalone program in the sandbox to produce the gold outputs.

The program runs exactly as an agent's program will later: cwd is a fresh copy of the task's runtime
layout (``datasets/`` and the program, an empty ``pred_results/``), no network, a timeout, the task's
own interpreter. A failure is classified so a build report can say whether the *infrastructure*
failed (a dependency missing or broken, data missing, memory limit) or the *program* did (an
exception in its own logic, a timeout, no outputs written).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from veriforge.discovery.standalone import DATASETS, PRED

__all__ = ["RUN_ENV", "GoldRun", "classify_failure", "prepare_runtime", "run_gold"]

FailureKind = Literal["infrastructure", "program"]

RUN_ENV = {
    "MPLBACKEND": "Agg",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONHASHSEED": "0",
}
"""Environment of every task run: headless plots, one BLAS thread (repeatable sums), fixed hashing."""

_EXC_LINE = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)?)(?::\s*(?P<msg>.*))?$"
)
_INFRA_ERRORS = ("ModuleNotFoundError", "ImportError")


@dataclass
class GoldRun:
    ok: bool
    outputs: list[str]  # relative to the task folder: "pred_results/x.csv"
    failure: FailureKind | None = None
    reason: str = ""
    status: str = ""
    exit_code: int | None = None
    wall_s: float = 0.0
    stdout_tail: str = ""
    stderr_tail: str = ""
    missing_outputs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            k: getattr(self, k)
            for k in (
                "ok",
                "outputs",
                "failure",
                "reason",
                "status",
                "exit_code",
                "wall_s",
                "stdout_tail",
                "stderr_tail",
                "missing_outputs",
            )
        }


def _last_exception(stderr: str) -> tuple[str, str] | None:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    if not any(ln.startswith("Traceback") for ln in lines):
        return None
    for line in reversed(lines):
        if line.startswith((" ", "\t")):
            continue
        m = _EXC_LINE.match(line.strip())
        if m:
            return m.group("type").split(".")[-1], (m.group("msg") or "").strip()
    return None


def classify_failure(
    status: str, exit_code: int | None, stderr: str, produced: list[str], local_names: set[str] | None = None
) -> tuple[FailureKind, str]:
    """Why a gold run failed: ``("infrastructure" | "program", reason)``.

    Infrastructure: a dependency does not import, an input file is missing, the memory limit or a
    shared library failed, an installed package's API differs from the one the code was written for.
    Program: any other exception, a timeout, a clean exit without outputs.
    """
    if status == "timeout":
        return "program", "timed out"
    if status == "memory":
        return "infrastructure", "ran out of memory (sandbox memory limit)"
    exc = _last_exception(stderr)
    if status == "ok" and exit_code == 0:
        return (
            "program",
            "exited 0 but wrote no outputs" if not produced else "some expected outputs are missing",
        )
    if exc is None:
        return "program", f"exit code {exit_code} ({status})"
    kind, msg = exc
    if kind in _INFRA_ERRORS:
        name = re.search(r"No module named '([^']+)'", msg)
        if name and name.group(1).split(".")[0] in (local_names or set()):
            return "program", f"{kind}: {msg}"
        return "infrastructure", f"dependency problem: {kind}: {msg}"
    if kind in ("FileNotFoundError", "OSError", "IOError") and ("No such file" in msg or "not found" in msg):
        if f"{PRED}/" in msg:
            return "program", f"{kind}: {msg}"
        return "infrastructure", f"missing data: {kind}: {msg}"
    if kind == "AttributeError" and msg.startswith("module '") and "has no attribute" in msg:
        return "infrastructure", f"installed package API differs from the one the code expects: {kind}: {msg}"
    if "cannot open shared object file" in msg:
        return "infrastructure", f"missing system library: {msg}"
    return "program", f"{kind}: {msg}" if msg else kind


def prepare_runtime(task_dir: Path, program_name: str, dest: Path) -> None:
    """Copy the runtime layout (datasets/, the program, empty pred_results/) of ``task_dir`` to ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    if (task_dir / DATASETS).is_dir():
        shutil.copytree(task_dir / DATASETS, dest / DATASETS, dirs_exist_ok=True)
    shutil.copy2(task_dir / "gold_program" / program_name, dest / program_name)
    (dest / PRED).mkdir(exist_ok=True)


def run_gold(
    task_dir: Path,
    program_name: str,
    python: str,
    expected: list[str],
    *,
    timeout_s: float = 600,
    memory_mb: int | None = None,
    local_names: set[str] | None = None,
) -> GoldRun:
    """Run the task's gold program; on success copy ``pred_results/`` to ``task_dir/gold_results``."""
    from veriforge.discovery.plotrec import is_plotdata, recorder_env
    from veriforge.sandbox import Limits, run

    with tempfile.TemporaryDirectory(prefix="veriforge-gold-") as tmp:
        work = Path(tmp) / "run"
        prepare_runtime(task_dir, program_name, work)
        Path(tmp).chmod(0o755)
        limits = Limits(
            timeout_s=timeout_s, cpu_s=timeout_s * 2, memory_mb=memory_mb, max_procs=256, file_size_mb=1024
        )
        res = run(
            ["python", program_name],
            cwd=work,
            env={**RUN_ENV, "PATH": f"{Path(python).parent}:/usr/bin:/bin", **recorder_env(work)},
            limits=limits,
            network=False,
        )
        pred = work / PRED
        found = sorted(
            p.relative_to(work).as_posix() for p in pred.rglob("*") if p.is_file() and p.stat().st_size
        )
        # plot recorder (issue 18 part 3): its .plotdata/ sidecars are copied with the gold, not outputs
        found = [f for f in found if not is_plotdata(f.removeprefix(f"{PRED}/"))]
        produced = [e for e in expected if e in found] + [
            f for f in found if f not in expected
        ]  # main output first
        missing = [e for e in expected if e not in produced]
        common = {
            "status": res.status,
            "exit_code": res.exit_code,
            "wall_s": round(res.wall_s, 3),
            "stdout_tail": res.stdout_text[-2000:],
            "stderr_tail": res.stderr_text[-4000:],
        }
        if res.ok and produced and not missing:
            gold = task_dir / "gold_results"
            shutil.rmtree(gold, ignore_errors=True)
            shutil.copytree(pred, gold)
            return GoldRun(ok=True, outputs=produced, **common)
        failure, reason = classify_failure(res.status, res.exit_code, res.stderr_text, produced, local_names)
        if res.ok and missing:
            reason = f"{reason}: {', '.join(missing)}"
        return GoldRun(
            ok=False, outputs=produced, failure=failure, reason=reason, missing_outputs=missing, **common
        )
