"""The engine: persistence and resume, reviewer position bias, concurrency, determinism, accounting."""

from __future__ import annotations

import asyncio

import pytest

from veriforge.core.store import RunStore
from veriforge.llm.backends.scripted import ScriptedBackend
from veriforge.llm.client import LLMClient
from veriforge.llm.errors import LLMRequestError
from veriforge.moa.config import MoAConfig, ReviewerConfig
from veriforge.moa.engine import MoAEngine
from veriforge.moa.errors import MoAConfigError
from veriforge.moa.memory import NS_TRACE, ReasoningMemory
from veriforge.moa.simulate import AGENT_MODEL, REVIEWER_MODEL, SimWorld, sim_config


def _verifier(world: SimWorld):
    return lambda question, answer: world.correct(question, answer)


async def test_memory_persists_and_reloads_after_restart(tmp_path):
    world = SimWorld(seed=3)
    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    engine = MoAEngine(sim_config("rem_moa", 3, 3, final={"policy": "aggregate"}), clients=world.clients(),
                       store=store, verifier=_verifier(world))
    result = await engine.run(world.question(1), run_id="q1")
    store.close()

    reopened = RunStore(path)  # a new process would do exactly this
    memory = ReasoningMemory.load(reopened, "q1")
    original = result.memory
    assert len(memory) == len(original) == 3 * 3 + 1  # 9 proposals + the final aggregation
    for a, b in zip(original.traces, memory.traces, strict=True):
        assert a.model_dump() == b.model_dump()
    assert [t.layer for t in memory.proposals()] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert memory.outcomes == original.outcomes and len(memory.outcomes) > 0
    assert memory.ratings == original.ratings and memory.ranking() == original.ranking()
    # verifier facts and reviewer opinions live in separate fields and are both kept
    assert all(t.verified == world.correct(world.question(1), t.answer) for t in memory.proposals())
    assert all(o.source == "reviewer" for o in memory.outcomes) and memory.ratings.source == "reviewer"
    assert [r.model_dump() for r in memory.ranked()] == [r.model_dump() for r in result.ranking]
    assert reopened.get_run("q1").status == "done"
    assert len(reopened.records(NS_TRACE, run_id="q1")) == 10


async def test_interrupted_run_resumes_after_its_stored_layers(tmp_path):
    world = SimWorld(seed=5)
    state = {"fail": True}
    calls = []

    def flaky_agent(request, index):
        text = "\n".join(m.content for m in request.messages)
        calls.append(text)
        if state["fail"] and "layer 1," in text:  # layer 2 shows layer-1 references: crash there
            raise LLMRequestError("server died", retryable=False, kind="test")
        return world.agent(request, index)

    clients = world.clients()
    clients[AGENT_MODEL] = LLMClient(ScriptedBackend(flaky_agent, name="flaky"), use_cache=False)
    store = RunStore(tmp_path / "runs.sqlite")
    engine = MoAEngine(sim_config("rem_moa", 4, 3), clients=clients, store=store)
    with pytest.raises(LLMRequestError):
        await engine.run(world.question(2), run_id="q2")
    assert store.get_run("q2").status == "failed"
    assert ReasoningMemory.load(store, "q2").layers_done == 2

    state["fail"] = False
    before = len(calls)
    result = await MoAEngine(sim_config("rem_moa", 4, 3), clients=clients, store=store).run(
        world.question(2), run_id="q2")
    assert result.resumed_layers == 2
    assert len(calls) - before == 2 * 3  # only layers 2 and 3 were asked again
    assert [t.layer for t in result.memory.proposals()].count(0) == 3
    assert store.get_run("q2").resumes == 1 and store.get_run("q2").status == "done"


