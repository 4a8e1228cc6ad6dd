"""Baselines in the same engine: self-consistency, single, vanilla MoA, Self-MoA; ReM-MoA's final policies."""

from __future__ import annotations

from veriforge.llm.backends.scripted import ScriptedBackend
from veriforge.llm.client import LLMClient
from veriforge.moa.config import FINAL_POLICIES, MoAConfig
from veriforge.moa.engine import MoAEngine, majority_vote
from veriforge.moa.simulate import SimWorld, sim_config


class Recorder:
    """A scripted model that records every request and answers from a list (sample i -> replies[i % n])."""

    def __init__(self, replies):
        self.replies = replies
        self.requests = []

    def __call__(self, request, index):
        self.requests.append(request)
        return self.replies[index % len(self.replies)]

    def client(self):
        return LLMClient(ScriptedBackend(self, name="rec"), model="rec", use_cache=False)


def test_majority_vote_rules():
    assert majority_vote(["3", None, "5", "5", "3"]) == "3"  # tie: the answer seen first
    assert majority_vote(["1", "2", "2"]) == "2"
    assert majority_vote([None, None]) is None


async def test_self_consistency_takes_the_majority_of_extracted_answers():
    model = Recorder(["so it is 12.\nAnswer: 12", "Answer: 15", "I get 15", "no idea", "Answer: 12.0", "Answer: 15"])
    cfg = MoAConfig(method="self_consistency", depth=2, width=3, proposers=[{"model": "rec"}])
    result = await MoAEngine(cfg, clients={"rec": model.client()}).run("Q?")
    assert result.answer == "15" and result.parsed
    # one request for six distinct samples (the scripted callable is invoked once per sample index)
    assert len({id(r) for r in model.requests}) == 1 and model.requests[0].n == 6
    assert result.account["calls"] == 1
    assert [t.answer for t in result.memory.proposals()] == ["12", "15", "15", "no idea", "12", "15"]
    assert "15" in result.text


async def test_single_model_is_one_call():
    model = Recorder(["Answer: 7"])
    result = await MoAEngine(MoAConfig(method="single", width=4, depth=3, proposers=[{"model": "rec"}]),
                             clients={"rec": model.client()}).run("Q?")
    assert result.answer == "7" and len(model.requests) == 1 and model.requests[0].n == 1
    assert result.account["calls"] == 1


async def test_vanilla_moa_shows_only_the_previous_layer():
    model = Recorder(["Thoughts.\nAnswer: 1", "Other thoughts.\nAnswer: 2"])
    cfg = MoAConfig(method="moa", depth=3, width=2, proposers=[{"model": "rec"}])
    result = await MoAEngine(cfg, clients={"rec": model.client()}).run("Q?")
    proposals = result.memory.proposals()
    assert [t.layer for t in proposals] == [0, 0, 1, 1, 2, 2]
    for t in proposals:
        if t.layer > 0:
            assert {result.memory[r.id].layer for r in t.references} == {t.layer - 1}
            assert all(r.label == "previous" for r in t.references)
            assert "synthesize these responses" in t.prompt and "[RESPONSE]" in t.prompt
    final = result.memory["final"]
    assert {result.memory[r.id].layer for r in final.references} == {2} and final.role == "aggregator"
    assert result.ranking == []  # no reviewer in vanilla MoA


async def test_self_moa_samples_one_model_many_times():
    world = SimWorld(seed=1)
    clients = world.clients()
    cfg = sim_config("self_moa", 2, 4)
    result = await MoAEngine(cfg, clients=clients).run(world.question(5))
    assert [t.agent for t in result.memory.proposals()] == ["sim"] * 8
    assert clients["sim-agent"].totals.calls == 2 and clients["sim-agent"].totals.samples == 8
    assert len({t.reasoning for t in result.memory.layer(0)}) > 1  # samples are not collapsed


async def test_rem_moa_final_policies():
    world = SimWorld(seed=8, r=1.0)
    question = world.question(6)
    top = await MoAEngine(sim_config("rem_moa", 2, 3, final={"policy": "top"}), clients=world.clients()).run(question)
    assert top.final_refs == [top.ranking[0].id] and top.answer == top.ranking[0].answer
    vote = await MoAEngine(sim_config("rem_moa", 2, 3, final={"policy": "vote", "k": 3}),
                           clients=world.clients()).run(question)
    assert vote.answer == majority_vote([r.answer for r in vote.ranking[:3]])
    agg = await MoAEngine(sim_config("rem_moa", 2, 3, final={"policy": "aggregate", "k": 2}),
                          clients=world.clients()).run(question)
    final = agg.memory["final"]
    assert [r.id for r in final.references] == [r.id for r in agg.ranking[:2]]
    assert "[STRONG] (reviewer rank 1" in final.prompt
    assert agg.policy_answers["aggregate"] == agg.answer and set(agg.policy_answers) == set(FINAL_POLICIES)
    # the free policies make no request: without evaluate_all there is no aggregator call at all
    assert "aggregator" not in top.account["roles"] and "final" not in top.memory
    assert set(top.policy_answers) == {"top", "vote", "weighted_vote"}


def test_weighted_vote_lets_agreeing_runners_up_outvote_the_top_trace():
    assert majority_vote(["a", "b", "b"], [1.0, 0.5, 1 / 3]) == "a"  # ranks 2 and 3 (0.83) do not outvote rank 1
    assert majority_vote(["a", "b"], [1.0, 0.5]) == "a"
    assert majority_vote(["a", "b", "b", "b"], [1.0, 0.5, 1 / 3, 0.25]) == "b"
    assert majority_vote([None, "x", "y"], [1.0, 0.5, 1 / 3]) == "x"
    assert majority_vote([None, None]) is None


async def test_weighted_vote_is_the_default_and_evaluate_all_reports_every_policy():
    world = SimWorld(seed=4, r=0.8)
    question = world.question(2)
    cfg = sim_config("rem_moa", 2, 3)
    assert cfg.final.policy == "weighted_vote"
    plain = await MoAEngine(cfg, clients=world.clients()).run(question)
    assert plain.answer == plain.policy_answers["weighted_vote"] and "aggregator" not in plain.account["roles"]
    ranked = [r.answer for r in plain.ranking[: cfg.final.k]]
    assert plain.answer == majority_vote(ranked, [1 / r for r in range(1, len(ranked) + 1)])
    every = await MoAEngine(sim_config("rem_moa", 2, 3, final={"evaluate_all": True}),
                            clients=world.clients()).run(question)
    assert set(every.policy_answers) == set(FINAL_POLICIES) and every.account["roles"]["aggregator"]["calls"] == 1
    assert every.answer == every.policy_answers["weighted_vote"]  # the aggregator ran, but did not answer
    assert every.policy_texts["aggregate"] == every.memory["final"].reasoning
