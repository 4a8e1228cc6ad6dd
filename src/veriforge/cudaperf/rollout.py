"""Multi-turn refinement rollouts for GRPO: attempt, get the harness's verdict as feedback, try again.

A rollout on one task is ``turns`` attempts. After attempt t the candidate is evaluated and scored
by the unified reward (:mod:`veriforge.cudaperf.reward`), and the model is shown
:func:`veriforge.cudaperf.feedback.feedback_message` (compiler errors, the verdict's reason, the
profile/analysis findings) as the next user turn. Three things make it trainable:

* **Returns, as in Kevin.** Attempt t is credited with the discounted return of what it led to,
  ``G_t = sum_{k>=t} gamma^(k-t) r_k`` (:func:`discounted_returns`): a first attempt that sets up a
  correct second one earns part of the second's reward, and with gamma = 0.4 a later success is
  worth less than an immediate one.
* **One sequence per rollout, feedback masked.** The completion TRL trains on is the model's own
  tokens of every turn with the feedback (and chat-template) tokens between them; ``env_mask`` is 0
  on those, so the loss only ever pushes up or down what the policy wrote. Tokens are never
  re-tokenised: the next turn's context is exactly ``prompt + completion so far``, so the logits
  the trainer recomputes are those the tokens were sampled from.
* **Per-turn advantages.** TRL gives one scalar advantage per sequence; :func:`per_turn_advantages`
  normalises each turn's return within its GRPO group, and the trainer subclass from
  :func:`multi_turn_trainer_class` paints each turn's tokens with its own advantage (TRL's loss
  accepts ``(B, T)`` advantages). ``advantage = "trajectory"`` keeps TRL's scalar (G_1) instead.

Plugging in: TRL 1.16's ``GRPOTrainer(rollout_func=...)`` calls :meth:`MultiTurnRollout.__call__`
with the prompts of the batch (already repeated ``num_generations`` times by its sampler: one
rollout per prompt received) and the trainer, whose generation back-end (transformers, or vLLM in
server/colocate mode) produces each turn. The reward TRL sees is G_1, returned by
:func:`return_reward` from the rollout's extra fields; per-turn rewards and correctness are logged
through TRL's ``log_metric``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from veriforge.errors import VeriforgeError

__all__ = ["Generate", "MultiTurnRollout", "Rollout", "RolloutError", "Scored", "Scorer", "TurnRecord",
           "discounted_returns", "multi_turn_trainer_class", "per_turn_advantages", "prompt_key", "return_reward",
           "trl_generate"]

#: ``generate(contexts) -> (new_token_ids, logprobs or None)``: one continuation per context, the
#: tokens the policy sampled (ending with EOS unless cut at the per-turn limit).
Generate = Callable[[list[list[int]]], tuple[list[list[int]], list[list[float]] | None]]


class RolloutError(VeriforgeError, RuntimeError):
    """A rollout that cannot be built (unknown prompt, a chat template that cannot frame feedback)."""


@dataclass
class Scored:
    """One evaluated attempt: the extracted candidate, the harness's EvalResult and the Reward."""

    source: str
    result: Any
    reward: Any


class Scorer(Protocol):
    """Evaluates attempts concurrently (the evaluation farm, :class:`veriforge.cudaperf.train.EvaluationFarm`)."""

    def score_many(self, tasks: Sequence[str], texts: Sequence[str]) -> list[Scored]: ...

    def family(self, task: str) -> str: ...


@dataclass
class TurnRecord:
    """What happened in one turn of one rollout (written to the run's rollouts.jsonl)."""

    turn: int
    text: str
    reward: float
    outcome: str
    correct: bool
    speedup: float | None = None
    feedback: str | None = None
    return_: float = 0.0
    action_tokens: int = 0
    feedback_tokens: int = 0


