"""Baseline agent, trajectory sampling, rejection sampling and resumable runs (scripted and HTTP models)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from veriforge.core.store import RunStore
from veriforge.discovery.agent import BaselineAgent, extract_program
from veriforge.discovery.env import D3Env
from veriforge.discovery.trajectories import RECORD_NS, rejection_sample, run_tasks, sample_trajectories
from veriforge.llm import LLMClient, LLMRequestError, RetryPolicy
from veriforge.llm.backends.scripted import ScriptedBackend

_spec = importlib.util.spec_from_file_location(
    "_d3_task_loader", Path(__file__).with_name("test_env_task.py")
)
_loader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_loader)  # type: ignore[union-attr]
T = _loader.load_helper()


def reply(program: str, note: str = "Here is the program.") -> str:
    return f"{note}\n\n```python\n{program}```\n"


def test_extract_program_prefers_the_last_python_block() -> None:
    text = "plan\n```\nnot code\n```\n```python\nx = 1\n```\nthen\n```python\nx = 2\n```"
    assert extract_program(text) == "x = 2\n"
    assert extract_program("```\nprint(3)\n```") == "print(3)\n"
    assert extract_program("```python\nprint(1)\n") is None  # cut off by max_tokens
    assert extract_program("no code at all") is None


async def test_scripted_model_debugs_a_crash_into_a_verified_trajectory(tmp_path: Path) -> None:
    task = T.make_task(tmp_path)
    script = [reply(T.BUGGY, "First try."), {"text": reply(T.GOOD, "Fixed the column."), "match": "KeyError"}]
    client = LLMClient(ScriptedBackend(script), model="scripted-test")
    traj = await BaselineAgent(client).run_episode(D3Env(task, max_debug_rounds=2), sample=0)
    assert traj.reward == 1.0 and traj.metadata["success"] and traj.metadata["debug_rounds"] == 1
    kinds = [(s.role, s.kind) for s in traj.steps]
    assert kinds == [
        ("system", "prompt"),
        ("user", "observation"),
        ("assistant", "completion"),
        ("user", "feedback"),
        ("assistant", "completion"),
        ("user", "feedback"),
    ]
    assert traj.step_rewards == [0.0, 1.0]
    assert "KeyError: 'val'" in traj.steps[3].content
    assert traj.steps[4].metadata["program"] == T.GOOD.strip("\n") + "\n"
    assert traj.steps[4].candidate is not None
    assert traj.metadata["prompt_tokens"] > 0 and traj.metadata["llm_calls"] == 2
    assert traj.metadata["cost_usd"] is None and traj.metadata["unpriced_calls"] == 2  # no price configured
    assert rejection_sample([traj]) == [traj]


async def test_reply_without_code_costs_a_round_and_is_told_so(tmp_path: Path) -> None:
    task = T.make_task(tmp_path)
    script = ["I would compute the means.", {"text": reply(T.GOOD), "match": "no ```python code block"}]
    client = LLMClient(ScriptedBackend(script), model="scripted-test")
    traj = await BaselineAgent(client).run_episode(D3Env(task, max_debug_rounds=1))
    assert traj.reward == 1.0 and traj.metadata["attempts"] == 2 and traj.metadata["programs_run"] == 1
    assert traj.steps[3].metadata["no_program"] is True


def _by_seed(request, index):
    """Even episodes (seed) solve the task, odd ones keep writing wrong numbers."""
    return reply(T.GOOD if request.seed % 2 == 0 else T.WRONG)


async def test_sampling_n_per_task_concurrently_and_rejection_sampling(tmp_path: Path) -> None:
    tasks = [T.make_task(tmp_path, "task_a"), T.make_task(tmp_path, "task_b")]
    client = LLMClient(ScriptedBackend(_by_seed), model="scripted-test")
    store = RunStore(tmp_path / "run.sqlite")
    run_id = store.start_run("d3gym.run", {"test": 1})
    trajs, unusable, reused = await sample_trajectories(
        tasks,
        BaselineAgent(client),
        n=3,
        concurrency=3,
        env_kwargs={"max_debug_rounds": 1},
        store=store,
        run_id=run_id,
    )
    assert unusable == {} and reused == 0 and len(trajs) == 6
    assert [(t.task_id, t.metadata["sample"]) for t in trajs] == [
        ("task_a", 0),
        ("task_a", 1),
        ("task_a", 2),
        ("task_b", 0),
        ("task_b", 1),
        ("task_b", 2),
    ]
    assert [t.reward for t in trajs] == [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    failed = [t for t in trajs if t.reward == 0.0]
    assert all(t.metadata["valid_execution"] and t.metadata["attempts"] == 2 for t in failed)
    verified = rejection_sample(trajs)
    assert len(verified) == 4 and all(t.reward == 1.0 for t in verified)
    assert len(store.records(RECORD_NS, run_id=run_id)) == 6  # every episode stored as it ended

    def explode(request, index):
        raise AssertionError("a resumed run must not call the model again")

    again, _, reused = await sample_trajectories(
        tasks,
        BaselineAgent(LLMClient(ScriptedBackend(explode))),
        n=3,
        store=store,
        run_id=run_id,
        env_kwargs={"max_debug_rounds": 1},
    )
    assert reused == 6 and [t.reward for t in again] == [t.reward for t in trajs]
    store.close()


async def test_model_failure_is_infrastructure_and_retried_on_resume(tmp_path: Path) -> None:
    task = T.make_task(tmp_path)

    def down(request, index):
        raise LLMRequestError("server down", kind="connection")

    store = RunStore(tmp_path / "run.sqlite")
    rid = store.start_run("d3gym.run", {})
    client = LLMClient(ScriptedBackend(down), model="down", retry=RetryPolicy(max_retries=0))
    trajs, _, _ = await sample_trajectories([task], BaselineAgent(client), n=1, store=store, run_id=rid)
    assert (
        trajs[0].metadata["infrastructure_failure"] and "server down" in trajs[0].metadata["failure_reason"]
    )
    assert rejection_sample(trajs) == []
    good = LLMClient(ScriptedBackend([reply(T.GOOD)]), model="up")
    trajs, _, reused = await sample_trajectories([task], BaselineAgent(good), n=1, store=store, run_id=rid)
    assert reused == 0 and trajs[0].reward == 1.0
    store.close()


def test_run_tasks_over_real_http_writes_a_resumable_run_folder(tmp_path: Path) -> None:
    from veriforge.llm.testing import FakeOpenAIServer

    tasks_dir = tmp_path / "tasks"
    T.make_task(tasks_dir, "task_a")
    tb = T.make_task(tasks_dir, "task_b")
    data = json.loads((tb / "task.json").read_text())
    data["task_inst"] += " Use all rows."  # a different prompt (identical prompts share cached samples)
    (tb / "task.json").write_text(json.dumps(data))
    T.make_task(tasks_dir / ".rejected", "task_c")

    def answer(body, index):
        last = body["messages"][-1]["content"]
        return reply(T.GOOD if "KeyError" in last else T.BUGGY)

    out = tmp_path / "traj"
    with FakeOpenAIServer(answer) as server:
        model = f"fake-model@{server.base_url}"
        summary = run_tasks(tasks_dir, out=out, model=model, n=2, concurrency=2, max_debug_rounds=2)
        calls = len(server.chat_requests)
        assert summary.tasks == 2 and summary.episodes == 4 and summary.verified == 4
        assert calls == 8  # 4 episodes x (buggy + fixed), distinct seeds so nothing collapsed in the cache
        bodies = [r.body for r in server.chat_requests]
        assert {b["seed"] for b in bodies} == {0, 1}
        m = summary.metrics
        assert m["valid_execution_rate"] == 1.0 and m["success_rate"] == 1.0 and m["mean_attempts"] == 2.0
        lines = (out / "trajectories.jsonl").read_text().splitlines()
        assert len(lines) == 4 and len((out / "verified.jsonl").read_text().splitlines()) == 4
        saved = json.loads((out / "summary.json").read_text())
        assert saved["run_id"] == summary.run_id and saved["metrics"]["successes"] == 4
        again = run_tasks(tasks_dir, out=out, model=model, n=2, concurrency=2, max_debug_rounds=2)
        assert again.run_id == summary.run_id and again.reused == 4
        assert len(server.chat_requests) == calls  # resumed from the store: no new model calls


def test_run_tasks_refuses_unknown_agents_and_empty_folders(tmp_path: Path) -> None:
    from veriforge.discovery.errors import DiscoveryError

    with pytest.raises(DiscoveryError, match="unknown agent"):
        run_tasks(tmp_path, out=tmp_path / "o", agent="fancy", client=object())
    (tmp_path / "empty").mkdir()
    with pytest.raises(DiscoveryError, match="no task folders"):
        run_tasks(tmp_path / "empty", out=tmp_path / "o", client=object())
