"""D3-Gym construction pipeline: repository in, validated task folders out.

``build_tasks(repo, out)`` mines candidates, then for each one runs the stages

    standalone -> env -> gold -> preview -> instruction -> evalsynth -> package -> evalcheck

each recorded in the run store (``kind="d3gym.build"``: an event per stage, ``set_state`` per
candidate/stage, and a ``d3gym.stage`` record keyed by the task folder and stage holding a
fingerprint of the stage's inputs). A re-run skips every stage whose fingerprint matches and whose
artefacts are still on disk, so an interrupted build resumes where it stopped and a finished one
costs only the mining. Tasks that fail a stage, or whose evaluator fails validation, are moved to
``OUT/.rejected/<id>/`` with their ``build_report.json`` saying which stage failed, whether it was an
infrastructure or a program failure, and why (for evaluators: the negative control that passed).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.core.hashing import canonical_json, content_hash
from veriforge.discovery.errors import DiscoveryError, EnvironmentBuildError, RewriteError
from veriforge.discovery.localmods import helper_summary
from veriforge.discovery.mine import Candidate, MineConfig, MineResult, mine_repository
from veriforge.discovery.package import (
    copy_datasets,
    copy_local_modules,
    dockerfile,
    lib_record,
    subtask_categories,
    task_json,
    write_json,
)
from veriforge.discovery.repo import open_repository

__all__ = ["STAGES", "BuildConfig", "BuildReport", "TaskOutcome", "build_tasks"]

STAGES = ("standalone", "env", "gold", "preview", "instruction", "evalsynth", "package", "evalcheck")
RECORD_NS = "d3gym.stage"
REJECTED = ".rejected"
INFRA_STAGES = {"env"}
MAX_RULE_REPAIRS = 4  # successive rule repairs of one gold program (each fixes one error class)
MAX_MODEL_REPAIRS = 2  # model-proposed repairs when no rule applies
UNREPAIRABLE = {"timeout", "memory", "missing-data", "system-tool", "system-library"}
MODEL_REPAIRABLE = {"exception", "library-drift", "cpu-count", "exit-code", "dependency"}


@dataclass
class BuildConfig:
    env_mode: str = "install"  # "install" | "reuse" (see veriforge.discovery.envbuild)
    offline: bool = False
    wheel_dir: str | None = None
    timeout_s: float = 600.0
    memory_mb: int | None = None
    jobs: int = 1
    domain: str = ""
    dockerfile: bool = True
    validate_reruns: int = 2
    max_source_bytes: int = 200_000
    max_dataset_mb: int = 200
    era: str = "auto"  # "auto": git date of the script | "off": today's packages | an ISO date
    repair: bool = True  # rule-based (and, with a model, model-driven) repair of a failing gold run

    def fingerprint(self, *names: str) -> dict[str, Any]:
        return {n: getattr(self, n) for n in names}


@dataclass
class TaskOutcome:
    instance_id: str
    source: str
    status: str  # "built" | "rejected" | "failed"
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed_stage: str | None = None
    failure_kind: str | None = None  # "infrastructure" | "program" | "evaluator"
    reason: str = ""
    seconds: float = 0.0
    task_dir: str = ""


@dataclass
class BuildReport:
    repo: str
    out: str
    run_id: str
    mined: list[str]
    skipped: list[dict[str, str]]
    tasks: list[TaskOutcome]
    seconds: float = 0.0
    # mining warnings worth a human's look (an input chosen among several same-named files)
    warnings: list[dict[str, str]] = field(default_factory=list)

    @property
    def built(self) -> list[TaskOutcome]:
        return [t for t in self.tasks if t.status == "built"]

    def summary(self) -> dict[str, Any]:
        envs = {t.stages.get("env", {}).get("detail", {}).get("env_dir") for t in self.tasks} - {None}

        def reached(stage: str) -> int:
            return sum(1 for t in self.tasks if t.stages.get(stage, {}).get("status") in ("done", "cached"))

        return {
            "candidates_mined": len(self.mined),
            "files_skipped": len(self.skipped),
            "warnings": len(self.warnings),
            "environments": len(envs),
            "environments_ok": reached("env"),
            "gold_runs_passing": reached("gold"),
            "evaluators_validated": reached("evalcheck"),
            "evaluators_rejected": sum(1 for t in self.tasks if t.failure_kind == "evaluator"),
            "tasks_built": len(self.built),
            "flagged_unanswerable": sum(
                1 for t in self.tasks if t.stages.get("evalcheck", {}).get("detail", {}).get("answerable") is False
            ),
            "infrastructure_failures": sum(1 for t in self.tasks if t.failure_kind == "infrastructure"),
            "program_failures": sum(1 for t in self.tasks if t.failure_kind == "program"),
            "machine_failures": sum(1 for t in self.tasks if t.failure_kind == "machine"),
            "failures": self._failures(),
            "repairs": self._repairs(),
            "era": self._era(),
            "disk": self._disk(),
            "seconds": round(self.seconds, 2),
        }

    def _failures(self) -> dict[str, dict[str, int]]:
        """Failed/rejected tasks counted per kind and per ``stage/code`` (codes: ``goldrun.failure_class``)."""
        by_kind: dict[str, int] = {}
        by_reason: dict[str, int] = {}
        for t in self.tasks:
            if not t.failed_stage:
                continue
            kind = t.failure_kind or "unknown"
            code = t.stages.get(t.failed_stage, {}).get("detail", {}).get("code") or kind
            by_kind[kind] = by_kind.get(kind, 0) + 1
            key = f"{t.failed_stage}/{code}"
            by_reason[key] = by_reason.get(key, 0) + 1
        return {"by_kind": dict(sorted(by_kind.items())), "by_reason": dict(sorted(by_reason.items()))}

    def _repairs(self) -> dict[str, Any]:
        """Gold runs that passed only after a repair, and which repairs were applied (ok or not)."""
        applied: dict[str, int] = {}
        fixed = 0
        for t in self.tasks:
            reps = t.stages.get("gold", {}).get("detail", {}).get("repairs") or []
            for r in reps:
                applied[r["by"]] = applied.get(r["by"], 0) + 1
            fixed += bool(reps) and t.stages.get("gold", {}).get("status") in ("done", "cached")
        return {"gold_runs_repaired": fixed, "applied": dict(sorted(applied.items()))}

    def _era(self) -> dict[str, Any]:
        """How many environments were resolved as of an era, and which packages had to be relaxed."""
        dated, relaxed = 0, {}
        for t in self.tasks:
            era = t.stages.get("env", {}).get("detail", {}).get("era") or {}
            if era.get("era"):
                dated += 1
            for name in era.get("relaxed") or {}:
                relaxed[name] = relaxed.get(name, 0) + 1
        return {"tasks_with_era": dated, "relaxed": dict(sorted(relaxed.items()))}

    def _disk(self) -> dict[str, Any]:
        """Disk of the environments; each task is charged its environment's size / tasks sharing it."""
        users: dict[str, list[str]] = {}
        size: dict[str, int] = {}
        for t in self.tasks:
            detail = t.stages.get("env", {}).get("detail", {})
            if detail.get("env_dir"):
                users.setdefault(detail["env_dir"], []).append(t.instance_id)
                size[detail["env_dir"]] = int(detail.get("disk_bytes") or 0)
        per_task = {iid: size[d] // len(ids) for d, ids in users.items() for iid in ids}
        total = sum(size.values())
        return {
            "environments_bytes": total,
            "per_task_bytes": per_task,
            "mean_per_task_mb": round(total / len(per_task) / 2**20, 1) if per_task else 0.0,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "out": self.out,
            "run_id": self.run_id,
            "summary": self.summary(),
            "mined": self.mined,
            "skipped": self.skipped,
            "warnings": self.warnings,
            "tasks": [asdict(t) for t in self.tasks],
        }


class StageFailed(DiscoveryError):
    """A stage could not complete; ``kind`` says whose fault it was."""

    def __init__(self, stage: str, kind: str, reason: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage, self.kind, self.reason, self.detail = stage, kind, reason, detail or {}


class _Recorder:
    """Run-store bookkeeping shared by the worker threads."""

    def __init__(self, store: Any, run_id: str, out: Path) -> None:
        self.store, self.run_id, self.out = store, run_id, out
        self.lock = threading.Lock()

    def key(self, iid: str, stage: str) -> str:
        return f"{self.out}::{iid}::{stage}"

    def cached(self, iid: str, stage: str, fp: str) -> dict[str, Any] | None:
        with self.lock:
            rec = self.store.get_record(RECORD_NS, self.key(iid, stage))
        return rec if rec and rec.get("fp") == fp and rec.get("ok") else None

    def done(
        self, iid: str, stage: str, fp: str, ok: bool, detail: dict[str, Any], seconds: float, status: str
    ) -> None:
        with self.lock:
            if status != "cached":
                self.store.put_record(
                    RECORD_NS,
                    self.key(iid, stage),
                    {"fp": fp, "ok": ok, "detail": detail},
                    run_id=self.run_id,
                )
            self.store.set_state(
                self.run_id, f"{iid}/{stage}", {"status": status, "seconds": round(seconds, 3)}
            )
            self.store.add_event(
                self.run_id,
                f"stage.{status}",
                {"task": iid, "stage": stage, "seconds": round(seconds, 3), "detail": _brief(detail)},
            )


def _brief(detail: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in detail.items() if not isinstance(v, str) or len(v) < 2000}


def _content_key(data: bytes) -> bytes:
    """Bytes compared for answer leaks: text with line ends and trailing spaces normalised."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data
    return "\n".join(line.rstrip() for line in text.strip().splitlines()).encode()


def answers_in_datasets(task_dir: Path) -> list[tuple[str, str]]:
    """``[(gold output, dataset file)]`` pairs with the same content.

    A program that re-derives a file the repository already holds (a committed aggregate copied
    with its data folder, a cleaned table saved next to the raw one) makes a task whose answer is
    one of its inputs; such a task measures copying, not analysis.
    """
    gold, data = task_dir / "gold_results", task_dir / "datasets"
    if not gold.is_dir() or not data.is_dir():
        return []
    by_size: dict[int, list[Path]] = {}
    for p in data.rglob("*"):
        if p.is_file():
            by_size.setdefault(p.stat().st_size, []).append(p)
    found = []
    for out in sorted(gold.rglob("*")):
        if not out.is_file() or out.stat().st_size < 16 or ".plotdata" in out.parts:
            continue
        key = _content_key(out.read_bytes())
        for cand in (p for size, ps in by_size.items() if abs(size - out.stat().st_size) <= 64 for p in ps):
            if _content_key(cand.read_bytes()) == key:
                found.append((f"pred_results/{out.relative_to(gold).as_posix()}", cand.relative_to(data).as_posix()))
                break
    return found


class _TaskBuilder:
    """Runs the stages of one candidate."""

    def __init__(
        self,
        cand: Candidate,
        repo_root: Path,
        github_name: str,
        out: Path,
        cfg: BuildConfig,
        rec: _Recorder,
        client: Any,
    ) -> None:
        self.cand, self.repo_root, self.github_name, self.out, self.cfg = (
            cand,
            repo_root,
            github_name,
            out,
            cfg,
        )
        self.rec, self.client = rec, client
        self.dir = out / cand.instance_id
        self.outcome = TaskOutcome(cand.instance_id, cand.path, "failed", task_dir=str(self.dir))
        self.state: dict[str, Any] = {}
        self.fp = content_hash(
            cand.source,
            json.dumps(cand.datasets),
            str(repo_root),
            json.dumps([m["sha256"] for m in cand.local_modules]),
            json.dumps(cand.dataset_excludes),
        )

    # -- driver ---------------------------------------------------------------------------------
    def run(self) -> TaskOutcome:
        t0 = time.perf_counter()
        rejected = self.out / REJECTED / self.cand.instance_id
        if rejected.exists() and not self.dir.exists():
            shutil.move(str(rejected), str(self.dir))  # retry a previously rejected task in place
        self.dir.mkdir(parents=True, exist_ok=True)
        steps: list[tuple[str, Callable[[], dict[str, Any]], Callable[[], bool], dict[str, Any]]] = [
            ("standalone", self.standalone, self._has("gold_program"), {}),
            (
                "env",
                self.env,
                self._has("env/requirements.lock"),
                self.cfg.fingerprint("env_mode", "offline", "wheel_dir", "era"),
            ),
            (
                "gold",
                self.gold,
                self._has("gold_results"),
                self.cfg.fingerprint("timeout_s", "memory_mb", "repair") | {"model": bool(self.client)},
            ),
            ("preview", self.preview, lambda: True, {}),
            (
                "instruction",
                self.instruction,
                lambda: True,
                {"model": bool(self.client), "domain": self.cfg.domain},
            ),
            ("evalsynth", self.evalsynth, self._has("eval"), {"model": bool(self.client)}),
            ("package", self.package, self._has("task.json"), {"dockerfile": self.cfg.dockerfile}),
            ("evalcheck", self.evalcheck, lambda: True, {"reruns": self.cfg.validate_reruns}),
        ]
        try:
            for stage, fn, present, extra in steps:
                self.fp = content_hash(self.fp, stage, json.dumps(extra, sort_keys=True, default=str))
                self._stage(stage, fn, present)
            self.outcome.status = "built"
        except StageFailed as exc:
            self.outcome.failed_stage, self.outcome.failure_kind, self.outcome.reason = (
                exc.stage,
                exc.kind,
                exc.reason,
            )
            self.outcome.status = "rejected" if exc.kind == "evaluator" else "failed"
        self.outcome.seconds = round(time.perf_counter() - t0, 3)
        self._report()
        if self.outcome.status != "built":
            dest = self.out / REJECTED / self.cand.instance_id
            shutil.rmtree(dest, ignore_errors=True)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(self.dir), str(dest))
            self.outcome.task_dir = str(dest)
        return self.outcome

    def _has(self, rel: str) -> Callable[[], bool]:
        return lambda: (self.dir / rel).exists()

    def _stage(self, stage: str, fn: Callable[[], dict[str, Any]], present: Callable[[], bool]) -> None:
        t0 = time.perf_counter()
        hit = self.rec.cached(self.cand.instance_id, stage, self.fp)
        if hit is not None and present():
            self.state[stage] = hit["detail"]
            self.outcome.stages[stage] = {"status": "cached", "seconds": 0.0, "detail": _brief(hit["detail"])}
            self.rec.done(self.cand.instance_id, stage, self.fp, True, hit["detail"], 0.0, "cached")
            return
        try:
            detail = fn()
        except StageFailed as exc:
            seconds = time.perf_counter() - t0
            detail = {"kind": exc.kind, "reason": exc.reason, **exc.detail}
            self.outcome.stages[stage] = {
                "status": "failed",
                "seconds": round(seconds, 3),
                "detail": _brief(detail),
            }
            self.rec.done(self.cand.instance_id, stage, self.fp, False, detail, seconds, "failed")
            raise
        except Exception as exc:  # an unexpected bug in a stage must not stop the other tasks
            seconds = time.perf_counter() - t0
            detail = {"kind": "infrastructure", "reason": f"{type(exc).__name__}: {exc}"}
            self.outcome.stages[stage] = {"status": "failed", "seconds": round(seconds, 3), "detail": detail}
            self.rec.done(self.cand.instance_id, stage, self.fp, False, detail, seconds, "failed")
            raise StageFailed(stage, "infrastructure", detail["reason"]) from exc
        seconds = time.perf_counter() - t0
        self.state[stage] = detail
        self.outcome.stages[stage] = {
            "status": "done",
            "seconds": round(seconds, 3),
            "detail": _brief(detail),
        }
        self.rec.done(self.cand.instance_id, stage, self.fp, True, detail, seconds, "done")

    def _report(self) -> None:
        report = asdict(self.outcome)
        report["validation"] = self.state.get("evalcheck_full") or self.state.get("evalcheck")
        write_json(self.dir / "build_report.json", report)

    # -- stages ---------------------------------------------------------------------------------
    def standalone(self) -> dict[str, Any]:
        from veriforge.discovery.standalone import check_standalone, make_standalone

        try:
            sa = make_standalone(self.cand, self.repo_root)
        except RewriteError as exc:
            if self.client is None:
                raise StageFailed("standalone", "program", f"path rewrite failed: {exc}") from exc
            from veriforge.discovery.rewrite_model import model_rewrite

            if any(m.get("fixed_io") for m in self.cand.local_modules):
                # the model rewrites the program only; its helpers' fixed paths would stay unredirected
                raise StageFailed("standalone", "program", f"path rewrite failed: {exc}") from exc
            sa = model_rewrite(self.cand, self.repo_root, self.client, str(exc))
            if check_standalone(sa.program):
                raise StageFailed("standalone", "program", f"path rewrite failed: {exc}") from exc
        shutil.rmtree(self.dir / "gold_program", ignore_errors=True)
        (self.dir / "gold_program").mkdir(parents=True)
        (self.dir / "gold_program" / sa.program_name).write_text(sa.program, encoding="utf-8")
        copy_datasets(self.repo_root, sa.datasets, self.dir, exclude=self.cand.dataset_excludes)
        copy_local_modules(self.repo_root, self.cand.local_modules, self.dir, redirected=sa.lib)
        return sa.to_dict() | {"program": None, "lib": sorted(sa.lib), "local_modules": self.cand.local_modules}

    def env(self) -> dict[str, Any]:
        from veriforge.discovery.deps import resolve_requirements
        from veriforge.discovery.envbuild import build_environment
        from veriforge.discovery.mine import RepoIndex

        index = RepoIndex(self.repo_root)
        script_dir = str(Path(self.cand.path).parent).replace(".", "") if "/" in self.cand.path else ""
        local = {m for m in self.cand.imports if index.is_local_module(m, script_dir)}
        local |= {m["name"] for m in self.cand.local_modules}
        calls = [r["call"] for r in self.cand.reads + self.cand.writes]
        from veriforge.discovery.deps import format_calls

        calls += format_calls(self.repo_root, self.cand.local_modules)  # to_hdf in a vendored utils.py
        reqs = resolve_requirements(self.cand.imports, self.repo_root, calls=calls, local_modules=local)
        imports = [m for m in self.cand.imports if m not in local and _third_party(m)]
        era = self._era()
        try:
            env = build_environment(
                reqs.specs,
                reqs.dists,
                imports,
                mode=self.cfg.env_mode,
                wheel_dir=self.cfg.wheel_dir,
                offline=self.cfg.offline,
                era=era,
            )
        except EnvironmentBuildError as exc:
            code = "env-resolve" if "resolution" in str(exc) else "env-import" if "import" in str(exc) else "env"
            detail = {"requirements": reqs.to_dict(), "code": code, "era": era.to_dict() if era else None}
            raise StageFailed("env", "infrastructure", str(exc), detail) from exc
        (self.dir / "env").mkdir(exist_ok=True)
        (self.dir / "env" / "requirements.lock").write_text("\n".join(env.lock) + "\n", encoding="utf-8")
        (self.dir / "env" / "python_version").write_text(env.python_version + "\n", encoding="utf-8")
        (self.dir / "env" / "requirements.in").write_text("\n".join(reqs.specs) + "\n", encoding="utf-8")
        era_record = env.era or {"era": era.to_dict() if era else None, "constraints": [], "relaxed": {}}
        return env.to_dict() | {"requirements": reqs.to_dict(), "era": era_record}

    def _era(self) -> Any:
        """The environment's cut-off date: ``cfg.era`` "auto" (git), "off", or an ISO date."""
        from veriforge.discovery.era import Era, era_of, parse_era

        if self.cfg.era == "off" or self.cfg.env_mode != "install":
            return None
        if self.cfg.era == "auto":
            return era_of(self.repo_root, self.cand.path)
        return Era(parse_era(self.cfg.era), "configured")

    def gold(self) -> dict[str, Any]:
        from veriforge.discovery.goldrun import run_gold
        from veriforge.discovery.repair import Repair, apply_rules, model_repair, unified_diff

        env = self.state["env"]
        expected = self.state["standalone"]["outputs"]
        name = self.state["standalone"]["program_name"]
        path = self.dir / "gold_program" / name

        def attempt() -> Any:
            return run_gold(
                self.dir, name, env["python"], expected, timeout_s=self.cfg.timeout_s, memory_mb=self.cfg.memory_mb
            )

        res = attempt()
        original = path.read_text(encoding="utf-8")
        repairs: list[Repair] = []
        rule_budget, model_budget = MAX_RULE_REPAIRS, MAX_MODEL_REPAIRS if self.client else 0
        while not res.ok and self.cfg.repair and res.code not in UNREPAIRABLE:
            source = path.read_text(encoding="utf-8")
            fixed = apply_rules(source, res.stderr_tail) if rule_budget else None
            if fixed is not None:
                new, by = fixed[0], f"rule:{fixed[1].name}"
                rule_budget -= 1
            elif model_budget and res.code in MODEL_REPAIRABLE:
                model_budget -= 1
                try:
                    new, by = model_repair(source, res.stderr_tail, name, self.client), "model"
                except Exception:  # a model outage must not fail the build; the run stays failed
                    new, by = None, "model"
                if new is None:
                    continue
            else:
                break
            path.write_text(new, encoding="utf-8")
            repairs.append(Repair(by, res.reason, unified_diff(source, new, name)))
            res = attempt()
            repairs[-1].ok = res.ok
        record = [r.to_dict() for r in repairs]
        if not res.ok:
            if repairs:
                path.write_text(original, encoding="utf-8")  # the task keeps the author's program
            reason = res.reason + (f" (after {len(repairs)} repair(s))" if repairs else "")
            raise StageFailed("gold", res.failure or "program", reason, res.to_dict() | {"repairs": record})
        leaked = answers_in_datasets(self.dir)
        if leaked:
            out, src = leaked[0]
            raise StageFailed(
                "gold",
                "program",
                f"the answer is among the inputs: {out} has the same content as datasets/{src} "
                "(a solver could copy it)",
                res.to_dict() | {"repairs": record, "code": "answer-in-datasets", "leaked": leaked},
            )
        # issue 18 part 3: recorded figures are re-drawn once; what differs between runs
        # (bootstrapped intervals, jitter) is flagged so no one is judged on it
        from veriforge.discovery.plotrec import rerun_and_mark

        unstable = rerun_and_mark(
            self.dir,
            self.state["standalone"]["program_name"],
            env["python"],
            timeout_s=self.cfg.timeout_s,
            memory_mb=self.cfg.memory_mb,
        )
        return res.to_dict() | {"repairs": record} | ({"unstable_figures": unstable} if unstable else {})

    def preview(self) -> dict[str, Any]:
        from veriforge.discovery.preview import dataset_preview, folder_tree

        datasets = self.dir / "datasets"
        return {"dataset_preview": dataset_preview(datasets), "dataset_folder_tree": folder_tree(datasets)}

    def _info(self) -> dict[str, Any]:
        sa = self.state["standalone"]
        return {
            "program_source": (self.dir / "gold_program" / sa["program_name"]).read_text(encoding="utf-8"),
            "outputs": self.state["gold"]["outputs"],
            "gold_dir": str(self.dir / "gold_results"),
            "inputs": [f"datasets/{d}" for d in sa["datasets"]],
            "datasets_dir": str(self.dir / "datasets"),
            "dataset_preview": self.state["preview"]["dataset_preview"],
            "dataset_folder_tree": self.state["preview"]["dataset_folder_tree"],
            "domain": self.cfg.domain,
            "github_name": self.github_name,
            "src_file_or_path": self.cand.path,
            "helpers": helper_summary(self.dir, self.cand.local_modules),
        }

    def instruction(self) -> dict[str, Any]:
        from veriforge.discovery.instruction import write_instruction

        return {"task_inst": write_instruction(self._info(), client=self.client)}

    def _eval_name(self) -> str:
        stem = Path(self.state["standalone"]["program_name"]).stem
        return f"eval_{stem}.py" if f"eval_{stem}".isidentifier() else "eval_task.py"

    def evalsynth(self) -> dict[str, Any]:
        from veriforge.discovery import evalsynth

        outputs = [o.removeprefix("pred_results/") for o in self.state["gold"]["outputs"]]
        name = self._eval_name()
        try:
            script = evalsynth.synthesize(
                self.dir / "gold_results",
                outputs,
                client=self.client,
                program_source=self._info()["program_source"],
                script_name=name,
            )
        except evalsynth.EvalSynthesisError as exc:
            raise StageFailed("evalsynth", "evaluator", str(exc)) from exc
        shutil.rmtree(self.dir / "eval", ignore_errors=True)
        script.write(self.dir / "eval" / name)
        return {"eval_script_name": name, "plan": script.plan}

    def package(self) -> dict[str, Any]:
        env, sa = self.state["env"], self.state["standalone"]
        data = task_json(
            instance_id=self.cand.instance_id,
            domain=self.cfg.domain,
            categories=subtask_categories(self.cand.imports, self.state["gold"]["outputs"]),
            github_name=self.github_name,
            task_inst=self.state["instruction"]["task_inst"],
            domain_knowledge="",
            folder_tree=self.state["preview"]["dataset_folder_tree"],
            preview=self.state["preview"]["dataset_preview"],
            src_file=self.cand.path,
            program_name=sa["program_name"],
            outputs=self.state["gold"]["outputs"],
            eval_script_name=self.state["evalsynth"]["eval_script_name"],
            timeout_s=self.cfg.timeout_s,
            python_version=env["python_version"],
            venv_hint=env["env_dir"],
            eval_plan=self.state["evalsynth"]["plan"],
            extra={
                "env_mode": env["mode"],
                "datasets": sa["datasets"],
                "rewrites": sa["replacements"],
                "era": env.get("era"),
                "repairs": self.state["gold"].get("repairs", []),
                "ambiguous_inputs": self.cand.ambiguous_inputs,
                "lib": lib_record(self.cand.local_modules, self.state["standalone"].get("lib") or []),
                "source_changes": self.cand.source_changes,
            },
        )
        write_json(self.dir / "task.json", data)
        if self.cfg.dockerfile:
            (self.dir / "Dockerfile").write_text(
                dockerfile(env["python_version"], sa["program_name"], lib=bool(self.cand.local_modules))
            )
        return {"task_json": "task.json"}

    def evalcheck(self) -> dict[str, Any]:
        from veriforge.discovery.evalcheck import validate_evaluator

        val = validate_evaluator(
            self.dir, reruns=self.cfg.validate_reruns, python=self.state["env"]["python"]
        )
        full = val.to_dict()
        self.state["evalcheck_full"] = full
        if not val.ok:
            raise StageFailed("evalcheck", "evaluator", "; ".join(val.reasons), {"validation": full})
        # issue 18 part 5: answerable from the instruction and data alone? (flagged, never dropped)
        from veriforge.discovery.answerable import answerability, record_answerability

        ans = answerability(self.dir, self.client, python=self.state["env"]["python"])
        record_answerability(self.dir, ans)
        return {
            "ok": True,
            "controls": [c["name"] for c in full["controls"]],
            "skipped": full["skipped"],
            "answerable": ans["answerable"],
            "answerability": {k: ans[k] for k in ("method", "answerable", "coverage")},
        }


def _third_party(mod: str) -> bool:
    import sys

    return mod not in sys.stdlib_module_names and mod != "__future__"


def build_tasks(
    repo: str | Path,
    out: str | Path,
    cfg: BuildConfig | None = None,
    *,
    client: Any = None,
    store: Any = None,
    model_filter: Callable[[Candidate], tuple[bool, str]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> BuildReport:
    """Build every task of ``repo`` into ``out``; returns (and stores) the per-stage report."""
    from veriforge.core.store import RunStore

    cfg = cfg or BuildConfig()
    if cfg.era not in ("auto", "off"):
        from veriforge.discovery.era import parse_era

        parse_era(cfg.era)  # a malformed --era fails the build up front, not every task's env stage
    t0 = time.perf_counter()
    src = open_repository(repo)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    own_store = store is None
    store = store or RunStore()
    config = {"repo": src.origin, "commit": src.commit, "out": str(out), **asdict(cfg), "model": bool(client)}
    config.pop("jobs")
    previous = [
        r
        for r in store.unfinished_runs(kind="d3gym.build")
        if canonical_json(r.config) == canonical_json(config)
    ]
    run_id = store.start_run("d3gym.build", config, run_id=previous[-1].id if _resumable(previous) else None)
    say = progress or (lambda _m: None)
    try:
        mined: MineResult = mine_repository(
            src.path,
            repo_name=src.name.split("/")[-1],
            cfg=MineConfig(cfg.max_source_bytes, cfg.max_dataset_mb * 1024 * 1024),
            model_filter=model_filter,
        )
        store.add_event(run_id, "mine", mined.to_dict())
        say(f"mined {len(mined.candidates)} candidate(s), skipped {len(mined.skipped)} file(s)")
        for c in mined.candidates:
            for a in c.ambiguous_inputs:
                say(
                    f"warning: {c.path} line {a['line']}: {a['value']!r} was resolved by choice; "
                    f"chose {a['chosen']} ({a['rule']})"
                    + (f" over {', '.join(a['alternatives'])}" if a["alternatives"] else "")
                )
        rec = _Recorder(store, run_id, out)

        def one(cand: Candidate) -> TaskOutcome:
            outcome = _TaskBuilder(cand, src.path, src.name, out, cfg, rec, client).run()
            say(
                f"{cand.instance_id}: {outcome.status}"
                + (
                    f" at {outcome.failed_stage} ({outcome.failure_kind}): {outcome.reason[:200]}"
                    if outcome.failed_stage
                    else ""
                )
            )
            return outcome

        with ThreadPoolExecutor(max_workers=max(1, cfg.jobs)) as pool:
            tasks = list(pool.map(one, mined.candidates))
        report = BuildReport(
            repo=src.origin,
            out=str(out),
            run_id=run_id,
            mined=[c.path for c in mined.candidates],
            skipped=[{"path": s.path, "reason": s.reason} for s in mined.skipped],
            tasks=tasks,
            seconds=time.perf_counter() - t0,
            warnings=[
                {"source": c.path, "warning": w}
                for c in mined.candidates
                for w in c.warnings
                if w.startswith("ambiguous input")
            ],
        )
        write_json(out / "d3gym_build.json", report.to_dict())
        store.finish_run(run_id, "done", report.summary())
        return report
    except BaseException:
        store.finish_run(run_id, "failed")
        raise
    finally:
        if own_store:
            store.close()


def _resumable(previous: list[Any]) -> bool:
    from veriforge.core.store import pid_alive

    if not previous:
        return False
    last = previous[-1]
    return not (last.status == "running" and last.pid and pid_alive(last.pid))
