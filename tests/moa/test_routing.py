"""Curated Diversified Memory Routing: distinct reference sets, labelled failures, budgets by selection."""

from __future__ import annotations

import itertools

from veriforge.moa.config import RoutingConfig
from veriforge.moa.memory import ReasoningMemory, Trace
from veriforge.moa.prompts import proposer_messages
from veriforge.moa.routing import previous_layer_route, reference_diversity, route_layer
from veriforge.moa.tokens import estimate_tokens
from veriforge.rank.ratings import Ratings

ANSWERS = ["7", "7", "9", "7", "9", "4", "5", "7", "3", "2", "9", "6"]


def _memory(words: int = 20) -> ReasoningMemory:
    """12 traces over two layers; the reviewer's scores fall with the trace number."""
    memory = ReasoningMemory("r1")
    traces = [Trace(id=f"t{k:02d}", layer=k // 6, agent=f"a{k % 6}", model="m", prompt="p",
                    reasoning=" ".join(["step"] * words) + f" trace {k}\nAnswer: {a}", answer=a, parsed=True)
              for k, a in enumerate(ANSWERS)]
    memory.add(traces)
    scores = {t.id: 3.0 - 0.5 * k for k, t in enumerate(traces)}
    memory.add_review([], Ratings(method="bradley_terry", source="reviewer", scores=scores))
    return memory


def test_each_agent_gets_a_different_reference_set():
    memory = _memory()
    cfg = RoutingConfig(top_m=2, failed_f=1, max_reference_tokens=None)
    routes = route_layer(memory, ["x", "y", "z"], cfg, layer=2)
    sets = [frozenset(r.ids) for r in routes]
    assert len(set(sets)) == 3, sets
    for r in routes:
        good = [ref for ref in r.refs if ref.label == "good"]
        failed = [ref for ref in r.refs if ref.label == "failed"]
        assert len(good) == 2 and len(failed) == 1
        # good references come from the top half, failed from the bottom third, by reviewer rank
        assert all(ref.rank <= 6 for ref in good) and all(ref.rank >= 9 for ref in failed)
        # distinct answers first: an agent's two strong references disagree
        assert len({memory[ref.id].answer for ref in good}) == 2
    assert reference_diversity(routes, memory)["jaccard_distance"] > 0.5


def test_no_diversity_ablation_gives_everyone_the_same_set():
    memory = _memory()
    routes = route_layer(memory, ["x", "y", "z"], RoutingConfig(diversity="none", max_reference_tokens=None), 2)
    assert len({frozenset(r.ids) for r in routes}) == 1
    assert reference_diversity(routes)["jaccard_distance"] == 0.0
    moa = previous_layer_route(memory, ["x", "y"], 2, None)
    assert moa[0].ids == [f"t{k:02d}" for k in range(6, 12)] and moa[0].ids == moa[1].ids


def test_failed_traces_are_labelled_in_the_prompt():
    memory = _memory()
    route = route_layer(memory, ["x"], RoutingConfig(max_reference_tokens=None), 2)[0]
    failed = next(ref for ref in route.refs if ref.label == "failed")
    text = proposer_messages("Q?", "Answer it.", None, route.refs, memory)[-1].content
    assert "[FAILED] (ranked low by the reviewer" in text and text.count("[STRONG]") == 2
    block = text[text.index("[FAILED]"):]
    assert memory[failed.id].reasoning.strip() in block  # the failed trace is shown whole, under its label


def test_ties_are_not_failures_and_verifier_failures_are_labelled_as_such():
    memory = _memory()
    memory.ratings = memory.ratings.model_copy(update={"scores": dict.fromkeys(memory.ratings.scores, 0.0)})
    route = route_layer(memory, ["x"], RoutingConfig(max_reference_tokens=None), 2)[0]
    assert [ref.label for ref in route.refs] == ["good", "good"]  # equal ratings: nobody "failed"
    memory.update(memory["t03"].model_copy(update={"verified": False}))
    route = route_layer(memory, ["x"], RoutingConfig(max_reference_tokens=None, use_verifier=True), 2)[0]
    failed = [ref for ref in route.refs if ref.label == "failed"]
    assert [(ref.id, ref.label_source) for ref in failed] == [("t03", "verifier")]
    text = proposer_messages("Q?", "", None, route.refs, memory)[-1].content
    assert "[FAILED] (failed verification" in text


def test_context_budget_is_enforced_by_dropping_whole_traces():
    memory = _memory(words=20)
    memory.update(memory["t01"].model_copy(update={"reasoning": "long " * 400 + "\nAnswer: 7"}))
    big = estimate_tokens(memory["t01"].reasoning)
    small = estimate_tokens(memory["t00"].reasoning)
    budget = 3 * small + 5
    assert big > budget
    routes = route_layer(memory, ["x", "y", "z", "w"], RoutingConfig(top_m=2, failed_f=1,
                                                                      max_reference_tokens=budget), 2)
    for r in routes:
        assert r.tokens <= budget
        assert all(ref.tokens == estimate_tokens(memory[ref.id].reasoning) for ref in r.refs)
    dropped = [d for r in routes for d in r.dropped]
    assert dropped and all(d.id == "t01" and d.tokens == big and "exceed the reference budget" in d.reason
                           for d in dropped)
    # vanilla MoA under the same budget: whole traces only, the drop recorded
    memory.update(memory["t07"].model_copy(update={"reasoning": "long " * 400}))
    moa = previous_layer_route(memory, ["x"], 2, budget)[0]
    assert "t07" in [d.id for d in moa.dropped] and moa.tokens <= budget
    text = proposer_messages("Q?", "", None, moa.refs, memory, style="moa")[0].content
    for ref in moa.refs:
        assert memory[ref.id].reasoning.strip() in text


def test_layer_window_limits_references_to_recent_layers():
    memory = _memory()
    routes = route_layer(memory, ["x", "y"], RoutingConfig(max_layer_age=1, max_reference_tokens=None), 2)
    assert all(memory[i].layer == 1 for r in routes for i in r.ids)
    assert all(a != b for a, b in itertools.combinations([frozenset(r.ids) for r in routes], 2))
