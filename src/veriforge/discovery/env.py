"""D3-Gym environment runtime: a Gym-style ``reset``/``step`` over one task folder.

An agent sees what a scientist would be given (the instruction, the dataset folder tree and
previews, the output paths it must write) and nothing of the answer: the gold program, the gold
results and the evaluator stay on the harness side. Each :meth:`D3Env.step` runs the agent's program
exactly like the gold program was run at build time (a fresh copy of ``datasets/``, an empty
``pred_results/``, the task's own interpreter, the sandbox with no network) and then runs the hidden
evaluator as a *separate* sandboxed process, so a program can neither import nor patch it.

Two kinds of failure are kept apart in ``info["failure"]`` because they mean opposite things for
metrics and training data: ``"program"`` (the agent's code crashed, timed out or wrote the wrong
files: reward 0, feedback for the next round) and ``"infrastructure"`` (the sandbox could not start,
the task's environment cannot import a dependency it locked, the evaluator could not run: the
episode says nothing about the agent and is excluded from rates).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veriforge.discovery.errors import DiscoveryError

__all__ = [
    "OBSERVATION_KEYS",
    "D3Env",
    "D3EnvError",
    "EvalOutcome",
    "RunOutcome",
    "TaskFolder",
    "evaluate_predictions",
    "find_tasks",
    "load_task",
    "render_observation",
    "resolve_python",
    "run_cli",
]

DATASETS = "datasets"
PRED = "pred_results"

OBSERVATION_KEYS = (
    "instance_id",
    "domain",
    "subtask_categories",
    "task_inst",
    "domain_knowledge",
    "dataset_folder_tree",
    "dataset_preview",
)
"""task.json fields an agent may see; everything else (gold program, results, evaluator, source
file) stays hidden."""

_TAIL = 3000
_MAX_PRED_BYTES = 64 * 1024 * 1024  # predictions larger than this are not shipped to the evaluator
_IMPORT_ERR = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([^']+)'")


class D3EnvError(DiscoveryError):
    """A task folder cannot be used as an environment (no task.json, no datasets, no evaluator)."""


@dataclass(frozen=True)
class TaskFolder:
    """A packaged task (schema in docs/d3gym.md), loaded and checked once."""

    dir: Path
    data: dict[str, Any]
    outputs: tuple[str, ...]  # relative to pred_results/
    program_name: str
    eval_script_name: str
    timeout_s: float

    @property
    def instance_id(self) -> str:
        return str(self.data.get("instance_id") or self.dir.name)

    @property
    def lock(self) -> list[str]:
        """``name==version`` lines of the task environment's lock (empty when there is none)."""
        rel = ((self.data.get("veriforge") or {}).get("env") or {}).get("lock") or "env/requirements.lock"
        p = self.dir / rel
        if not p.is_file():
            return []
        return [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip() and "==" in ln]


def _normalize_output(rel: str) -> str:
    rel = rel.replace("\\", "/").removeprefix("./").removeprefix(f"{PRED}/")
    if not rel or rel.startswith("/") or ".." in Path(rel).parts:
        raise D3EnvError(f"output path must be relative and inside {PRED}/: {rel!r}")
    return rel


