"""Inference-time refinement: real HTTP between our LLM client and a local OpenAI-compatible server,
real evaluations on the CPU back-end, the run store, resume and the HTML report."""

from __future__ import annotations

import json

import pytest

from veriforge.core.store import RunStore
from veriforge.cuda.tasks.load import find_task
from veriforge.cudaperf.refine import RUN_KIND, RefineError, ReplayPolicy, refine_task
from veriforge.cudaperf.report import SECTIONS

TASK = "c2cuda/sum_reduce"
IMPLS = find_task(TASK) / "impls"
GOOD = (IMPLS / "warp_shuffle.cu").read_text()
SLOW = (IMPLS / "shared_tree.cu").read_text()
WRONG = GOOD.replace("+=", "-=", 1)


def _answer(code: str) -> str:
    return f"PLAN: one pass.\n```cuda\n{code}```\n"


def test_refine_over_http_wrong_then_right(tmp_path):
    from veriforge.llm.factory import create_client
    from veriforge.llm.testing import FakeOpenAIServer

    def replies(body, i):  # answers by how far the conversation is: wrong, then slow, then fast
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant") + 1
        return _answer({1: WRONG, 2: SLOW}.get(turn, GOOD))

    store = RunStore(tmp_path / "runs.sqlite")
    with FakeOpenAIServer(replies=replies, models=["fake-model"]) as server:
        client = create_client(f"fake-model@{server.base_url}")
        out = refine_task(TASK, client, turns=3, store=store, out_dir=tmp_path / "out")
        bodies = [r.body for r in server.chat_requests]
    assert [a.outcome for a in out.attempts] == ["wrong", "correct", "correct"]
    r = out.rewards
    assert r[0] < 0 < r[1] < r[2]  # wrong < slow < fast
    assert out.best.turn == 3 and out.best.speedup > out.attempts[1].speedup > 1
    # The feedback of turn t is in the request of turn t+1, over the wire.
    assert len(bodies) == 3
    for t in (1, 2):
        sent = bodies[t]["messages"]
        assert sent[-1] == {"role": "user", "content": out.attempts[t - 1].feedback}
        assert sent[-2]["role"] == "assistant" and sent[-2]["content"] == out.attempts[t - 1].completion
    assert "wrong on config" in bodies[1]["messages"][-1]["content"]
    assert "estimated by the cost model" in bodies[2]["messages"][-1]["content"]
    # Every attempt is in the run store, the run is done, the report is written.
    run = store.get_run(out.run_id)
    assert run.kind == RUN_KIND and run.status == "done"
    recorded = [e.payload for e in store.events(out.run_id, "attempt")]
    assert [(a["turn"], a["outcome"], a["reward"]) for a in recorded] == [(a.turn, a.outcome, a.reward)
                                                                          for a in out.attempts]
    assert recorded[2]["speedup"] == pytest.approx(out.best.speedup) and recorded[2]["provenance"] == "estimated"
    assert recorded[0]["feedback"] == out.attempts[0].feedback and recorded[0]["source"] == WRONG
    html = out.report.read_text()
    assert out.report.parent == tmp_path / "out" / out.run_id
    for section in SECTIONS:
        assert f"id='{section}'" in html
    assert "<svg" in html and "Diff against turn 2" in html and "+=" in html
    assert (out.report.parent / "best.cu").read_text() == GOOD
    assert len((out.report.parent / "attempts.jsonl").read_text().splitlines()) == 3
    # The trajectory (what RL/export consume) carries per-step rewards.
    assert out.trajectory.step_rewards == r