@dataclass
class Rollout:
    """One multi-turn rollout as TRL trains on it.

    ``completion_ids`` holds every turn's action with the feedback between them; ``env_mask`` is 1
    on the policy's tokens and 0 on feedback tokens; ``turn_spans[t]`` is ``[start, end)`` of turn
    t's action in ``completion_ids``; ``logprobs`` (from vLLM) is 0.0 on feedback tokens.
    """

    task_id: str
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None
    turn_spans: list[tuple[int, int]] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)

    @property
    def rewards(self) -> list[float]:
        return [t.reward for t in self.turns]

    @property
    def returns(self) -> list[float]:
        return [t.return_ for t in self.turns]

    def to_dict(self) -> dict[str, Any]:
        """The record without token ids (those stay in memory)."""
        return {"task_id": self.task_id, "turns": [asdict(t) for t in self.turns],
                "prompt_tokens": len(self.prompt_ids), "completion_tokens": len(self.completion_ids),
                "trained_tokens": sum(self.env_mask)}


# ----------------------------------------------------------------------------------- pure pieces
def discounted_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """``G_t = sum_{k>=t} gamma^(k-t) r_k`` for every turn t (Kevin's multi-turn credit assignment)."""
    if not 0.0 <= gamma <= 1.0:
        raise RolloutError(f"gamma must be in [0, 1], got {gamma}")
    out = [0.0] * len(rewards)
    acc = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        acc = float(rewards[t]) + gamma * acc
        out[t] = acc
    return out


def per_turn_advantages(returns: Sequence[Sequence[float]], group: int, *, scale: str = "group",
                        eps: float = 1e-4) -> list[list[float]]:
    """GRPO advantages per turn: each turn's return minus the mean of that turn's returns in its
    group (``group`` consecutive rollouts of one prompt), divided by their std (``scale="group"``),
    the batch's std for that turn (``"batch"``) or not at all (``"none"``). Mirrors TRL's scalar
    advantage, applied to every turn instead of only the whole sequence."""
    if group < 1 or len(returns) % group:
        raise RolloutError(f"{len(returns)} rollouts do not split into groups of {group}")
    turns = {len(r) for r in returns}
    if len(turns) > 1:
        raise RolloutError("every rollout of a batch must have the same number of turns")
    n_turns = turns.pop() if turns else 0

    def std(xs: Sequence[float]) -> float:  # unbiased, like torch.std (TRL's nanstd)
        if len(xs) < 2:
            return 0.0
        m = sum(xs) / len(xs)
        return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))

    out = [[0.0] * n_turns for _ in returns]
    batch_std = [std([r[t] for r in returns]) for t in range(n_turns)]
    for g0 in range(0, len(returns), group):
        members = range(g0, g0 + group)
        for t in range(n_turns):
            vals = [returns[i][t] for i in members]
            mean = sum(vals) / len(vals)
            denom = {"group": std(vals), "batch": batch_std[t]}.get(scale)
            for i in members:
                a = returns[i][t] - mean
                out[i][t] = a / (denom + eps) if denom is not None else a
    return out


def prompt_key(prompt: Any) -> str:
    """A stable key for a dataset prompt (chat messages or text): how a rollout finds its task,
    since TRL hands ``rollout_func`` only the prompts."""
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


