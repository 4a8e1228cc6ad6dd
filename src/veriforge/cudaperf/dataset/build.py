"""``veriforge cudaperf dataset build``: generate, dedup, verify, record, export.

Pipeline (docs/cudaperf-dataset.md):

1. enumerate the selected families in registry order; each yields :class:`GeneratedTask`\\ s for the
   build seed (``--limit`` keeps the first N of each family);
2. schema-check and **dedup before verifying** (:mod:`.dedup`: exact, structural, near within a
   family, and against the bundled curated tasks) — verification is the expensive step;
3. write the folder ``DIR/tasks/<kind>/<id>/`` and verify it as a job on the executor: the cheap
   checks of :mod:`veriforge.cuda.tasks.validate` (schema, ≥ 2 configs, ≥ 3 distinct strategies,
   signatures, metrics, the reference runs), then every implementation through the harness on the
   CPU runtime, which also returns the cost model's estimated time per configuration (unless
   ``estimate=False``);
4. keep the task only if every implementation is verified (a dropped task's folder is removed);
5. record the outcome in the run store ``DIR/build.sqlite`` (namespace ``cudaperf-dataset``) keyed
   by the task's content hash, in the main thread, as soon as the task is done. A re-run skips every
   recorded task (resume; ``fresh=True`` deletes the records first), so an interrupted build never
   verifies a finished task twice; only the tasks in flight at the interruption run again;
6. export (:mod:`.export`) the splits, the verl parquet and the datasheet.

Jobs are one task each (checks + its implementations in sequence): the job is the unit a Ray
worker can take, and every evaluation already isolates the candidate in a subprocess, so the local
executor is a thread pool whose threads only wait. At most ``2 × jobs`` tasks are in flight, so the
order of verification follows the enumeration and an interruption loses at most that many.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import platform
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.errors import VeriforgeError

from .dedup import NEAR_THRESHOLD, DedupIndex, bundled_index, reference_keys
from .family import Family, FamilyError, GeneratedTask, families, get_family

__all__ = ["NAMESPACE", "RUN_KIND", "BuildError", "BuildOptions", "BuildSummary", "FamilyCounts", "build",
           "select_families", "task_row", "verify_task"]

NAMESPACE = "cudaperf-dataset"
"""Run-store namespace of the per-task outcomes (key: the task's content hash)."""
META = "cudaperf-dataset-meta"
RUN_KIND = "cudaperf-dataset-build"


class BuildError(VeriforgeError, ValueError):
    """Bad build arguments (unknown family, kind mismatch, bad job count, unknown executor...)."""


@dataclass
class BuildOptions:
    """Everything ``build`` needs; the CLI maps its flags one to one."""

    out: Path
    families: list[str] | None = None
    kind: str | None = None
    limit: int | None = None  # tasks per family (before dedup)
    max_tasks: int | None = None  # unique tasks considered in total (recorded ones included)
    jobs: int = 2
    executor: str = "local"  # local | ray
    seed: int = 0
    estimate: bool = True
    resume: bool = True
    dedup: str = "near"  # near | structural | exact
    near_threshold: float = NEAR_THRESHOLD
    split_by: str = "group"  # group | family
    export: bool = True
    progress: bool = True
    ray_address: str | None = "local"
    warm: bool = True  # build the CPU runtime / start the torch fork server before fanning out

    def check(self) -> None:
        if self.kind not in (None, "c2cuda", "torch2cuda"):
            raise BuildError(f"--kind must be c2cuda or torch2cuda, not {self.kind!r}")
        if self.jobs < 1:
            raise BuildError(f"--jobs must be >= 1, got {self.jobs}")
        for name in ("limit", "max_tasks"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise BuildError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
        if self.executor not in ("local", "ray"):
            raise BuildError(f"--executor must be local or ray, not {self.executor!r}")
        if self.dedup not in ("near", "structural", "exact"):
            raise BuildError(f"--dedup must be near, structural or exact, not {self.dedup!r}")
        if not 0.0 < self.near_threshold <= 1.0:
            raise BuildError(f"the near-duplicate threshold must be in (0, 1], got {self.near_threshold}")
        if self.split_by not in ("group", "family"):
            raise BuildError(f"--split-by must be group or family, not {self.split_by!r}")


@dataclass
class FamilyCounts:
    generated: int = 0
    duplicates: int = 0
    bundled: int = 0  # dropped because they reproduce a bundled (curated) task
    malformed: int = 0
    dropped: int = 0  # failed verification
    kept: int = 0
    resumed: int = 0  # already recorded by an earlier run (not verified again)
    verified: int = 0  # verified in this run
    impls_verified: int = 0


@dataclass
class BuildSummary:
    out: Path
    families: dict[str, FamilyCounts] = field(default_factory=dict)
    wall_s: float = 0.0
    run_id: str = ""
    interrupted: bool = False

    def total(self) -> FamilyCounts:
        tot = FamilyCounts()
        for c in self.families.values():
            for k, v in asdict(c).items():
                setattr(tot, k, getattr(tot, k) + v)
        return tot

    @property
    def tasks_per_minute(self) -> float:
        return 60.0 * self.total().verified / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def impls_per_minute(self) -> float:
        return 60.0 * self.total().impls_verified / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"out": str(self.out), "run_id": self.run_id, "wall_s": round(self.wall_s, 3),
                "interrupted": self.interrupted, "tasks_per_minute": round(self.tasks_per_minute, 3),
                "impls_per_minute": round(self.impls_per_minute, 3),
                "families": {k: asdict(v) for k, v in self.families.items()}, "total": asdict(self.total())}


# ---------------------------------------------------------------------------------------------
# Family selection


def select_families(names: list[str] | None, kind: str | None) -> list[Family]:
    """The families to build, in registry order; unknown names list the known ones."""
    if names:
        chosen: list[Family] = []
        for name in names:
            try:
                fam = get_family(name)
            except FamilyError as exc:
                raise BuildError(str(exc)) from None
            if kind is not None and fam.kind != kind:
                raise BuildError(f"family {name!r} generates {fam.kind} tasks, but --kind is {kind}")
            if fam not in chosen:
                chosen.append(fam)
        return chosen
    chosen = families(kind)
    if not chosen:
        raise BuildError("no task families are registered" + (f" for kind {kind}" if kind else "")
                         + " (veriforge.cudaperf.dataset.family.FAMILY_MODULES)")
    return chosen


# ---------------------------------------------------------------------------------------------
# Verification job (top level: picklable for process and Ray executors)


def verify_task(folder: str, estimate: bool = True) -> dict[str, Any]:
    """Verify one task folder on the CPU runtime; returns plain JSON (for any executor).

    ``{"ok", "problems", "seconds", "impls": [{"name", "strategy", "verified", "reason", "seconds",
    "estimates": [{"config", "time_s", "provenance", "gpu", "cost_model", "status"}]}]}``. The cheap
    checks come from ``validate`` (without running implementations), then each implementation is
    evaluated once by the harness: the verdict and the estimate come from the same run.
    """
    from veriforge.cuda.evaluate.harness import evaluate
    from veriforge.cuda.tasks.load import load_task
    from veriforge.cuda.tasks.validate import validate_many

    started = time.perf_counter()
    report = validate_many([folder], jobs=1, run_impls=False)[0]
    out: dict[str, Any] = {"ok": False, "problems": list(report.problems), "impls": [], "seconds": 0.0}
    if report.problems:
        out["seconds"] = time.perf_counter() - started
        return out
    spec = load_task(folder)
    assert spec.folder is not None
    for impl in spec.implementations:
        t0 = time.perf_counter()
        entry: dict[str, Any] = {"name": impl.name, "strategy": impl.strategy, "verified": False, "reason": "",
                                 "estimates": []}
        for attempt in (1, 2):
            try:
                res = evaluate(spec, spec.folder / impl.file, "cpu", estimate=estimate)
                entry["verified"] = bool(res.verdict.correct)
                entry["reason"] = "" if res.verdict.correct else str(res.verdict.reason)[:500]
                if estimate and res.verdict.correct:
                    entry["estimates"] = _estimates(res, [c.name for c in (*spec.configs, *spec.timing)])
                break
            except Exception as exc:  # a harness error is this implementation's failure, not the build's
                # ... after one retry: an error of the machine (a full disk, a killed helper process)
                # must not drop a correct implementation, and a real one repeats
                entry["reason"] = f"{type(exc).__name__}: {exc}"[:500]
                entry["attempts"] = attempt
        entry["seconds"] = round(time.perf_counter() - t0, 4)
        out["impls"].append(entry)
    out["ok"] = bool(out["impls"]) and all(i["verified"] for i in out["impls"])
    out["seconds"] = round(time.perf_counter() - started, 4)
    return out


def _estimates(res: Any, configs: list[str]) -> list[dict[str, Any]]:
    """Per configuration: the cost model's time (None when it could not complete it) and provenance."""
    est = res.details.get("estimate") or {}
    gpu = est.get("gpu")
    model = est.get("model")
    version = est.get("version")
    per_config = est.get("configs") or {}
    times = {m.details.get("config"): m for m in res.measurements
             if m.name == "time_s" and m.provenance == "estimated"}
    rows = []
    for name in configs:
        m = times.get(name)
        info = per_config.get(name) or {}
        rows.append({"config": name, "time_s": None if m is None else float(m.value), "provenance": "estimated",
                     "gpu": (m.details.get("gpu") if m is not None else None) or gpu,
                     "cost_model": f"{model}/{version}" if model else (m.backend if m is not None else None),
                     "status": str(info.get("status", "unknown" if m is None else "exact"))})
    return rows


# ---------------------------------------------------------------------------------------------
# Rows


def _prompt_messages(folder: Path) -> list[dict[str, str]]:
    """What a model is told (system + user), shared with the trainers when available."""
    try:
        from veriforge.cudaperf.feedback import task_prompt
    except ImportError:
        task_prompt = None
    if task_prompt is not None:
        return task_prompt(str(folder))
    return [{"role": "user", "content": _fallback_prompt(folder)}]


def _fallback_prompt(folder: Path) -> str:
    from veriforge.cuda.tasks.load import load_task

    spec = load_task(folder)
    ref = (folder / ("reference.c" if spec.family == "c2cuda" else "reference.py")).read_text()
    lang, what = ("c", "serial C reference") if spec.family == "c2cuda" else ("python", "PyTorch reference")
    return (f"{spec.title}\n\n{spec.description.strip()}\n\nThe {what}:\n```{lang}\n{ref.rstrip()}\n```\n\n"
            "Write the CUDA implementation; answer with the whole source in one fenced block.")


def task_row(task: GeneratedTask, folder: Path, result: dict[str, Any]) -> dict[str, Any]:
    """One dataset row (the export's schema; free-form tables as JSON strings, see export.py)."""
    by_name = {i["name"]: i for i in result.get("impls", [])}
    messages = _prompt_messages(folder)
    impls = []
    for impl in task.impls:
        r = by_name.get(impl.name, {})
        impls.append({"name": impl.name, "strategy": impl.strategy, "quality": int(impl.quality),
                      "description": impl.description, "source": impl.source,
                      "verified": bool(r.get("verified", False)), "estimates": list(r.get("estimates", []))})
    return {
        "id": task.id, "kind": task.kind, "family": task.family, "category": task.category, "title": task.title,
        "description": task.description, "prompt": messages[-1]["content"], "messages": messages,
        "reference": task.reference, "configs": json.dumps(task.configs, sort_keys=True),
        "timing": json.dumps(task.timing, sort_keys=True),
        "params": json.dumps(task.params, sort_keys=True), "implementations": impls,
        "metrics": json.dumps(task.metrics, sort_keys=True), "tolerance": json.dumps(task.tolerance, sort_keys=True),
        "variant": json.dumps(task.variant, sort_keys=True, default=str), "tags": list(task.tags),
        "seed": int(task.seed), "content_hash": task.content_hash(), "task_dir": f"tasks/{task.kind}/{task.id}",
    }


# ---------------------------------------------------------------------------------------------
# The build


def _enumerate(fams: list[Family], opts: BuildOptions) -> Iterator[tuple[Family, GeneratedTask | None, str]]:
    """(family, task or None, error) for every generated task, ``limit`` per family."""
    for fam in fams:
        gen = fam.generate(opts.seed)
        k = 0
        while opts.limit is None or k < opts.limit:
            try:
                task = next(gen)
            except StopIteration:
                break
            except Exception as exc:  # a broken generator ends its family, not the build
                yield fam, None, f"{type(exc).__name__}: {exc}"[:500]
                break
            k += 1
            yield fam, task, ""


def _make_executor(opts: BuildOptions) -> Any:
    if opts.executor == "ray":
        from veriforge.cuda.evaluate.executor import RayExecutor

        return RayExecutor(opts.ray_address, num_cpus=opts.jobs)
    from veriforge.cuda.evaluate.executor import ThreadExecutor

    return ThreadExecutor(opts.jobs)


class _Progress:
    """The rich bar (tasks done / kept / dropped / duplicates, tasks per minute), or nothing."""

    def __init__(self, enabled: bool) -> None:
        self.bar: Any = None
        self.started = time.perf_counter()
        if enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("[bold]verify"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[info]}"), TimeElapsedColumn(), transient=False)

    def start(self, total: int) -> None:
        if self.bar is not None:
            self.bar.start()
            self.task = self.bar.add_task("verify", total=total, info="")

    def update(self, done: int, kept: int, dropped: int, dups: int) -> None:
        if self.bar is None:
            return
        minutes = max(1e-9, (time.perf_counter() - self.started) / 60)
        info = f"kept {kept} · dropped {dropped} · duplicates {dups} · {done / minutes:.1f} tasks/min"
        self.bar.update(self.task, completed=done, info=info)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def build(opts: BuildOptions, *, executor: Any = None,
          on_result: Callable[[GeneratedTask, dict[str, Any]], None] | None = None) -> BuildSummary:
    """Run the pipeline of the module docstring; returns per-family counts and wall time.

    ``executor`` overrides the one ``opts.executor`` would make (tests, or a caller's own Ray pool);
    ``on_result(task, result)`` is called after each verified task has been recorded.
    """
    from veriforge.core.store import RunStore

    opts.check()
    started = time.perf_counter()
    fams = select_families(opts.families, opts.kind)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    store = RunStore(out / "build.sqlite")
    if not opts.resume:
        for rec in store.records(NAMESPACE):
            store.delete_record(NAMESPACE, rec.key)
        for sub in ("tasks", "data", "verl"):
            shutil.rmtree(out / sub, ignore_errors=True)
    meta = {"seed": opts.seed, "split_by": opts.split_by, "estimate": opts.estimate, "dedup": opts.dedup,
            "near_threshold": opts.near_threshold}
    old_meta = store.get_record(META, "build")
    if opts.resume and old_meta is not None:
        diff = {k: (old_meta.get(k), v) for k, v in meta.items() if k in ("seed", "estimate") and old_meta.get(k) != v}
        if diff:
            raise BuildError(f"{out} was built with {', '.join(f'{k}={a!r}' for k, (a, _) in diff.items())}; "
                             f"resuming with {', '.join(f'{k}={b!r}' for k, (_, b) in diff.items())} would mix "
                             f"two builds: use the same values or --fresh")
    store.put_record(META, "build", meta)
    config = {**meta, "families": [f.name for f in fams], "kind": opts.kind, "limit": opts.limit,
              "max_tasks": opts.max_tasks, "jobs": opts.jobs, "executor": opts.executor}
    run_id = store.start_run(RUN_KIND, config)
    summary = BuildSummary(out=out, run_id=run_id, families={f.name: FamilyCounts() for f in fams})

    index = DedupIndex(near_threshold=opts.near_threshold if opts.dedup == "near" else 2.0,
                       structural=opts.dedup != "exact", bundled=bundled_index())
    seen_ids: dict[str, str] = {}
    pending: list[tuple[GeneratedTask, str]] = []  # (task, content hash) to verify
    suspects: list[tuple[GeneratedTask, str]] = []  # in flight when an earlier build process died
    unique = 0
    for fam, task, error in _enumerate(fams, opts):
        counts = summary.families[fam.name]
        if task is None:
            counts.malformed += 1
            store.add_event(run_id, "malformed", {"family": fam.name, "error": error})
            continue
        counts.generated += 1
        chash = task.content_hash()
        status = _pre_verify(task, fam, chash, index, seen_ids, store, run_id, counts)
        if status != "unique":
            continue
        unique += 1
        recorded = store.get_record(NAMESPACE, chash)
        if recorded is not None and recorded.get("status") in ("kept", "dropped"):
            counts.resumed += 1
            if recorded["status"] == "kept":
                counts.kept += 1
            else:
                counts.dropped += 1
        elif recorded is not None and recorded.get("status") == "started" and recorded.get("solo"):
            # verified alone last time and the build process died with it: this task kills the process
            counts.dropped += 1
            store.put_record(NAMESPACE, chash, {"id": task.id, "family": task.family, "kind": task.kind,
                                                "category": task.category, "run_id": run_id, "status": "dropped",
                                                "reason": "the build process died while verifying this task alone "
                                                          "(a crashing reference or runtime)"})
        elif recorded is not None and recorded.get("status") == "started":
            suspects.append((task, chash))  # in flight when an earlier build died: retried alone first
        else:
            pending.append((task, chash))
        if opts.max_tasks is not None and unique >= opts.max_tasks:
            break

    progress = _Progress(opts.progress)
    own_executor = executor is None
    pool = _make_executor(opts) if executor is None and (pending or suspects) else executor
    try:
        if suspects:
            _verify_all(suspects, pool, opts, store, run_id, summary, progress, on_result, solo=True)
        if pending:
            _verify_all(pending, pool, opts, store, run_id, summary, progress, on_result)
    except BaseException:
        summary.interrupted = True
        summary.wall_s = time.perf_counter() - started
        store.finish_run(run_id, "failed", summary.to_dict())
        raise
    finally:
        progress.stop()
        if own_executor and pool is not None:
            pool.shutdown()
    summary.wall_s = time.perf_counter() - started
    store.finish_run(run_id, "done", summary.to_dict())
    if opts.export:
        from .export import export

        export(out)
    return summary


def _pre_verify(task: GeneratedTask, fam: Family, chash: str, index: DedupIndex, seen_ids: dict[str, str],
                store: Any, run_id: str, counts: FamilyCounts) -> str:
    """Schema check, id uniqueness and dedup; records skips. Returns ``unique`` or the skip status."""
    base = {"id": task.id, "family": fam.name, "kind": task.kind, "category": task.category, "run_id": run_id}
    if task.family != fam.name or task.kind != fam.kind:
        reason = (f"family {fam.name!r} ({fam.kind}) yielded a task labelled {task.family!r} ({task.kind})")
        counts.malformed += 1
        store.put_record(NAMESPACE, chash, {**base, "status": "malformed", "reason": reason})
        return "malformed"
    try:
        task.check()
    except VeriforgeError as exc:
        counts.malformed += 1
        store.put_record(NAMESPACE, chash, {**base, "status": "malformed", "reason": str(exc)[:500]})
        return "malformed"
    if task.id in seen_ids:
        counts.duplicates += 1
        store.put_record(NAMESPACE, chash, {**base, "status": "duplicate", "rule": "id", "of": seen_ids[task.id],
                                            "reason": f"task id already used by family {seen_ids[task.id]}"})
        return "duplicate"
    dup = index.check_and_add(task.id, fam.name, reference_keys(task.reference, task.kind))
    if dup is not None:
        status = "bundled" if dup.rule == "bundled" else "duplicate"
        if status == "bundled":
            counts.bundled += 1
        else:
            counts.duplicates += 1
        store.put_record(NAMESPACE, chash, {**base, "status": status, "rule": dup.rule, "of": dup.of,
                                            "reason": dup.reason})
        return status
    seen_ids[task.id] = fam.name
    return "unique"


def _verify_all(pending: list[tuple[GeneratedTask, str]], pool: Any, opts: BuildOptions, store: Any, run_id: str,
                summary: BuildSummary, progress: _Progress, on_result: Callable[..., None] | None, *,
                solo: bool = False) -> None:
    """Verify ``pending`` on ``pool``. Each task is recorded as ``started`` before it is submitted, so a
    task that kills the build process (a crashing reference runs in-process) is found on resume:
    tasks in flight at the crash are retried one at a time (``solo``), and one that dies alone is dropped."""
    tasks_root = Path(opts.out) / "tasks"
    if opts.executor == "local" and opts.warm:
        _warm_up(pending, tasks_root)
    window = 1 if solo else 2 * opts.jobs
    queue = list(reversed(pending))
    inflight: dict[cf.Future, tuple[GeneratedTask, str, Path]] = {}
    done = 0
    progress.start(len(pending))
    totals: Counter[str] = Counter()
    by_family = summary.families
    while queue or inflight:
        while queue and len(inflight) < window:
            task, chash = queue.pop()
            store.put_record(NAMESPACE, chash, {"id": task.id, "family": task.family, "status": "started",
                                                "run_id": run_id, "solo": solo})
            folder = task.write(tasks_root)
            inflight[pool.submit(verify_task, str(folder), opts.estimate)] = (task, chash, folder)
        finished, _ = cf.wait(list(inflight), return_when=cf.FIRST_COMPLETED)
        for fut in finished:
            task, chash, folder = inflight.pop(fut)
            try:
                result = fut.result()
            except Exception as exc:  # the job itself failed (worker died): the task is dropped, not the build
                result = {"ok": False, "problems": [f"verification job failed: {type(exc).__name__}: {exc}"],
                          "impls": [], "seconds": 0.0}
            counts = by_family[task.family]
            counts.verified += 1
            counts.impls_verified += len(result.get("impls", []))
            base = {"id": task.id, "family": task.family, "kind": task.kind, "category": task.category,
                    "run_id": run_id, "seconds": result.get("seconds", 0.0),
                    "impls": [{k: v for k, v in i.items() if k != "estimates"} for i in result.get("impls", [])]}
            if result.get("ok"):
                counts.kept += 1
                totals["kept"] += 1
                store.put_record(NAMESPACE, chash, {**base, "status": "kept", "row": task_row(task, folder, result)})
            else:
                counts.dropped += 1
                totals["dropped"] += 1
                reasons = list(result.get("problems", [])) + [
                    f"{i['name']}: {i['reason']}" for i in result.get("impls", []) if not i.get("verified")]
                store.put_record(NAMESPACE, chash, {**base, "status": "dropped",
                                                    "reason": "; ".join(reasons)[:1000] or "not verified"})
                shutil.rmtree(folder, ignore_errors=True)
            done += 1
            dups = sum(c.duplicates + c.bundled for c in by_family.values())
            progress.update(done, totals["kept"], totals["dropped"], dups)
            if on_result is not None:
                on_result(task, result)


def _warm_up(pending: list[tuple[GeneratedTask, str]], tasks_root: Path) -> None:
    """Start what every evaluation shares (CPU runtime, the torch fork server) before fanning out."""
    from veriforge.cuda.tasks.validate import warm_up

    firsts: dict[str, GeneratedTask] = {}
    for task, _ in pending:
        firsts.setdefault(task.kind, task)
    if firsts:
        try:
            warm_up([t.write(tasks_root) for t in firsts.values()])
        except VeriforgeError:
            pass  # each evaluation reports the reason itself


def machine() -> dict[str, Any]:
    """Where timings and wall times were taken (for the datasheet)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": cpus,
            "processor": platform.processor() or platform.machine()}


def recorded(out: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Every recorded outcome of the build in ``out``, grouped by status."""
    from veriforge.core.store import RunStore

    path = Path(out) / "build.sqlite"
    if not path.is_file():
        raise BuildError(f"{out} holds no build (no build.sqlite); run `veriforge cudaperf dataset build` first")
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in RunStore(path).records(NAMESPACE):
        groups[rec.value.get("status", "?")].append({**rec.value, "content_hash": rec.key})
    return dict(groups)
