"""Trajectory sampling over a task set: n episodes per task, concurrently, resumable.

``sample_trajectories`` runs ``n`` episodes of an agent on every task with at most ``concurrency``
episodes in flight (each episode's program and evaluator runs happen in worker threads, so the event
loop keeps the model calls of the others going). Every finished episode is written to the run store
as a record (namespace :data:`RECORD_NS`, key ``<run id>/<instance id>/<sample>``) *as soon as it
ends*, so a killed run resumed with the same config repeats only the missing episodes. Episodes that
failed for infrastructure reasons (model server down, sandbox broken) are retried on resume: they
say nothing about the agent.

``run_tasks`` is what ``veriforge d3gym run`` calls: it also writes the output folder
(``trajectories.jsonl``, ``verified.jsonl`` = the rejection-sampled episodes, ``summary.json``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.core.hashing import canonical_json, content_hash
from veriforge.core.types import Trajectory
from veriforge.discovery.errors import DiscoveryError

__all__ = [
    "RECORD_NS",
    "RUN_KIND",
    "TRAJECTORIES_FILE",
    "VERIFIED_FILE",
    "RunSummary",
    "rejection_sample",
    "run_tasks",
    "sample_trajectories",
    "write_jsonl",
]

RECORD_NS = "d3gym.trajectory"
RUN_KIND = "d3gym.run"
TRAJECTORIES_FILE = "trajectories.jsonl"
VERIFIED_FILE = "verified.jsonl"
SUMMARY_FILE = "summary.json"
STORE_FILE = "run.sqlite"


def rejection_sample(trajectories: Iterable[Trajectory]) -> list[Trajectory]:
    """Keep only verified episodes: reward 1 from the hidden evaluator, no infrastructure failure."""
    return [
        t
        for t in trajectories
        if t.reward == 1.0 and t.metadata.get("success") and not t.metadata.get("infrastructure_failure")
    ]


def write_jsonl(path: Path, trajectories: Iterable[Trajectory]) -> int:
    """Write one trajectory JSON per line (atomically); returns the count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as fh:
        for t in trajectories:
            fh.write(t.to_json() + "\n")
            n += 1
    tmp.replace(path)
    return n


def _key(run_id: str, iid: str, sample: int) -> str:
    return f"{run_id}/{iid}/{sample}"