def return_reward(prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, *,
                  turn_returns: Sequence[Sequence[float]] | None = None,
                  turn_rewards: Sequence[Sequence[float]] | None = None,
                  turn_correct: Sequence[Sequence[bool]] | None = None,
                  log_metric: Callable[[str, float], None] | None = None, **_: Any) -> list[float]:
    """TRL ``reward_funcs`` entry for multi-turn rollouts: the return of the first turn, G_1.

    The rewards were computed during the rollout (each turn's feedback needed them); this reads
    them from the rollout's extra fields and logs per-turn means and correctness rates."""
    if turn_returns is None:
        raise RolloutError("cudaperf_return needs the multi-turn rollout's turn_returns (rollout_func not set?)")
    if log_metric is not None and turn_rewards:
        n = max(len(r) for r in turn_rewards)
        for t in range(n):
            vals = [r[t] for r in turn_rewards if len(r) > t]
            log_metric(f"turn_{t + 1}/reward", sum(vals) / len(vals))
            rets = [r[t] for r in turn_returns if len(r) > t]
            log_metric(f"turn_{t + 1}/return", sum(rets) / len(rets))
            if turn_correct:
                ok = [bool(c[t]) for c in turn_correct if len(c) > t]
                log_metric(f"turn_{t + 1}/correct_rate", sum(ok) / len(ok))
        if turn_correct:
            flat = [bool(x) for c in turn_correct for x in c]
            log_metric("correct_rate", sum(flat) / max(1, len(flat)))
            log_metric("any_turn_correct_rate", sum(any(c) for c in turn_correct) / max(1, len(turn_correct)))
    return [float(r[0]) for r in turn_returns]


return_reward.__name__ = "cudaperf_return"


