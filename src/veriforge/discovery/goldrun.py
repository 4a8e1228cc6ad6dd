"""Stage 4 -- run the standalone program in the sandbox to produce the gold outputs.

The program runs exactly as an agent's program will later: cwd is a fresh copy of the task's runtime
layout (``datasets/`` and the program, an empty ``pred_results/``), no network, a timeout, the task's
own interpreter. A failure is classified (:func:`failure_class`, the one place that decides) so a
build report can say whether the *infrastructure* failed (a dependency missing or broken, library
drift, data missing, memory limit), the *machine* lacks something the program assumes (a system tool
such as ffmpeg, more CPUs than ``cpu_count() - k`` allows), or the *program* did (an exception in its
own logic, a timeout, no outputs written). Each class has a stable ``code`` the build summary counts.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from veriforge.discovery.localmods import LIB_DIR
from veriforge.discovery.standalone import DATASETS, PRED

__all__ = [
    "RUN_ENV",
    "FailureClass",
    "GoldRun",
    "classify_failure",
    "copy_lib",
    "failure_class",
    "prepare_runtime",
    "program_env",
    "run_gold",
]

FailureKind = Literal["infrastructure", "program", "machine"]

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
    code: str = ""  # FailureClass.code of a failed run

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
                "code",
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


@dataclass(frozen=True)
class FailureClass:
    """Why a run failed: whose fault (``kind``), a stable category (``code``) and the specific reason."""

    kind: FailureKind
    code: str
    reason: str


_TOOL = re.compile(
    r"No such file or directory: '(?P<a>[\w.+-]+)'"
    r"|MovieWriter \(?(?P<b>\w+)\)? (?:not available|unavailable)"
    r"|(?P<c>latex|dvipng|ghostscript|gs) (?:could not be found|was not found)"
    r"|failed to execute (?:PosixPath\()?'(?P<d>[\w.+-]+)'"
)
_DATA_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_CPU_K = re.compile(r"cpu_count\(\)\s*-\s*(\d+)")
_CPU_ERRORS = (
    "Number of processes must be at least 1",
    "n_jobs == 0 in Parallel has no meaning",
    "max_workers must be greater than 0",
)


def _missing_tool(kind: str, msg: str, stderr: str) -> str | None:
    """The system executable a failure names (``'ffmpeg'``: a bare name without a file suffix)."""
    for text in (f"{kind}: {msg}", stderr[-3000:]):
        m = _TOOL.search(text)
        if not m:
            continue
        name = next(g for g in m.groups() if g)
        if m.group("a") and (_DATA_SUFFIX.search(name) or "/" in name):
            continue  # 'data.csv': a data file, not a tool
        return name
    return None


def failure_class(
    status: str,
    exit_code: int | None,
    stderr: str,
    produced: list[str],
    local_names: set[str] | None = None,
    source: str | None = None,
) -> FailureClass:
    """The single classification of a failed run (gold runs, repairs and the build summary use it).

    infrastructure: ``dependency`` (does not import), ``library-drift`` (an installed package's API
    differs from the code's: a repair rule knows the change, or a module lacks an attribute),
    ``missing-data``, ``memory``, ``system-library``; machine: ``system-tool`` (ffmpeg, latex ...),
    ``cpu-count`` (``cpu_count() - k`` < 1 here); program: ``timeout``, ``no-outputs``,
    ``missing-outputs``, ``local-import``, ``exception``, ``exit-code``.
    """
    from veriforge.discovery.repair import matching_rule

    if status == "timeout":
        return FailureClass("program", "timeout", "timed out")
    if status == "memory":
        return FailureClass("infrastructure", "memory", "ran out of memory (sandbox memory limit)")
    exc = _last_exception(stderr)
    if status == "ok" and exit_code == 0:
        if not produced:
            return FailureClass("program", "no-outputs", "exited 0 but wrote no outputs")
        return FailureClass("program", "missing-outputs", "some expected outputs are missing")
    if exc is None:
        return FailureClass("program", "exit-code", f"exit code {exit_code} ({status})")
    kind, msg = exc
    text = f"{kind}: {msg}" if msg else kind
    if any(e in stderr for e in _CPU_ERRORS) and (source is None or _CPU_K.search(source)):
        k = _CPU_K.search(source or "")
        detail = f"cpu_count() - {k.group(1)}" if k else "a worker count from cpu_count()"
        return FailureClass("machine", "cpu-count", f"assumes more CPUs than this machine has ({detail}): {text}")
    tool = _missing_tool(kind, msg, stderr)
    if tool:
        return FailureClass("machine", "system-tool", f"needs system tool {tool}: {text}")
    hit = matching_rule(stderr)
    if hit is not None and hit[0].kind == "drift":
        why = f"library drift, installed package API differs ({hit[0].name}): {text}"
        return FailureClass("infrastructure", "library-drift", why)
    if kind in _INFRA_ERRORS:
        name = re.search(r"No module named '([^']+)'", msg)
        if name and name.group(1).split(".")[0] in (local_names or set()):
            return FailureClass("program", "local-import", text)
        if kind == "ImportError" and msg.startswith("cannot import name"):
            why = f"library drift, installed package API differs: {text}"
            return FailureClass("infrastructure", "library-drift", why)
        return FailureClass("infrastructure", "dependency", f"dependency problem: {text}")
    if kind in ("FileNotFoundError", "OSError", "IOError") and ("No such file" in msg or "not found" in msg):
        if f"{PRED}/" in msg:
            return FailureClass("program", "exception", text)
        return FailureClass("infrastructure", "missing-data", f"missing data: {text}")
    if kind == "AttributeError" and msg.startswith("module '") and "has no attribute" in msg:
        return FailureClass(
            "infrastructure",
            "library-drift",
            f"installed package API differs from the one the code expects: {text}",
        )
    if "cannot open shared object file" in msg:
        return FailureClass("infrastructure", "system-library", f"missing system library: {msg}")
    return FailureClass("program", "exception", text)


def classify_failure(
    status: str, exit_code: int | None, stderr: str, produced: list[str], local_names: set[str] | None = None
) -> tuple[FailureKind, str]:
    """``(kind, reason)`` of :func:`failure_class` (kept for callers that need no code)."""
    fc = failure_class(status, exit_code, stderr, produced, local_names)
    return fc.kind, fc.reason


def prepare_runtime(task_dir: Path, program_name: str, dest: Path) -> None:
    """Copy the runtime layout (datasets/, lib/, the program, empty pred_results/) of ``task_dir`` to ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    if (task_dir / DATASETS).is_dir():
        shutil.copytree(task_dir / DATASETS, dest / DATASETS, dirs_exist_ok=True)
    copy_lib(task_dir, dest)
    shutil.copy2(task_dir / "gold_program" / program_name, dest / program_name)
    (dest / PRED).mkdir(exist_ok=True)


def copy_lib(task_dir: Path, dest: Path) -> None:
    """Copy the task's vendored helper modules (``lib/``), if it has any, into a run folder."""
    if (task_dir / LIB_DIR).is_dir():
        shutil.copytree(task_dir / LIB_DIR, dest / LIB_DIR, dirs_exist_ok=True)


def program_env(python: str | Path, work: Path) -> dict[str, str]:
    """Environment of one program run in ``work``: :data:`RUN_ENV`, the task interpreter first on
    ``PATH``, the plot recorder, and ``lib/`` (the vendored helper modules) on ``PYTHONPATH``.

    Every runner (gold, figure rerun, agent) uses this, so a program sees the same imports whoever
    runs it.
    """
    from veriforge.discovery.plotrec import recorder_env

    env = {**RUN_ENV, "PATH": f"{Path(python).parent}:/usr/bin:/bin", **recorder_env(work)}
    if (work / LIB_DIR).is_dir():
        env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{work / LIB_DIR}"
    return env


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
    from veriforge.discovery.plotrec import is_plotdata
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
            env=program_env(python, work),
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
        source = (task_dir / "gold_program" / program_name).read_text(encoding="utf-8", errors="replace")
        fc = failure_class(res.status, res.exit_code, res.stderr_text, produced, local_names, source)
        reason = f"{fc.reason}: {', '.join(missing)}" if res.ok and missing else fc.reason
        return GoldRun(
            ok=False,
            outputs=produced,
            failure=fc.kind,
            reason=reason,
            missing_outputs=missing,
            code=fc.code,
            **common,
        )
