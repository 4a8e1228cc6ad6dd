"""``validate_task(path)``: is this task folder usable as a benchmark?

Checks, in order (each problem is one sentence in the report): the schema; at least two
configurations and three implementations with distinct strategies; for C→CUDA tasks, that
reference.c and every implementation declare exactly the task's parameter list; that inputs
generate and the metrics evaluate for every configuration; that the reference runs; and that
every implementation is judged correct by the CPU back-end on every configuration. The last
step dominates the cost, so :func:`validate_many` runs it for all tasks at once on a thread pool
(each evaluation isolates its candidate in a subprocess, so threads only wait);
:func:`submit_validation` does the same but hands back one future per task, so a caller (the
test suite) can report each task as soon as it is done.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veriforge.errors import VeriforgeError

from .ctypes_map import CSignatureError, find_signature, same_type
from .expr import ExpressionError, evaluate
from .schema import TaskSpec

__all__ = ["ImplCheck", "ValidationReport", "submit_validation", "validate_many", "validate_task", "warm_up"]


@dataclass
class ImplCheck:
    name: str
    strategy: str
    correct: bool
    reason: str = ""
    seconds: float = 0.0
    configs: list[str] = field(default_factory=list)
    """The configurations the verdict covers (each run with the harness's default number of trials)."""


@dataclass
class ValidationReport:
    path: Path
    task_id: str = ""
    family: str = ""
    problems: list[str] = field(default_factory=list)
    impls: list[ImplCheck] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems and all(i.correct for i in self.impls)

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "task_id": self.task_id, "family": self.family, "ok": self.ok,
                "problems": self.problems, "seconds": self.seconds,
                "impls": [i.__dict__ for i in self.impls]}


def _static_checks(spec: TaskSpec, report: ValidationReport) -> None:
    if len(spec.configs) < 2:
        report.problems.append(f"needs at least 2 configurations, has {len(spec.configs)}")
    if len(spec.implementations) < 3:
        report.problems.append(f"needs at least 3 implementations, has {len(spec.implementations)}")
    strategies = {i.strategy for i in spec.implementations}
    if len(strategies) < min(3, len(spec.implementations)):
        report.problems.append(f"implementations need distinct strategies (at least 3), have: "
                               f"{', '.join(sorted(strategies))}")
    assert spec.folder is not None
    if spec.family == "c2cuda":
        _check_signature(spec, (spec.folder / "reference.c").read_text(), "reference", "reference.c", report)
        for impl in spec.implementations:
            _check_signature(spec, (spec.folder / impl.file).read_text(), spec.entry, impl.file, report)
    for cfg in (*spec.configs, *spec.timing):
        env = dict(cfg.variables)
        for key, expr in spec.metrics.items():
            try:
                evaluate(expr, env)
            except ExpressionError as exc:
                report.problems.append(f"config {cfg.name!r}: metrics.{key}: {exc}")
    for key in ("flops", "bytes"):
        if key not in spec.metrics:
            report.problems.append(f"[metrics] has no {key!r}")


def _check_signature(spec: TaskSpec, source: str, function: str, where: str, report: ValidationReport) -> None:
    try:
        sig = find_signature(source, function)
    except CSignatureError as exc:
        report.problems.append(f"{where}: {exc}")
        return
    want = [(p.name, p.type) for p in spec.params]
    if len(sig) != len(want):
        report.problems.append(f"{where}: {function}() has {len(sig)} parameters, task.toml declares {len(want)}")
        return
    for k, (got, (name, ctype)) in enumerate(zip(sig, want, strict=True)):
        if not same_type(got.ctype, ctype):
            report.problems.append(f"{where}: parameter {k + 1} of {function}() is `{got.ctype} {got.name}`, "
                                   f"task.toml says `{ctype} {name}`")


def _runtime_checks(spec: TaskSpec, report: ValidationReport) -> None:
    if spec.family == "c2cuda":
        from .generate import make_case
        from .reference import reference_outputs

        for cfg in spec.configs:
            try:
                for trial in (0, 1):
                    case = make_case(spec, cfg.name, trial)
                    reference_outputs(spec, case)
            except VeriforgeError as exc:
                report.problems.append(f"config {cfg.name!r}: {exc}")
            except Exception as exc:
                report.problems.append(f"config {cfg.name!r}: {type(exc).__name__}: {exc}")
    else:
        from .reference import load_torch_reference

        assert spec.folder is not None
        source = (spec.folder / "reference.py").read_text()
        for cfg in (*spec.configs, *spec.timing):
            try:
                load_torch_reference(source, cfg.variables)
            except Exception as exc:
                report.problems.append(f"config {cfg.name!r}: reference.py: {type(exc).__name__}: {exc}")