async def sample_trajectories(
    task_dirs: Sequence[Path],
    agent: Any,
    *,
    n: int = 1,
    concurrency: int = 4,
    env_kwargs: dict[str, Any] | None = None,
    store: Any | None = None,
    run_id: str | None = None,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> tuple[list[Trajectory], dict[str, str], int]:
    """Run ``n`` episodes of ``agent`` per task; returns ``(trajectories, unusable tasks, reused)``.

    ``agent`` has ``async run_episode(env, sample=k, trajectory_id=...)``. With ``store`` and
    ``run_id``, finished episodes are stored at once and stored ones are reused (``reused`` counts
    them). Unusable task folders are reported as ``{folder: reason}``, not raised.
    """
    from veriforge.discovery.env import D3Env, D3EnvError, load_task

    if n < 1:
        raise DiscoveryError("n must be >= 1")
    env_kwargs = dict(env_kwargs or {})
    unusable: dict[str, str] = {}
    tasks = []
    for d in task_dirs:
        try:
            tasks.append(load_task(d))
        except D3EnvError as exc:
            unusable[str(d)] = str(exc)
    sem = asyncio.Semaphore(max(1, int(concurrency)))
    results: dict[tuple[str, int], Trajectory] = {}
    reused = 0
    jobs: list[tuple[Any, int]] = []
    for task in tasks:
        for k in range(n):
            if store is not None and run_id is not None:
                stored = store.get_record(RECORD_NS, _key(run_id, task.instance_id, k))
                if stored is not None:
                    traj = Trajectory.model_validate(stored)
                    if not traj.metadata.get("infrastructure_failure"):
                        results[(task.instance_id, k)] = traj
                        reused += 1
                        continue
            jobs.append((task, k))

    async def one(task: Any, k: int) -> None:
        async with sem:
            env = D3Env(task, **env_kwargs)
            tid = f"{run_id}/{task.instance_id}#{k}" if run_id else f"{task.instance_id}#{k}"
            traj = await agent.run_episode(env, sample=k, trajectory_id=tid)
        if store is not None and run_id is not None:
            await asyncio.to_thread(
                store.put_record,
                RECORD_NS,
                _key(run_id, task.instance_id, k),
                traj.model_dump(mode="json"),
                run_id,
            )
        results[(task.instance_id, k)] = traj
        if on_episode is not None:
            on_episode(traj)

    await asyncio.gather(*(one(t, k) for t, k in jobs))
    order = [(t.instance_id, k) for t in tasks for k in range(n)]
    return [results[o] for o in order if o in results], unusable, reused


@dataclass
class RunSummary:
    """What ``veriforge d3gym run`` prints and writes to ``summary.json``."""

    run_id: str
    out: str
    tasks: int
    n: int
    episodes: int
    verified: int
    reused: int
    unusable_tasks: dict[str, str]
    metrics: dict[str, Any]
    files: dict[str, str]
    wall_s: float
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_tasks(
    tasks_dir: str | Path,
    *,
    out: str | Path,
    model: str | None = None,
    client: Any | None = None,
    agent: str = "baseline",
    n: int = 1,
    concurrency: int = 4,
    max_debug_rounds: int = 3,
    temperature: float | None = None,
    max_tokens: int | None = None,
    seed: int = 0,
    run_id: str | None = None,
    store: Any | None = None,
    settings: Any | None = None,
    python: str | None = None,
    timeout_s: float | None = None,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> RunSummary:
    """Sample ``n`` trajectories per task in ``tasks_dir`` and write the output folder ``out``.

    ``model`` is a model string for :func:`veriforge.llm.create_client` (``settings`` are the LLM
    settings; default: the user's), or pass a ready ``client``. The run store defaults to
    ``out/run.sqlite`` (also the model cache), so re-running the same command resumes; ``run_id``
    defaults to a hash of the config. ``timeout_s`` overrides each task's program time limit.
    """
    from veriforge.discovery.agent import BaselineAgent
    from veriforge.discovery.env import find_tasks
    from veriforge.discovery.metrics import compute_metrics

    t0 = time.perf_counter()
    if agent != "baseline":
        raise DiscoveryError(f"unknown agent {agent!r} (available: baseline)")
    out_dir = Path(out).expanduser().resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    task_dirs = find_tasks(tasks_dir)
    if not task_dirs:
        raise DiscoveryError(f"{tasks_dir}: no task folders (folders with a task.json)")
    own_store = store is None
    if store is None:
        from veriforge.core.store import RunStore

        store = RunStore(out_dir / STORE_FILE)
    own_client = client is None
    try:
        if own_client:
            from veriforge.llm import create_client

            client = create_client(model, settings, store=store)
        bot = BaselineAgent(client, temperature=temperature, max_tokens=max_tokens, seed=seed)
        env_kwargs: dict[str, Any] = {"max_debug_rounds": max_debug_rounds, "python": python}
        if timeout_s is not None:
            from veriforge.sandbox import Limits

            env_kwargs["limits"] = Limits(
                timeout_s=timeout_s, cpu_s=timeout_s * 2, memory_mb=4096, max_procs=256, file_size_mb=1024
            )
        config = {
            **bot.config(),
            "tasks": [p.name for p in task_dirs],
            "tasks_hash": content_hash(*((p / "task.json").read_text(encoding="utf-8") for p in task_dirs)),
            "n": n,
            "max_debug_rounds": max_debug_rounds,
            "timeout_s": timeout_s,
        }
        rid = run_id or f"d3gym-run-{content_hash(canonical_json(config))[:12]}"
        info = store.get_run(rid)
        if info is None or info.unfinished:
            rid = store.start_run(RUN_KIND, config, run_id=rid)

        async def sample() -> tuple[list[Trajectory], dict[str, str], int]:
            try:
                return await sample_trajectories(
                    task_dirs,
                    bot,
                    n=n,
                    concurrency=concurrency,
                    env_kwargs=env_kwargs,
                    store=store,
                    run_id=rid,
                    on_episode=on_episode,
                )
            finally:
                if own_client:  # close the connections in the loop that opened them
                    await _aclose(client)

        try:
            trajs, unusable, reused = (
                asyncio.run(sample()) if _no_running_loop() else _run_in_thread(sample())
            )
        except BaseException:
            run = store.get_run(rid)
            if run is not None and run.unfinished:
                store.finish_run(rid, "failed")
            raise
        verified = rejection_sample(trajs)
        files = {
            "trajectories": str(out_dir / TRAJECTORIES_FILE),
            "verified": str(out_dir / VERIFIED_FILE),
            "summary": str(out_dir / SUMMARY_FILE),
            "store": str(store.path),
        }
        write_jsonl(out_dir / TRAJECTORIES_FILE, trajs)
        write_jsonl(out_dir / VERIFIED_FILE, verified)
        metrics = compute_metrics(trajs).to_dict()
        summary = RunSummary(
            run_id=rid,
            out=str(out_dir),
            tasks=len(task_dirs),
            n=n,
            episodes=len(trajs),
            verified=len(verified),
            reused=reused,
            unusable_tasks=unusable,
            metrics=metrics,
            files=files,
            wall_s=round(time.perf_counter() - t0, 3),
            config=config,
        )
        (out_dir / SUMMARY_FILE).write_text(json.dumps(summary.to_dict(), indent=2) + "\n", encoding="utf-8")
        run = store.get_run(rid)
        if run is not None and run.unfinished:
            complete = len(trajs) == (len(task_dirs) - len(unusable)) * n
            infra = any(t.metadata.get("infrastructure_failure") for t in trajs)
            status = "done" if complete and not infra else "failed"  # "failed" runs can be resumed
            store.finish_run(rid, status, {k: v for k, v in metrics.items() if k != "per_task"})
        return summary
    finally:
        if own_store:
            store.close()


def _no_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


def _run_in_thread(coro: Any) -> Any:
    """``asyncio.run`` from code that already runs inside an event loop (e.g. a notebook)."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def _aclose(client: Any) -> None:
    try:
        await client.aclose()
    except Exception:  # closing a connection pool must not hide the run's result
        pass
