"""A killed ReM-MoA run resumes without asking again for anything that was answered (issue 17 part 2):
agents of an interrupted layer whose traces are stored, verdicts of an interrupted review, and the spend
of the lost attempt, all against an uninterrupted run of the same question as the reference."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from veriforge.core.store import RunStore
from veriforge.llm.backends.scripted import ScriptedBackend
from veriforge.llm.client import LLMClient
from veriforge.moa.config import ReviewerConfig
from veriforge.moa.engine import STATE_SPEND, MoAEngine
from veriforge.moa.memory import NS_PENDING, ReasoningMemory
from veriforge.moa.simulate import AGENT_MODEL, REVIEWER_MODEL, SimWorld, sim_config


def _wired(world: SimWorld, answered: Counter, kill: dict) -> dict:
    """SimWorld clients that count answered requests by (role, prompt) and, where ``kill`` says, hang
    (setting ``kill["hit"]``) until the test cancels the run — the process dying with a call in flight."""

    async def hang() -> None:
        kill["hit"].set()
        await asyncio.sleep(60)

    async def agent(request, index):
        text = request.messages[-1].content
        if kill.get("agent") and kill["agent"](text):
            await hang()
        answered["agent", text, request.seed] += 1
        return world.agent(request, index)

    async def reviewer(request, index):
        text = request.messages[-1].content
        if kill.get("reviews") is not None and sum(n for (role, *_), n in answered.items()
                                                   if role == "reviewer") >= kill["reviews"]:
            await hang()
        answered["reviewer", text, request.seed] += 1
        return world.reviewer(request, index)

    clients = world.clients()
    clients[AGENT_MODEL] = LLMClient(ScriptedBackend(agent, name="agent"), use_cache=False, max_concurrency=64)
    clients[REVIEWER_MODEL] = LLMClient(ScriptedBackend(reviewer, name="rev"), use_cache=False, max_concurrency=1)
    return clients


def _config(budget: str = "all_pairs"):
    return sim_config("rem_moa", 3, 3, reviewer=ReviewerConfig(model=REVIEWER_MODEL, budget=budget, concurrency=1))


async def _reference(world: SimWorld, question: str, budget: str):
    answered: Counter = Counter()
    result = await MoAEngine(_config(budget), clients=_wired(world, answered, {})).run(question)
    return result, answered


@pytest.mark.parametrize("budget", ["all_pairs", "topk"])
@pytest.mark.parametrize("where", ["mid-layer", "mid-review"])
async def test_killed_run_resumes_without_repeating_answered_requests(tmp_path, where, budget):
    world = SimWorld(seed=6, r=0.8)
    question = world.question(3)
    reference, expected = await _reference(world, question, budget)

    answered: Counter = Counter()
    # mid-layer: one layer-1 agent (shown references) dies after its two siblings answered;
    # mid-review: the reviewer dies after 5 answered judgements of the first review
    fired: list[str] = []

    def first_layer1_call(text: str) -> bool:  # layer-1 prompts show layer-0 references
        if "layer 0," in text and not fired:
            fired.append(text)
            return True
        return False

    kill = {"agent": first_layer1_call} if where == "mid-layer" else {"reviews": 5}
    kill["hit"] = asyncio.Event()
    store = RunStore(tmp_path / "runs.sqlite")
    engine = MoAEngine(_config(budget), clients=_wired(world, answered, kill), store=store)
    task = asyncio.create_task(engine.run(question, run_id="q"))
    await kill["hit"].wait()
    await asyncio.sleep(0.05)  # the layer's other agents answer meanwhile
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.get_run("q").status == "failed"
    first = sum(answered.values())
    stored = ReasoningMemory.load(store, "q")
    if where == "mid-layer":
        assert len(stored.layer(1)) == 2  # two agents of the interrupted layer were kept
    else:
        assert len(stored.pending) == 2  # both-orders verdicts: 5 answered judge calls = 2 whole pairs
        assert store.records(NS_PENDING, run_id="q")
    spent_before = store.get_state("q", STATE_SPEND)
    assert spent_before["calls"] == first  # the lost attempt's spend was checkpointed

    kill.pop("agent", None), kill.pop("reviews", None)
    engine = MoAEngine(_config(budget), clients=_wired(world, answered, kill), store=store)
    result = await engine.run(question, run_id="q")
    # nothing answered was asked again: every request was answered exactly as often as uninterrupted
    assert answered == expected
    assert result.answer == reference.answer
    assert [t.model_dump() for t in result.memory.traces] == [t.model_dump() for t in reference.memory.traces]
    assert result.memory.ratings == reference.memory.ratings
    assert result.account["calls"] == reference.account["calls"] == sum(expected.values())
    assert result.account["total_tokens"] == reference.account["total_tokens"]
    assert result.seconds >= spent_before["seconds"]