def load_task(task_dir: str | Path) -> TaskFolder:
    """Read and check a task folder; :class:`D3EnvError` says what is missing."""
    d = Path(task_dir).expanduser().resolve()
    tj = d / "task.json"
    if not tj.is_file():
        raise D3EnvError(f"{d}: not a task folder (no task.json)")
    try:
        data = json.loads(tj.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise D3EnvError(f"{tj}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    vf = data.get("veriforge") or {}
    outputs = list(vf.get("outputs") or ([data["output_fname"]] if data.get("output_fname") else []))
    if not outputs:
        raise D3EnvError(f"{d}: task.json names no outputs (veriforge.outputs / output_fname)")
    eval_name = str(data.get("eval_script_name") or "")
    if not eval_name or not (d / "eval" / eval_name).is_file():
        raise D3EnvError(f"{d}: evaluator eval/{eval_name or '?'} missing")
    if not (d / "gold_results").is_dir():
        raise D3EnvError(f"{d}: no gold_results/ (the evaluator has nothing to compare with)")
    if not (d / DATASETS).is_dir():
        raise D3EnvError(f"{d}: no {DATASETS}/ folder")
    program = Path(str(data.get("gold_program_name") or "program.py")).name
    return TaskFolder(
        dir=d,
        data=data,
        outputs=tuple(_normalize_output(str(o)) for o in outputs),
        program_name=program if program.endswith(".py") else f"{program}.py",
        eval_script_name=eval_name,
        timeout_s=float(vf.get("timeout_s") or 600),
    )


def find_tasks(root: str | Path) -> list[Path]:
    """Task folders under ``root`` (``root`` itself if it is one); hidden folders such as the
    build's ``.rejected/`` are skipped. Sorted by name for a reproducible order."""
    r = Path(root).expanduser().resolve()
    if (r / "task.json").is_file():
        return [r]
    if not r.is_dir():
        raise D3EnvError(f"{r}: no such folder")
    return sorted(
        p for p in r.iterdir() if p.is_dir() and not p.name.startswith(".") and (p / "task.json").is_file()
    )


def resolve_python(task: TaskFolder, override: str | None = None) -> tuple[str, str]:
    """``(interpreter, note)``: ``override``, else the task's own environment (``env/venv`` or
    ``veriforge.env.venv_hint``), else the current interpreter with a note saying so (a task
    moved to another machine loses its absolute venv path; running anyway beats refusing)."""
    if override:
        p = Path(override)
        if not p.is_file() and shutil.which(override) is None:
            raise D3EnvError(f"python interpreter {override!r} not found")
        return (str(p) if p.is_file() else str(shutil.which(override))), "interpreter given by the caller"
    env = (task.data.get("veriforge") or {}).get("env") or {}
    cands = [task.dir / "env" / "venv" / "bin" / "python"]
    hint = env.get("venv_hint")
    if isinstance(hint, str) and hint:
        h = Path(hint) if Path(hint).is_absolute() else task.dir / hint
        cands += [h / "bin" / "python", h]
    for c in cands:
        if c.is_file():
            return str(c), f"task environment {c.parent.parent if c.parent.name == 'bin' else c}"
    where = f" (venv_hint {hint!r} not found)" if hint else ""
    note = f"task environment missing{where}: fell back to veriforge's interpreter {sys.executable}"
    return sys.executable, note


def _tail(text: str, n: int = _TAIL) -> str:
    return text if len(text) <= n else "..." + text[-n:]


def render_observation(obs: dict[str, Any]) -> str:
    """The first observation as prompt text, in ScienceAgentBench's layout."""
    parts = [str(obs.get("task_inst") or "").strip()]
    if obs.get("domain_knowledge"):
        parts.append(f"Domain knowledge:\n{str(obs['domain_knowledge']).strip()}")
    if obs.get("dataset_folder_tree"):
        parts.append(f"Dataset folder tree:\n```\n{str(obs['dataset_folder_tree']).rstrip()}\n```")
    if obs.get("dataset_preview"):
        parts.append(f"Dataset preview:\n{str(obs['dataset_preview']).rstrip()}")
    outs = ", ".join(f"`{o}`" for o in obs.get("outputs", []))
    parts.append(
        "Write one complete, standalone Python program. Read the input data from the `datasets/` folder "
        f"(relative to the working directory) and write {outs} (create `{PRED}/` if needed). "
        "There is no network access."
    )
    if obs.get("packages"):
        parts.append(f"Installed packages: {', '.join(obs['packages'])}.")
    return "\n\n".join(p for p in parts if p)


def _feedback(run: RunOutcome, rounds_left: int) -> str:
    """Observation after a failed attempt: execution facts only, never the evaluator's message."""
    lines: list[str] = []
    if run.status == "timeout":
        lines.append(f"The program was killed: it ran longer than the {run.timeout_s:g} s time limit.")
    elif run.status != "ok" or run.exit_code != 0:
        code = f"exit code {run.exit_code}" if run.exit_code is not None else run.reason
        how = code if run.status == "ok" else f"{run.status}: {code}"
        lines.append(f"The program failed ({how}).")
    if run.missing_outputs:
        missing = ", ".join(f"{PRED}/{m}" for m in run.missing_outputs)
        lines.append(f"Required outputs not written: {missing}.")
    if run.valid_execution:
        lines.append("The program ran and wrote every required output, but the result was not accepted.")
    if run.stderr_tail.strip():
        lines.append(f"stderr:\n```\n{run.stderr_tail.rstrip()}\n```")
    if run.stdout_tail.strip() and not run.valid_execution:
        lines.append(f"stdout:\n```\n{run.stdout_tail.rstrip()}\n```")
    if rounds_left > 0:
        lines.append(
            f"Fix the program and reply with the complete corrected version ({rounds_left} attempt(s) left)."
        )
    return "\n\n".join(lines)


@dataclass
class RunOutcome:
    """What running one program did (before any evaluation)."""

    status: str  # sandbox status (ok/timeout/memory/crashed/killed) or "infrastructure"
    exit_code: int | None
    reason: str
    wall_s: float
    timeout_s: float
    stdout_tail: str = ""
    stderr_tail: str = ""
    produced: list[str] = field(default_factory=list)  # relative to pred_results/
    missing_outputs: list[str] = field(default_factory=list)
    failure: str | None = None  # None | "program" | "infrastructure"
    failure_reason: str = ""

    @property
    def valid_execution(self) -> bool:
        """Exit 0 and every required output present (ScienceAgentBench's VER)."""
        return self.status == "ok" and self.exit_code == 0 and not self.missing_outputs


@dataclass
class EvalOutcome:
    """The hidden evaluator's verdict on one set of predictions."""

    passed: bool
    message: str
    crashed: bool = False
    ran: bool = True
    infrastructure: bool = False
    wall_s: float = 0.0


def _classify(status: str, exit_code: int | None, stderr: str, lock: list[str]) -> tuple[str, str]:
    """Program vs infrastructure failure of an agent's program.

    An import that fails is the *environment's* fault only when the task locked that distribution
    (it should be importable); importing something the task never installed is the program's fault.
    """
    if status == "memory":
        return "program", "ran out of memory (sandbox memory limit)"
    m = _IMPORT_ERR.search(stderr)
    if m:
        mod = m.group(1).split(".")[0].lower().replace("_", "-")
        locked = {ln.split("==")[0].strip().lower().replace("_", "-") for ln in lock}
        if mod in locked:
            return "infrastructure", f"locked dependency {mod!r} does not import in the task environment"
        return "program", f"imports {m.group(1)!r}, which the task environment does not provide"
    if status == "timeout":
        return "program", "timed out"
    if status == "ok" and exit_code == 0:
        return "program", "exited 0 without writing every required output"
    last = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    return "program", (last[-1].strip()[:300] if last else f"{status}, exit code {exit_code}")


def evaluate_predictions(
    task: TaskFolder, pred: dict[str, bytes], *, python: str | None = None, timeout_s: float = 120.0
) -> EvalOutcome:
    """Run ``task``'s evaluator on ``pred`` (``{path under pred_results/: bytes}``) in the sandbox.

    A crash on these predictions is a failed verdict (as during validation); a timeout or a sandbox
    failure is an infrastructure problem (the verdict says nothing about the predictions).
    """
    from veriforge.discovery.evalcheck import run_evaluator
    from veriforge.errors import SandboxError

    script = (task.dir / "eval" / task.eval_script_name).read_text(encoding="utf-8")
    stem = Path(task.eval_script_name).stem
    module = stem if stem.isidentifier() else "eval_mod"
    gold_dir = task.dir / "gold_results"
    gold = {
        p.relative_to(gold_dir).as_posix(): p.read_bytes() for p in sorted(gold_dir.rglob("*")) if p.is_file()
    }
    py = python or resolve_python(task)[0]
    t0 = time.perf_counter()
    try:
        passed, message, crashed = run_evaluator(
            script,
            module,
            dict(pred),
            gold,
            python=py,  # type: ignore[arg-type]
            timeout_s=timeout_s,
        )
    except SandboxError as exc:
        wall = round(time.perf_counter() - t0, 3)
        return EvalOutcome(False, str(exc), crashed=True, infrastructure=True, wall_s=wall)
    wall = round(time.perf_counter() - t0, 3)
    if passed is None:
        return EvalOutcome(False, message, crashed=True, infrastructure=True, wall_s=wall)
    return EvalOutcome(bool(passed), message, crashed=crashed, wall_s=wall)


class D3Env:
    """One task as a Gym-style environment with self-debug rounds.

    ``task``: a task folder (path) or a loaded :class:`TaskFolder`. ``limits``: sandbox limits for the
    agent's program (default: the task's ``timeout_s``, 4 GiB address space, 256 processes).
    ``max_debug_rounds``: attempts allowed *after* the first one (so ``3`` means up to 4 programs).
    ``python``: interpreter override (default: the task's environment, see :func:`resolve_python`).
    ``eval_timeout_s``: wall-clock limit of one evaluator run.
    """

    def __init__(
        self,
        task: str | Path | TaskFolder,
        *,
        limits: Any | None = None,
        max_debug_rounds: int = 3,
        python: str | None = None,
        eval_timeout_s: float = 120.0,
    ) -> None:
        if max_debug_rounds < 0:
            raise D3EnvError("max_debug_rounds must be >= 0")
        self.max_debug_rounds = int(max_debug_rounds)
        self.eval_timeout_s = float(eval_timeout_s)
        self._limits = limits
        self._python_override = python
        self._load(task)

    # ------------------------------------------------------------------ public API
    def _load(self, task: str | Path | TaskFolder) -> None:
        self.task = task if isinstance(task, TaskFolder) else load_task(task)
        self.python, self.python_note = resolve_python(self.task, self._python_override)
        self.round = 0
        self.done = False
        self.history: list[dict[str, Any]] = []
        self._last_pred: dict[str, bytes] | None = None
        self._last_run: RunOutcome | None = None
        self._first_obs: dict[str, Any] | None = None

    @property
    def limits(self) -> Any:
        from veriforge.sandbox import Limits

        if self._limits is not None:
            return self._limits
        t = self.task.timeout_s
        return Limits(timeout_s=t, cpu_s=t * 2, memory_mb=4096, max_procs=256, file_size_mb=1024)

    @property
    def max_attempts(self) -> int:
        return self.max_debug_rounds + 1

    def reset(self, task: str | Path | TaskFolder | None = None) -> dict[str, Any]:
        """Start an episode (on ``task`` when given) and return the first observation.

        The observation holds the visible task.json fields, the output paths, the installed packages
        and ``text`` (all of it rendered as a prompt). Nothing from ``gold_program/``,
        ``gold_results/`` or ``eval/`` is in it.
        """
        self._load(task if task is not None else self.task)
        data = self.task.data
        obs: dict[str, Any] = {k: data.get(k, "") for k in OBSERVATION_KEYS}
        obs["instance_id"] = self.task.instance_id
        obs["outputs"] = [f"{PRED}/{o}" for o in self.task.outputs]
        obs["packages"] = [ln.split("==")[0] for ln in self.task.lock]
        obs["round"] = 0
        obs["text"] = render_observation(obs)
        self._first_obs = obs
        return obs

    def step(self, program: str) -> tuple[dict[str, Any], float, bool, dict[str, Any]]:
        """Run ``program``; return ``(observation, reward, done, info)``.

        reward is 1.0 when the program executed validly *and* the hidden evaluator accepted its
        outputs, else 0.0. The episode ends on success, when the attempts are used up, or on an
        infrastructure failure (retrying cannot help the agent then). The observation after a failed
        attempt carries the execution feedback (status, missing outputs, stderr/stdout tails).
        """
        if self.done:
            raise D3EnvError("the episode is over; call reset() first")
        if not isinstance(program, str) or not program.strip():
            raise D3EnvError("step() needs the program's source text")
        self.round += 1
        t0 = time.perf_counter()
        run = self._run_program(program)
        ev: EvalOutcome | None = None
        if run.failure != "infrastructure" and run.valid_execution:
            ev = self.evaluate()
            if ev.infrastructure:
                run.failure, run.failure_reason = "infrastructure", f"evaluator could not run: {ev.message}"
            elif not ev.passed:
                run.failure, run.failure_reason = "program", "outputs rejected by the evaluator"
        success = bool(ev and ev.passed and run.valid_execution)
        reward = 1.0 if success else 0.0
        rounds_left = self.max_attempts - self.round
        self.done = success or rounds_left <= 0 or run.failure == "infrastructure"
        if success:
            text = "The program ran and its outputs were accepted."
        elif run.failure == "infrastructure":
            text = f"The environment failed (not the program's fault): {run.failure_reason}"
        else:
            text = _feedback(run, rounds_left if not self.done else 0)
        info = {
            "instance_id": self.task.instance_id,
            "round": self.round,
            "rounds_left": max(0, rounds_left) if not self.done else 0,
            "status": run.status,
            "exit_code": run.exit_code,
            "reason": run.reason,
            "valid_execution": run.valid_execution,
            "success": success,
            "eval_ran": bool(ev and ev.ran),
            "eval_passed": None if ev is None else ev.passed,
            "eval_message": "" if ev is None else ev.message,
            "failure": None if success else run.failure,
            "failure_reason": "" if success else run.failure_reason,
            "infrastructure_failure": run.failure == "infrastructure",
            "produced": run.produced,
            "missing_outputs": run.missing_outputs,
            "stdout_tail": run.stdout_tail,
            "stderr_tail": run.stderr_tail,
            "python": self.python,
            "python_note": self.python_note,
            "program_wall_s": run.wall_s,
            "wall_s": round(time.perf_counter() - t0, 3),
        }
        self.history.append(info)
        obs = {"instance_id": self.task.instance_id, "round": self.round, "text": text, "feedback": True}
        return obs, reward, self.done, info

    def evaluate(self) -> EvalOutcome:
        """Run the hidden evaluator on the last program's outputs (harness side only).

        The evaluator runs as its own sandboxed process with the task's interpreter; a crash on
        these predictions counts as a failed verdict (as during validation), a sandbox failure as an
        infrastructure problem.
        """
        if self._last_pred is None:
            return EvalOutcome(False, "no program has been run", ran=False)
        return evaluate_predictions(
            self.task, self._last_pred, python=self.python, timeout_s=self.eval_timeout_s
        )

    # ------------------------------------------------------------------ internals
    def _run_program(self, program: str) -> RunOutcome:
        from veriforge.discovery.goldrun import copy_lib, program_env
        from veriforge.discovery.plotrec import is_plotdata
        from veriforge.errors import SandboxError
        from veriforge.sandbox import run

        t = self.task
        limits = self.limits
        timeout = float(limits.timeout_s or 0)
        with tempfile.TemporaryDirectory(prefix="veriforge-d3env-") as tmp:
            work = Path(tmp) / "run"
            work.mkdir()
            shutil.copytree(t.dir / DATASETS, work / DATASETS)
            copy_lib(t.dir, work)
            (work / PRED).mkdir()
            (work / t.program_name).write_text(program, encoding="utf-8")
            Path(tmp).chmod(0o755)  # the sandbox uid must reach the work folder
            # The plot recorder runs here too, so the agent's figure is judged by its data.
            env = program_env(self.python, work)
            try:
                res = run([self.python, t.program_name], cwd=work, env=env, limits=limits, network=False)
            except SandboxError as exc:
                self._last_pred = {}
                out = RunOutcome(
                    "infrastructure",
                    None,
                    str(exc),
                    0.0,
                    timeout,
                    failure="infrastructure",
                    failure_reason=f"sandbox failed: {exc}",
                )
                self._last_run = out
                return out
            pred = work / PRED
            files = sorted(p for p in pred.rglob("*") if p.is_file())
            produced = [p.relative_to(pred).as_posix() for p in files]
            total = 0
            kept: dict[str, bytes] = {}
            for p, rel in zip(files, produced, strict=True):
                total += p.stat().st_size
                if total > _MAX_PRED_BYTES:
                    break
                kept[rel] = p.read_bytes()
        produced = [r for r in produced if not is_plotdata(r)]  # recorder sidecars: shipped, not shown
        missing = [o for o in t.outputs if o not in produced]
        # Paths of the throw-away work folder would make identical failures look different (and
        # defeat the model cache): show them relative to the program's working directory.
        stdout, stderr = (
            txt.replace(f"{work}/", "").replace(str(work), ".") for txt in (res.stdout_text, res.stderr_text)
        )
        out = RunOutcome(
            status=res.status,
            exit_code=res.exit_code,
            reason=res.reason,
            wall_s=res.wall_s,
            timeout_s=timeout,
            stdout_tail=_tail(stdout),
            stderr_tail=_tail(stderr),
            produced=produced,
            missing_outputs=missing,
        )
        if not out.valid_execution:
            out.failure, out.failure_reason = _classify(res.status, res.exit_code, stderr, t.lock)
        self._last_pred = kept
        self._last_run = out
        return out


def run_cli(
    *,
    tasks: str | Path,
    agent: str = "baseline",
    model: str | None = None,
    n: int = 1,
    out: str | Path | None = None,
) -> int:
    """``veriforge d3gym run TASKS/ --agent A --model M --n K --out TRAJ/``: sample, print a summary.

    ``out`` defaults to ``<TASKS>-trajectories`` next to the task folder. Exit code 0 when episodes
    were scored, 1 when every episode failed for infrastructure reasons (nothing was measured).
    """
    from veriforge.discovery.trajectories import run_tasks

    tasks_path = Path(tasks).expanduser().resolve()
    out_path = Path(out) if out is not None else tasks_path.with_name(f"{tasks_path.name}-trajectories")

    def progress(t: Any) -> None:
        m = t.metadata
        verdict = (
            "verified"
            if t.reward == 1.0
            else ("infrastructure" if m.get("infrastructure_failure") else "failed")
        )
        # the cause on the same line: "infrastructure" alone says nothing a user can act on
        why = " ".join(str(m.get("failure_reason") or "").split())[:300] if verdict != "verified" else ""
        print(f"  {t.task_id} #{m.get('sample')}: {verdict} after {m.get('attempts')} attempt(s)"
              + (f": {why}" if why else ""), flush=True)

    s = run_tasks(tasks_path, out=out_path, model=model, agent=agent, n=n, on_episode=progress)
    m = s.metrics
    cost = "unknown (unpriced model)" if m["cost_usd"] is None else f"${m['cost_usd']:.4f}"
    print(
        f"run {s.run_id}: {s.tasks} task(s) x {s.n}, {s.episodes} episode(s) ({s.reused} reused), "
        f"{s.verified} verified\n"
        f"  valid execution rate {m['valid_execution_rate']}, success rate {m['success_rate']}, "
        f"tasks solved {m['task_success_rate']}, infrastructure failures {m['infrastructure_failures']}\n"
        f"  tokens {m['prompt_tokens']} in / {m['completion_tokens']} out, cost {cost}, {s.wall_s:.1f} s\n"
        f"  wrote {s.files['trajectories']}, {s.files['verified']}, {s.files['summary']}"
    )
    for folder, reason in s.unusable_tasks.items():
        print(f"  skipped {folder}: {reason}")
    return 1 if s.episodes and m["scored_episodes"] == 0 else 0