async def test_position_bias_cancels_in_the_engine():
    """A reviewer that always says [[A]] yields only ties in both-order mode (flat ratings); asked in one
    order only, the same bias fabricates a ranking."""
    biased = SimWorld(seed=7, position_bias=1.0)
    result = await MoAEngine(sim_config("rem_moa", 2, 3), clients=biased.clients()).run(biased.question(0))
    memory = result.memory
    judged = [o for o in memory.outcomes if not o.meta.get("skipped")]  # equal answers are ties unasked
    assert judged and all(o.winner == "tie" and o.consistent is False for o in judged)
    assert all(o.winner == "tie" for o in memory.outcomes)
    assert len(set(memory.ratings.scores.values())) == 1
    assert sum(s.inconsistent for s in result.layers) == len(judged) == sum(
        s.comparisons - s.skipped_comparisons for s in result.layers) > 0

    one_order = sim_config("rem_moa", 2, 3, reviewer=ReviewerConfig(model=REVIEWER_MODEL, both_orders=False))
    fooled = await MoAEngine(one_order, clients=biased.clients()).run(biased.question(0))
    assert any(o.winner != "tie" for o in fooled.memory.outcomes)
    assert len(set(fooled.memory.ratings.scores.values())) > 1


async def test_fair_reviewer_ranks_correct_traces_first():
    world = SimWorld(seed=11, r=1.0, p=0.4)
    result = await MoAEngine(sim_config("rem_moa", 3, 3, reviewer=ReviewerConfig(model=REVIEWER_MODEL,
                                                                                 budget="all_pairs")),
                             clients=world.clients()).run(world.question(4))
    ranked = result.ranking
    flags = [world.correct(world.question(4), r.answer) for r in ranked]
    assert any(flags) and not all(flags)
    assert flags == sorted(flags, reverse=True)  # every correct trace above every wrong one
    assert all(r.verified is None for r in ranked)  # no verifier given: no verifier signal invented


async def test_layer_calls_are_concurrent_and_runs_are_deterministic():
    world = SimWorld(seed=2)
    live = {"now": 0, "max": 0}

    async def slow_agent(request, index):
        live["now"] += 1
        live["max"] = max(live["max"], live["now"])
        await asyncio.sleep(0.02)
        live["now"] -= 1
        return world.agent(request, index)

    async def run_once():
        clients = world.clients()
        clients[AGENT_MODEL] = LLMClient(ScriptedBackend(slow_agent, name="slow"), use_cache=False)
        return await MoAEngine(sim_config("rem_moa", 2, 4), clients=clients).run(world.question(9))

    first, second = await run_once(), await run_once()
    assert live["max"] == 4
    assert [t.model_dump() for t in first.memory.traces] == [t.model_dump() for t in second.memory.traces]
    assert first.answer == second.answer and first.account == second.account


async def test_accounting_matches_the_clients_totals():
    world = SimWorld(seed=4)
    clients = world.clients()
    result = await MoAEngine(sim_config("rem_moa", 2, 3), clients=clients).run(world.question(3))
    totals = {name: c.totals for name, c in clients.items()}
    roles = result.account["roles"]
    assert roles["proposers"]["total_tokens"] == totals[AGENT_MODEL].total_tokens > 0
    assert roles["reviewer"]["calls"] == totals[REVIEWER_MODEL].calls > 0
    assert result.account["total_tokens"] == sum(t.total_tokens for t in totals.values())
    assert result.account["cost_usd"] is None  # no prices configured: unknown, not zero


async def test_priced_run_reports_cost():
    backend = ScriptedBackend(["Thinking.\nAnswer: 4"], name="m")
    client = LLMClient(backend, model="m", prices={"m": {"input": 1.0, "output": 2.0}})
    cfg = MoAConfig(method="single", proposers=[{"model": "m"}])
    result = await MoAEngine(cfg, clients={"m": client}).run("2+2?")
    usage = result.account["roles"]["proposers"]
    expected = (usage["prompt_tokens"] * 1.0 + usage["completion_tokens"] * 2.0) / 1e6
    assert result.answer == "4" and result.account["cost_usd"] == pytest.approx(expected)


def test_missing_model_is_a_clear_config_error():
    with pytest.raises(MoAConfigError, match=r"no model.*\[\[proposers\]\]"):
        MoAEngine(MoAConfig())
    MoAEngine(MoAConfig(), default_model="scripted:whatever.jsonl")  # a default fills every role