def test_resume_after_interruption_does_not_ask_again(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    answers = [_answer(WRONG), _answer(SLOW), _answer(GOOD)]
    asked: list[int] = []

    def flaky(messages):
        turn = sum(1 for m in messages if m["role"] == "assistant") + 1
        asked.append(turn)
        if turn == 3 and len(asked) == 3:
            raise KeyboardInterrupt  # the first run dies asking for turn 3
        return answers[turn - 1]

    with pytest.raises(KeyboardInterrupt):
        refine_task(TASK, flaky, turns=3, store=store, out_dir=tmp_path)
    (run,) = store.list_runs(kind=RUN_KIND)
    assert run.status == "failed" and asked == [1, 2, 3]
    assert len(store.events(run.id, "attempt")) == 2

    seen: list[list[dict]] = []

    def resumed_policy(messages):
        seen.append(messages)
        return flaky(messages)

    out = refine_task(TASK, resumed_policy, turns=3, store=store, out_dir=tmp_path, run_id=run.id)
    assert asked == [1, 2, 3, 3]  # only turn 3 was asked again
    assert [a.replayed for a in out.attempts] == [True, True, False]
    assert [a.outcome for a in out.attempts] == ["wrong", "correct", "correct"]
    # The resumed request carries the recorded conversation, including turn 2's feedback.
    assert seen[0][-1]["content"] == out.attempts[1].feedback
    assert store.get_run(run.id).status == "done" and store.get_run(run.id).resumes == 1
    assert out.best.turn == 3


def test_answer_recorded_before_evaluation_is_not_asked_again(tmp_path, monkeypatch):
    import veriforge.cudaperf.refine as refine_mod

    store = RunStore(tmp_path / "runs.sqlite")
    policy = ReplayPolicy([_answer(WRONG), _answer(GOOD)])
    real = refine_mod._evaluate_attempt

    def dies_on_turn_2(spec, completion, **kw):
        if kw["turn"] == 2:
            raise RuntimeError("evaluation farm went away")
        return real(spec, completion, **kw)

    monkeypatch.setattr(refine_mod, "_evaluate_attempt", dies_on_turn_2)
    with pytest.raises(RuntimeError):
        refine_task(TASK, policy, turns=2, store=store, report=False)
    monkeypatch.setattr(refine_mod, "_evaluate_attempt", real)
    (run,) = store.list_runs(kind=RUN_KIND)
    assert [e.payload["turn"] for e in store.events(run.id, "completion")] == [1, 2]
    calls_before = len(policy.calls)
    out = refine_task(TASK, policy, turns=2, store=store, report=False, run_id=run.id)
    assert len(policy.calls) == calls_before  # turn 2's answer came from the store
    assert [a.outcome for a in out.attempts] == ["wrong", "correct"]


def test_repeated_code_is_not_evaluated_again_and_errors_are_clear(tmp_path):
    policy = ReplayPolicy([_answer(GOOD), _answer(GOOD)])
    out = refine_task(TASK, policy, turns=2, baseline=None, report=False)
    assert out.attempts[1].repeat_of == 1 and out.attempts[1].reward == out.attempts[0].reward
    assert "same code as attempt 1" in out.attempts[1].feedback
    assert out.best.turn == 1  # ties go to the earlier turn
    assert "speed" in out.attempts[0].terms and out.attempts[0].terms["speed"] == 0  # no baseline: not scored
    with pytest.raises(RefineError, match="at least one turn"):
        refine_task(TASK, policy, turns=0)
    with pytest.raises(RefineError, match="run store"):
        refine_task(TASK, policy, run_id="x")
    with pytest.raises(RefineError, match="unknown reward preset"):
        refine_task(TASK, policy, config="nope")


def test_replay_policy_from_jsonl_follows_the_conversation(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text("# recorded\n" + json.dumps({"text": "one"}) + "\n\n" + json.dumps("two") + "\n")
    p = ReplayPolicy.from_jsonl(path)
    assert p([{"role": "user", "content": "x"}]) == "one"
    assert p([{"role": "user", "content": "x"}, {"role": "assistant", "content": "one"},
              {"role": "user", "content": "fb"}]) == "two"
    path.write_text("{not json\n")
    with pytest.raises(RefineError, match=r"a\.jsonl:1"):
        ReplayPolicy.from_jsonl(path)