# ---------------------------------------------------------------------------------- the rollout
class MultiTurnRollout:
    """Runs multi-turn rollouts; an instance is TRL's ``rollout_func``.

    ``tokenizer``: the policy's tokenizer with a chat template. ``scorer``: evaluates attempts
    (concurrently, cached). ``task_of_prompt``: :func:`prompt_key` of each dataset prompt -> its
    task id. ``generate_factory(trainer) -> Generate``: the generation back-end inside TRL; default
    :func:`trl_generate` (the trainer's own: transformers or vLLM). A factory rather than a fixed
    generator so a scripted policy can wrap the trainer's (replaying recorded attempts, tests).
    ``on_rollouts(rollouts, trainer)`` sees every finished batch (logging).
    """

    def __init__(self, tokenizer: Any, scorer: Scorer, *, turns: int, gamma: float,
                 max_feedback_tokens: int = 512, task_of_prompt: Mapping[str, str] | None = None,
                 generate_factory: Callable[[Any], Generate] | None = None,
                 on_rollouts: Callable[[list[Rollout], Any], None] | None = None,
                 chat_template_kwargs: Mapping[str, Any] | None = None) -> None:
        if turns < 1:
            raise RolloutError("turns must be >= 1")
        discounted_returns([], gamma)  # validates gamma
        self.tokenizer = tokenizer
        self.scorer = scorer
        self.turns = turns
        self.gamma = gamma
        self.max_feedback_tokens = max_feedback_tokens
        self.task_of_prompt = dict(task_of_prompt or {})
        self.generate_factory = generate_factory
        self.on_rollouts = on_rollouts
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._frame: tuple[list[int], list[int]] | None = None
        eos = getattr(tokenizer, "eos_token_id", None)
        self.eos_ids = {int(eos)} if eos is not None else set()

    # -- tokens ----------------------------------------------------------------------------------
    def _template(self, messages: list[dict[str, str]], *, generation_prompt: bool) -> list[int]:
        ids = self.tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=generation_prompt,
                                                 return_dict=False, **self.chat_template_kwargs)
        if isinstance(ids, Mapping):  # some tokenizers return a BatchEncoding whatever return_dict says
            ids = ids["input_ids"]
        return [int(i) for i in ids]

    def prompt_ids(self, prompt: Any) -> list[int]:
        """Token ids of a dataset prompt (chat messages through the chat template, or plain text)."""
        if isinstance(prompt, str):
            return [int(i) for i in self.tokenizer(prompt, add_special_tokens=False)["input_ids"]]
        return self._template(list(prompt), generation_prompt=True)

    def _user_turn_ids(self, content: str) -> list[int]:
        """The tokens that follow a finished assistant turn to add a user message and open the next
        assistant turn, taken from the chat template by difference (as TRL frames tool results):
        render a dummy conversation with and without the message and keep the new suffix."""
        base = [{"role": "user", "content": "task"}, {"role": "assistant", "content": "attempt"}]
        prefix = self._template(base, generation_prompt=False)
        # the assistant turn ends at its last EOS; what templates add after it (a newline) is framing
        ends = [i for i, tok in enumerate(prefix) if tok in self.eos_ids]
        if ends:
            prefix = prefix[: ends[-1] + 1]
        full = self._template([*base, {"role": "user", "content": content}], generation_prompt=True)
        if full[: len(prefix)] != prefix:
            raise RolloutError("the chat template does not render a conversation as a prefix of its continuation; "
                               "feedback turns cannot be framed without re-tokenising the policy's tokens")
        return full[len(prefix):]

    def feedback_ids(self, text: str, *, ended: bool) -> list[int]:
        """Tokens of a feedback turn; ``ended``: the action already ends with EOS (else one is
        added, masked, so a cut-off attempt is still a closed assistant turn)."""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) > self.max_feedback_tokens:
            marker = "\n[feedback truncated]"
            keep = max(1, self.max_feedback_tokens - len(self.tokenizer(marker, add_special_tokens=False)["input_ids"]))
            text = self.tokenizer.decode(ids[:keep], skip_special_tokens=True) + marker
        out = self._user_turn_ids(text)
        if not ended and self.eos_ids:
            out = [min(self.eos_ids), *out]
        return out

    # -- running -----------------------------------------------------------------------------------
    def run(self, prompts: Sequence[Any], task_ids: Sequence[str], generate: Generate) -> list[Rollout]:
        """One rollout per prompt: ``turns`` batched generations, each scored concurrently."""
        from veriforge.cudaperf.feedback import feedback_message

        if len(prompts) != len(task_ids):
            raise RolloutError("one task id per prompt")
        rollouts = [Rollout(task_id=str(t), prompt_ids=self.prompt_ids(p)) for p, t in zip(prompts, task_ids,
                                                                                              strict=True)]
        for r in rollouts:
            r.logprobs = []
        for turn in range(1, self.turns + 1):
            contexts = [r.prompt_ids + r.completion_ids for r in rollouts]
            actions, lps = generate(contexts)
            if len(actions) != len(rollouts):
                raise RolloutError(f"the generator returned {len(actions)} continuations for {len(rollouts)} contexts")
            texts = [self.tokenizer.decode(a, skip_special_tokens=True) for a in actions]
            scored = self.scorer.score_many([r.task_id for r in rollouts], texts)
            for i, (r, action, text, sc) in enumerate(zip(rollouts, actions, texts, scored, strict=True)):
                action = [int(x) for x in action]
                start = len(r.completion_ids)
                r.completion_ids += action
                r.env_mask += [1] * len(action)
                if r.logprobs is not None:
                    if lps is None:
                        r.logprobs = None
                    else:
                        r.logprobs += [float(x) for x in lps[i]]
                r.turn_spans.append((start, len(r.completion_ids)))
                rew = sc.reward
                rec = TurnRecord(turn=turn, text=text, reward=float(rew.value), outcome=str(rew.outcome),
                                 correct=bool(rew.correct), speedup=getattr(rew, "speedup", None),
                                 action_tokens=len(action))
                if turn < self.turns:
                    fb = feedback_message(sc.result, rew, turn=turn, turns=self.turns,
                                          family=self.scorer.family(r.task_id), source=sc.source)
                    ended = bool(action) and action[-1] in self.eos_ids
                    ids = self.feedback_ids(fb, ended=ended)
                    r.completion_ids += ids
                    r.env_mask += [0] * len(ids)
                    if r.logprobs is not None:
                        r.logprobs += [0.0] * len(ids)
                    rec.feedback, rec.feedback_tokens = fb, len(ids)
                r.turns.append(rec)
        for r in rollouts:
            for rec, g in zip(r.turns, discounted_returns(r.rewards, self.gamma), strict=True):
                rec.return_ = g
        return rollouts

    def task_for(self, prompt: Any) -> str:
        key = prompt_key(prompt)
        if key not in self.task_of_prompt:
            raise RolloutError("a prompt that is not in the training set reached the rollout (its task is unknown)")
        return self.task_of_prompt[key]

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """TRL's ``rollout_func(prompts, trainer)``: one rollout per prompt received."""
        generate = (self.generate_factory or trl_generate)(trainer)
        rollouts = self.run(prompts, [self.task_for(p) for p in prompts], generate)
        if self.on_rollouts is not None:
            self.on_rollouts(rollouts, trainer)
        with_lp = all(r.logprobs is not None for r in rollouts)
        return {
            "prompt_ids": [r.prompt_ids for r in rollouts],
            "completion_ids": [r.completion_ids for r in rollouts],
            "logprobs": [r.logprobs for r in rollouts] if with_lp else None,
            "env_mask": [r.env_mask for r in rollouts],
            "turn_rewards": [r.rewards for r in rollouts],
            "turn_returns": [r.returns for r in rollouts],
            "turn_correct": [[t.correct for t in r.turns] for r in rollouts],
            "turn_outcomes": [[t.outcome for t in r.turns] for r in rollouts],
            "turn_spans": [[list(s) for s in r.turn_spans] for r in rollouts],
        }


