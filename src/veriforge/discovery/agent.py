"""The D3-Gym baseline agent: a model plus self-debug, recorded as :class:`Trajectory` objects.

The agent prompts the model with the environment's observation, takes the last ```python block of
the reply, runs it with :meth:`D3Env.step`, and feeds the execution feedback back as the next user
turn, until the evaluator accepts the outputs or the attempts are used up (ScienceAgentBench's
self-debug agent). Every turn is recorded so a verified episode can become training data.

Sampling ``n`` episodes of the same task must give ``n`` *different* episodes: the LLM cache is keyed
by request and sample index, so episode ``k`` asks with ``seed = seed0 + k`` (a different request for
the cache, a different sample for servers that honour seeds) -- identical requests would otherwise
collapse to one cached answer.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING, Any

from veriforge.core.hashing import content_hash
from veriforge.core.types import Trajectory
from veriforge.llm.accounting import Totals

if TYPE_CHECKING:
    from veriforge.discovery.env import D3Env
    from veriforge.llm import LLMClient

__all__ = ["SYSTEM_PROMPT", "BaselineAgent", "extract_program"]

SYSTEM_PROMPT = (
    "You are an expert data scientist who writes correct, self-contained Python programs for "
    "data-driven scientific discovery tasks. Read the task, the dataset previews and the required output "
    "paths carefully. Reply with a short plan followed by exactly one complete program in a single "
    "```python code block. The program must read its inputs from the datasets/ folder, write every "
    "required output under pred_results/, use only the installed packages and need no network. "
    "When you are shown an error, reply with the complete corrected program, not a diff."
)

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.S)
_PY_TAGS = {"python", "py", "python3"}


def extract_program(text: str) -> str | None:
    """The program in a model reply: the last ```python block, else the last untagged block.

    ``None`` when there is none (a reply cut off by ``max_tokens`` leaves an unclosed fence: that is
    not a program to run).
    """
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(text or "")]
    for wanted in (lambda t: t in _PY_TAGS, lambda t: t == ""):
        chosen = [b for t, b in blocks if wanted(t) and b.strip()]
        if chosen:
            return chosen[-1].strip("\n") + "\n"
    return None


class BaselineAgent:
    """Model + self-debug. ``client`` is an :class:`LLMClient`; ``seed`` is added to the episode's
    sample index to make every episode's requests distinct (see the module docstring)."""

    name = "baseline"

    def __init__(
        self,
        client: LLMClient,
        *,
        system_prompt: str = SYSTEM_PROMPT,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int = 0,
    ) -> None:
        self.client = client
        self.system_prompt = system_prompt
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = int(seed)

    def config(self) -> dict[str, Any]:
        """What identifies this agent's behaviour (part of a run's config, so resumes match)."""
        return {
            "agent": self.name,
            "model": self.client.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "system_prompt_hash": content_hash(self.system_prompt)[:16],
        }

    async def run_episode(
        self, env: D3Env, *, sample: int = 0, trajectory_id: str | None = None
    ) -> Trajectory:
        """One episode on ``env`` (reset here); returns the recorded trajectory.

        Steps: ``system/prompt``, ``user/observation``, then per attempt ``assistant/completion``
        (``metadata.program`` is the extracted program, ``candidate`` its hash) and ``user/feedback``
        (the environment's observation, ``reward`` the attempt's reward, ``metadata.info`` the step
        info). A model failure ends the episode as an infrastructure failure.
        """
        from veriforge.errors import LLMError

        t0 = time.perf_counter()
        obs = env.reset()
        iid = str(obs["instance_id"])
        traj = Trajectory(id=trajectory_id or f"{iid}#{sample}", task_id=iid)
        traj.add("system", self.system_prompt, kind="prompt")
        traj.add("user", obs["text"], kind="observation", metadata={"round": 0})
        messages: list[dict[str, str]] = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": obs["text"]},
        ]
        spend = Totals()
        last_info: dict[str, Any] | None = None
        reward, attempts, programs_run = 0.0, 0, 0
        infra, infra_reason = False, ""
        env_s = 0.0
        while attempts < env.max_attempts:
            attempts += 1
            try:
                resp = await self.client.chat(
                    messages,
                    n=1,
                    seed=self.seed + sample,
                    temperature=self.temperature,
                    max_tokens=self.max_tokens,
                )
            except LLMError as exc:
                infra, infra_reason = True, f"model call failed: {exc}"
                break
            spend.add_response(resp)
            text = resp.text
            program = extract_program(text)
            traj.add(
                "assistant",
                text,
                kind="completion",
                candidate=content_hash("python", program) if program else None,
                metadata={
                    "round": attempts,
                    "program": program,
                    "cached": bool(resp.cached and resp.cached[0]),
                    "prompt_tokens": resp.usage.prompt_tokens,
                    "completion_tokens": resp.usage.completion_tokens,
                    "cost_usd": resp.cost_usd,
                },
            )
            messages.append({"role": "assistant", "content": text})
            if program is None:
                left = env.max_attempts - attempts
                feedback = "Your reply contained no ```python code block, so nothing was run."
                if left > 0:
                    feedback += (
                        f" Reply with the complete program in one ```python block ({left} attempt(s) left)."
                    )
                traj.add(
                    "user",
                    feedback,
                    kind="feedback",
                    reward=0.0,
                    metadata={"round": attempts, "no_program": True},
                )
                messages.append({"role": "user", "content": feedback})
                continue
            s0 = time.perf_counter()
            fb, reward, done, info = await asyncio.to_thread(env.step, program)
            env_s += time.perf_counter() - s0
            programs_run += 1
            last_info = info
            traj.add(
                "user", fb["text"], kind="feedback", reward=reward, metadata={"round": attempts, "info": info}
            )
            messages.append({"role": "user", "content": fb["text"]})
            if info.get("infrastructure_failure"):
                infra, infra_reason = True, str(info.get("failure_reason") or "")
            if done:
                break
        success = reward == 1.0 and not infra
        traj.reward = 1.0 if success else 0.0
        traj.metadata = {
            "instance_id": iid,
            "sample": sample,
            "agent": self.name,
            "model": self.client.model,
            "attempts": attempts,
            "programs_run": programs_run,
            "debug_rounds": max(0, attempts - 1),
            "success": success,
            "valid_execution": bool(last_info and last_info.get("valid_execution")),
            "infrastructure_failure": infra,
            "failure_reason": infra_reason
            or (
                str(last_info.get("failure_reason") or "")
                if last_info
                else "no program was extracted from any reply"
            ),
            "llm_calls": spend.calls,
            "prompt_tokens": spend.prompt_tokens,
            "completion_tokens": spend.completion_tokens,
            "cost_usd": None if spend.cost_usd is None else round(spend.cost_usd, 8),
            "unpriced_calls": spend.unpriced_calls,
            "env_s": round(env_s, 3),
            "wall_s": round(time.perf_counter() - t0, 3),
            "python_note": env.python_note,
        }
        return traj