def _eval_impl(path: str, impl: str) -> ImplCheck:
    from veriforge.cuda.evaluate.harness import evaluate as run_eval

    from .load import load_task

    spec = load_task(path)
    info = spec.implementation(impl)
    assert spec.folder is not None
    started = time.perf_counter()
    try:
        res = run_eval(spec, spec.folder / info.file, "cpu", estimate=False)
        return ImplCheck(impl, info.strategy, res.verdict.correct, res.verdict.reason,
                         time.perf_counter() - started, [r.config for r in res.verdict.results])
    except Exception as exc:
        return ImplCheck(impl, info.strategy, False, f"{type(exc).__name__}: {exc}", time.perf_counter() - started)


def _checked(path: str | Path) -> tuple[ValidationReport, TaskSpec | None]:
    """Load a task and run the cheap checks (schema, signatures, metrics, references)."""
    from .load import load_task

    report = ValidationReport(path=Path(path))
    started = time.perf_counter()
    try:
        spec = load_task(path)
    except VeriforgeError as exc:
        report.problems.append(str(exc))
        return report, None
    report.task_id, report.family = spec.id, spec.family
    _static_checks(spec, report)
    _runtime_checks(spec, report)
    report.seconds = time.perf_counter() - started
    return report, spec


def _check_then_run(path: str | Path, pool: Any, future: cf.Future, run_impls: bool) -> None:
    """One task: the cheap checks here, then one job per implementation on ``pool``; ``future`` gets the
    report when the last implementation has been judged."""
    try:
        report, spec = _checked(path)
        impls = [] if spec is None or report.problems or not run_impls else list(spec.implementations)
        if not impls:
            future.set_result(report)
            return
        checks: list[ImplCheck | None] = [None] * len(impls)
        remaining = [len(impls)]
        lock = threading.Lock()

        def one(k: int, name: str) -> None:
            assert spec is not None and spec.folder is not None
            try:
                checks[k] = _eval_impl(str(spec.folder), name)
            except BaseException as exc:  # _eval_impl reports errors itself; this is a last resort
                checks[k] = ImplCheck(name, impls[k].strategy, False, f"{type(exc).__name__}: {exc}")
            finally:
                with lock:
                    remaining[0] -= 1
                    last = remaining[0] == 0
                if last:
                    report.impls = [c for c in checks if c is not None]
                    report.seconds += sum(c.seconds for c in report.impls)
                    future.set_result(report)

        for k, impl in enumerate(impls):
            pool.submit(one, k, impl.name)
    except BaseException as exc:
        if not future.done():
            future.set_exception(exc)


def warm_up(paths: list[str | Path]) -> None:
    """Build what every evaluation of these tasks shares, once, before evaluations fan out.

    Without this, the first N parallel evaluations would each build the CPU runtime (the build is
    atomic, so the duplicates are only wasted CPU) and the first PyTorch→CUDA evaluation would
    wait for the fork server to import torch; starting that server now overlaps its start with
    the runtime build.
    """
    from .load import load_task

    families = set()
    for path in paths:
        try:
            families.add(load_task(path).family)
        except VeriforgeError:
            continue
    if "torch2cuda" in families:
        from veriforge.cuda.evaluate.isolation import uses_zygote

        if uses_zygote("cpu"):
            from veriforge.cuda.evaluate.zygote import get_zygote

            get_zygote().prestart()
    if families:
        try:
            from veriforge.cuda.cpu.build import runtime

            runtime(False)
        except VeriforgeError:
            pass  # every evaluation will report the reason itself


def submit_validation(paths: list[str | Path], pool: Any, *, run_impls: bool = True,
                      warm: bool = True) -> list[cf.Future]:
    """Start validating ``paths`` on ``pool`` (a thread pool: :class:`~veriforge.cuda.evaluate.executor.
    ThreadExecutor` or :class:`concurrent.futures.ThreadPoolExecutor`; jobs submit further jobs to it);
    one future per path, in order, each resolving to that task's :class:`ValidationReport` as soon as
    its own implementations are judged.

    Every implementation of every task is its own job, so ``pool``'s workers stay busy until the
    last evaluation, whatever the mix of task sizes.
    """
    if warm and run_impls:
        warm_up(paths)
    futures = []
    for path in paths:
        future: cf.Future = cf.Future()
        future.set_running_or_notify_cancel()
        pool.submit(_check_then_run, path, pool, future, run_impls)
        futures.append(future)
    return futures


def validate_many(paths: list[str | Path], jobs: int | None = None, *,
                  run_impls: bool = True) -> list[ValidationReport]:
    """Validate several task folders; implementations are evaluated in parallel on ``jobs`` workers."""
    from veriforge.cuda.evaluate.executor import ThreadExecutor

    with ThreadExecutor(jobs) as pool:
        futures = submit_validation(paths, pool, run_impls=run_impls)
        return [f.result() for f in futures]


def validate_task(path: str | Path, jobs: int | None = None) -> ValidationReport:
    """Validate one task folder (see the module docstring)."""
    return validate_many([path], jobs)[0]