def trl_generate(trainer: Any) -> Generate:
    """The trainer's own single-turn generation (transformers ``generate``, or vLLM server/colocate
    with weight sync), one continuation per context — what TRL's tool loop uses between calls."""
    gen = getattr(trainer, "_generate_single_turn", None)
    if gen is None:
        raise RolloutError("this TRL version has no GRPOTrainer._generate_single_turn; CudaPerf needs TRL 1.16")

    def generate(contexts: list[list[int]]) -> tuple[list[list[int]], list[list[float]] | None]:
        ids, logprobs = gen(contexts, None, {}, num_generations=1)
        return [list(map(int, x)) for x in ids], logprobs

    return generate


# ------------------------------------------------------------------------------ the trainer class
_TRAINER_CLASS: Any = None


def multi_turn_trainer_class() -> Any:
    """``GRPOTrainer`` with per-turn advantages (built on first use: importing TRL is slow).

    Its ``cudaperf_advantage`` attribute ("turn" | "trajectory") selects the advantage: "turn"
    replaces TRL's per-sequence advantage with a ``(B, T)`` tensor where each turn's action tokens
    carry that turn's group-normalised return (feedback tokens are masked by ``env_mask`` anyway).
    """
    global _TRAINER_CLASS
    if _TRAINER_CLASS is not None:
        return _TRAINER_CLASS
    import torch
    from accelerate.utils import gather_object
    from trl import GRPOTrainer

    class CudaPerfGRPOTrainer(GRPOTrainer):
        cudaperf_advantage: str = "turn"

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            out = super()._generate_and_score_completions(inputs)
            if self.cudaperf_advantage != "turn" or "turn_returns" not in inputs[0]:
                return out
            mode = "train" if self.model.training else "eval"
            group = self.num_generations if mode == "train" else self.num_generations_eval
            returns = gather_object([list(x["turn_returns"]) for x in inputs])
            adv_all = per_turn_advantages(returns, group, scale=str(self.scale_rewards))
            start = self.accelerator.process_index * len(inputs)
            local = adv_all[start:start + len(inputs)]
            width = out["completion_ids"].size(1)
            adv = torch.zeros((len(inputs), width), dtype=torch.float32, device=out["completion_ids"].device)
            for i, (turn_adv, spans) in enumerate(zip(local, (x["turn_spans"] for x in inputs), strict=True)):
                for a, (s, e) in zip(turn_adv, spans, strict=True):
                    adv[i, s:min(e, width)] = a
            out["advantages"] = adv
            return out

    _TRAINER_CLASS = CudaPerfGRPOTrainer
    return _TRAINER_CLASS
