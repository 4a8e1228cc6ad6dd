"""Multi-turn rollouts on a scripted policy: Kevin's discounted returns, feedback masked out of the
loss, the real harness's feedback in the next turn's context, per-turn GRPO advantages."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from veriforge.cuda.evaluate.harness import resolve_task
from veriforge.cudaperf.feedback import feedback_message, task_prompt
from veriforge.cudaperf.rollout import (
    MultiTurnRollout,
    RolloutError,
    discounted_returns,
    per_turn_advantages,
    prompt_key,
    return_reward,
)
from veriforge.cudaperf.train import TINY_CHAT_TEMPLATE, EvaluationFarm, evaluate_attempt, evaluate_baseline

GARBAGE = "I am not sure. float x = 1;"
TASK = "c2cuda/vector_add"


def test_discounted_returns_are_kevins() -> None:
    got = discounted_returns([1.0, 0.0, 2.0], 0.4)
    assert got == pytest.approx([1.0 + 0.4 * (0.0 + 0.4 * 2.0), 0.0 + 0.4 * 2.0, 2.0])
    assert discounted_returns([1.0, 0.0, 2.0], 0.0) == [1.0, 0.0, 2.0]
    assert discounted_returns([1.0, 0.0, 2.0], 1.0) == [3.0, 2.0, 2.0]
    assert discounted_returns([], 0.4) == []
    with pytest.raises(RolloutError, match="gamma"):
        discounted_returns([1.0], 1.5)


def test_per_turn_advantages_normalise_each_turn_within_its_group() -> None:
    returns = [[1.0, 0.0], [3.0, 0.0], [5.0, 2.0], [5.0, 4.0]]  # two groups of two
    adv = per_turn_advantages(returns, 2)
    s = math.sqrt(2.0)  # unbiased std of {1, 3} and of {2, 4}
    assert adv[0] == pytest.approx([-1 / (s + 1e-4), 0.0])
    assert adv[1] == pytest.approx([1 / (s + 1e-4), 0.0])
    assert adv[2] == pytest.approx([0.0, -1 / (s + 1e-4)])  # equal first turns: no signal
    assert per_turn_advantages(returns, 2, scale="none")[3] == pytest.approx([0.0, 1.0])
    with pytest.raises(RolloutError, match="groups"):
        per_turn_advantages(returns, 3)


def test_return_reward_is_the_first_turns_return_and_logs_per_turn() -> None:
    logged: dict[str, float] = {}
    out = return_reward(["p", "p"], ["c", "c"], turn_returns=[[0.5, 1.0], [-1.0, -0.5]],
                        turn_rewards=[[0.1, 1.0], [-0.8, -0.5]], turn_correct=[[False, True], [False, False]],
                        log_metric=lambda k, v: logged.__setitem__(k, v))
    assert out == [0.5, -1.0]
    assert logged["turn_1/reward"] == pytest.approx(-0.35) and logged["turn_2/correct_rate"] == 0.5
    assert logged["correct_rate"] == 0.25 and logged["any_turn_correct_rate"] == 0.5
    with pytest.raises(RolloutError):
        return_reward(["p"], ["c"])


@pytest.fixture(scope="module")
def tokenizer():
    from veriforge.llm.testing import tiny_tokenizer

    spec = resolve_task(TASK)
    texts = [m["content"] for m in task_prompt(spec)] + [(spec.folder / i.file).read_text()
                                                          for i in spec.implementations]
    tok = tiny_tokenizer(texts, vocab_size=500, full_byte_alphabet=True)
    tok.chat_template = TINY_CHAT_TEMPLATE
    return tok


@pytest.fixture(scope="module")
def naive_kernel() -> str:
    spec = resolve_task(TASK)
    return "Plan: one thread per element.\n```cuda\n" + (Path(spec.folder) / "impls" / "naive.cu").read_text() + "```"


class Scripted:
    """A policy that answers turn t of rollout i with ``scripts[i][t]`` and records its contexts."""

    def __init__(self, tokenizer, scripts: list[list[str]], *, eos: bool = True) -> None:
        self.tok, self.scripts, self.eos = tokenizer, scripts, eos
        self.contexts: list[list[list[int]]] = []

    def __call__(self, contexts: list[list[int]]):
        turn = len(self.contexts)
        self.contexts.append([list(c) for c in contexts])
        out = []
        for i in range(len(contexts)):
            ids = self.tok(self.scripts[i][turn], add_special_tokens=False)["input_ids"]
            out.append(ids + ([self.tok.eos_token_id] if self.eos else []))
        return out, None


def test_rollout_masks_feedback_discounts_and_shows_the_harness_verdict(tokenizer, naive_kernel) -> None:
    prompt = task_prompt(TASK)
    scripts = [[GARBAGE, naive_kernel, GARBAGE],        # cheat, then correct, then cheat again
               [naive_kernel, naive_kernel, naive_kernel]]  # correct throughout (2nd, 3rd: cache hits)
    policy = Scripted(tokenizer, scripts)
    farm = EvaluationFarm(jobs=2)
    try:
        rollout = MultiTurnRollout(tokenizer, farm, turns=3, gamma=0.4, max_feedback_tokens=400,
                                   task_of_prompt={prompt_key(prompt): TASK}, generate_factory=lambda _t: policy)
        out = rollout([prompt, prompt], trainer=None)
        stats = farm.stats()
    finally:
        farm.close()

    # the rewards are the unified reward's, computed independently here
    base = evaluate_baseline(TASK, "cpu", None)
    res_g, r_garbage = evaluate_attempt(TASK, GARBAGE.strip() + "\n", "cuda", "cpu", "veriforge", "H100-SXM", base,
                                        None)
    from veriforge.cudaperf.feedback import extract_candidate

    kernel_src = extract_candidate(naive_kernel, "c2cuda")
    res_k, r_kernel = evaluate_attempt(TASK, kernel_src, "cuda", "cpu", "veriforge", "H100-SXM", base, None)
    assert r_kernel.correct and r_garbage.outcome == "cheat" and r_garbage.value == -1.0
    g, k = r_garbage.value, r_kernel.value
    assert out["turn_rewards"][0] == pytest.approx([g, k, g])
    assert out["turn_rewards"][1] == pytest.approx([k, k, k])
    assert out["turn_returns"][0] == pytest.approx([g + 0.4 * k + 0.16 * g, k + 0.4 * g, g])  # exact, gamma = 0.4
    assert out["turn_returns"][1] == pytest.approx([k * (1 + 0.4 + 0.16), k * 1.4, k])
    assert out["turn_correct"] == [[False, True, False], [True, True, True]]
    assert stats["evaluations"] == 2 and stats["cache_hits"] == 4  # duplicates are evaluated once

    # one sequence per rollout: action, feedback, action, feedback, action; env_mask 0 exactly on feedback
    eos = tokenizer.eos_token_id
    for i in range(2):
        ids, mask, spans = out["completion_ids"][i], out["env_mask"][i], out["turn_spans"][i]
        assert len(ids) == len(mask) and len(spans) == 3
        actions = [tokenizer(s, add_special_tokens=False)["input_ids"] + [eos] for s in scripts[i]]
        for (s, e), action in zip(spans, actions, strict=True):
            assert ids[s:e] == action and all(mask[s:e])
        gaps = [(spans[0][1], spans[1][0]), (spans[1][1], spans[2][0])]
        for s, e in gaps:
            assert e > s and not any(mask[s:e])  # the feedback turn, kept out of the loss
        assert sum(mask) == sum(len(a) for a in actions)
        assert spans[-1][1] == len(ids)
        assert out["prompt_ids"][i] == policy.contexts[0][i]  # turn 1 sees the prompt alone

    # turn 2's context is exactly prompt + turn 1 + the harness's feedback (no re-tokenisation)
    ctx2 = policy.contexts[1][0]
    assert ctx2 == out["prompt_ids"][0] + out["completion_ids"][0][: out["turn_spans"][0][1][0]]
    fb = feedback_message(res_g, r_garbage, turn=1, turns=3, family="c2cuda", source=GARBAGE.strip() + "\n")
    text = tokenizer.decode(ctx2)
    assert fb in text and "Attempt 1 of 3" in text and "no __global__ kernel" in text
    assert text.endswith("<|assistant|>\n")  # the next assistant turn is open
    fb_ok = feedback_message(res_k, r_kernel, turn=2, turns=3, family="c2cuda", source=kernel_src)
    assert fb_ok.splitlines()[0] in tokenizer.decode(policy.contexts[2][1])


def test_cut_off_attempts_get_a_masked_eos_and_long_feedback_is_cut(tokenizer) -> None:
    prompt = task_prompt(TASK)
    policy = Scripted(tokenizer, [[GARBAGE, GARBAGE]], eos=False)
    farm = EvaluationFarm(jobs=1)
    try:
        rollout = MultiTurnRollout(tokenizer, farm, turns=2, gamma=0.4, max_feedback_tokens=24,
                                   task_of_prompt={prompt_key(prompt): TASK}, generate_factory=lambda _t: policy)
        out = rollout([prompt], trainer=None)
        framing = len(rollout.feedback_ids("", ended=False))  # EOS + chat-template tokens around a message
        with pytest.raises(RolloutError, match="not in the training set"):
            rollout([[{"role": "user", "content": "another task"}]], trainer=None)
    finally:
        farm.close()
    (_, e1), (s2, _) = out["turn_spans"][0]
    gap = out["completion_ids"][0][e1:s2]
    assert gap[0] == tokenizer.eos_token_id and out["env_mask"][0][e1] == 0  # closes the cut-off turn
    assert "[feedback truncated]" in tokenizer.decode(gap)
    assert len(gap) <= 24 + framing + 2  # the message itself is cut to max_feedback_tokens (+ merges at its ends)
