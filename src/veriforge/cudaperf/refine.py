"""Inference-time multi-turn refinement: prompt → CUDA → verify → reward → feedback → try again.

``refine_task(task, policy, turns=K)`` runs one episode with any model: turn 1 gets
:func:`~veriforge.cudaperf.feedback.task_prompt`, each answer's code is extracted and evaluated by
the harness (anti-cheat, secret trials, the cost model's estimate on the CPU back-end), scored by the
unified reward (:func:`veriforge.cudaperf.reward.reward`, the one the trainers use), and the
feedback (:func:`~veriforge.cudaperf.feedback.feedback_message`) is appended for the next turn.
Unlike :func:`veriforge.search.refine.refine`, a correct attempt does not end the episode: the later
turns are where a correct-but-slow kernel gets faster.

Why not :func:`veriforge.search.refine.refine` itself: refinement here must be *resumable* without
asking the model again for a turn it already answered, so each answer is recorded the moment it
arrives (before its evaluation) and each attempt after it, and a resumed run replays those records
in place of the model and the harness. The generic loop has no hook between "proposed" and
"verified". The episode is still returned as the same :class:`~veriforge.core.types.Trajectory`
shape (proposals as ``assistant`` steps, feedback as ``user`` steps with the reward), so RL
rollouts and exports consume it unchanged.

Run store layout (kind ``cudaperf-refine``): event ``completion`` ``{turn, text}`` as soon as the
model answers; event ``attempt`` with the whole :class:`Attempt` after evaluation; state
``best`` after each attempt; the run is finished ``done`` (or ``failed`` on an error, which
``run_id=`` resumes). The run folder holds ``report.html``, ``attempts.jsonl`` and the best source.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.errors import VeriforgeError

__all__ = ["RUN_KIND", "Attempt", "RefineError", "RefineOutcome", "ReplayPolicy", "make_policy", "refine_task",
           "refine_task_async"]

RUN_KIND = "cudaperf-refine"


class RefineError(VeriforgeError, ValueError):
    """A refinement that cannot run as asked (no turns, an unusable policy or baseline, a bad resume)."""


@dataclass
class Attempt:
    """One turn: what the model said, what was evaluated, and what it earned and was told.

    ``turn`` is 1-based. ``speedup`` is over the baseline, of ``provenance`` ("estimated" on the CPU
    back-end, "measured" on a GPU). ``repeat_of`` is the earlier turn with the same code (its
    evaluation was reused). ``replayed`` marks an attempt read back from the run store on resume."""

    turn: int
    completion: str
    source: str
    outcome: str
    correct: bool
    reward: float
    terms: dict[str, float] = field(default_factory=dict)
    structure: dict[str, float] = field(default_factory=dict)
    speedup: float | None = None
    provenance: str | None = None
    reason: str = ""
    feedback: str = ""
    verdict: dict[str, Any] = field(default_factory=dict)
    eval_key: str = ""
    eval_seconds: float = 0.0
    policy_seconds: float = 0.0
    repeat_of: int | None = None
    replayed: bool = False

    @property
    def code_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("replayed")
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Attempt:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass
class RefineOutcome:
    """The episode: every attempt, the best one (correct first, then reward, then the earlier turn),
    the run id and folder, and the conversation as a Trajectory."""

    task_id: str
    family: str
    run_id: str
    attempts: list[Attempt]
    best: Attempt
    prompt: list[dict[str, str]]
    folder: Path | None = None
    report: Path | None = None
    baseline: str = ""
    model: str = ""
    backend: str = "cpu"
    reward_config: str = "veriforge"
    trajectory: Any = None

    @property
    def rewards(self) -> list[float]:
        return [a.reward for a in self.attempts]

    def messages(self) -> list[dict[str, str]]:
        """The whole conversation (prompt, answers, feedback), e.g. to continue it or train on it."""
        msgs = [dict(m) for m in self.prompt]
        for a in self.attempts:
            msgs += [{"role": "assistant", "content": a.completion}, {"role": "user", "content": a.feedback}]
        return msgs

    def summary(self) -> dict[str, Any]:
        return {"task": self.task_id, "run_id": self.run_id, "turns": len(self.attempts),
                "best_turn": self.best.turn, "best_reward": self.best.reward, "best_outcome": self.best.outcome,
                "best_speedup": self.best.speedup, "provenance": self.best.provenance, "rewards": self.rewards,
                "outcomes": [a.outcome for a in self.attempts],
                "report": str(self.report) if self.report else None}


# ---------------------------------------------------------------------------------------------
# Policies


Policy = Callable[[list[dict[str, str]]], Any]


class ReplayPolicy:
    """Replays recorded completions in turn order: answer ``t`` for the ``t``-th call (the last one
    repeats). For demos, tests and benchmarks without a server; ``check(messages, turn)`` may
    inspect what the policy was sent (the refinement benchmark asserts feedback arrived there)."""

    def __init__(self, completions: list[str], check: Callable[[list[dict[str, str]], int], None] | None = None):
        if not completions:
            raise RefineError("a replay policy needs at least one completion")
        self.completions = list(completions)
        self.check = check
        self.calls: list[list[dict[str, str]]] = []

    @classmethod
    def from_jsonl(cls, path: str | Path) -> ReplayPolicy:
        """One completion per line: a JSON string or ``{"text": ...}`` (blank and ``#`` lines skipped)."""
        texts = []
        for i, line in enumerate(Path(path).read_text().splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RefineError(f"{path}:{i}: not JSON ({exc.msg})") from exc
            text = value.get("text") if isinstance(value, dict) else value
            if not isinstance(text, str):
                raise RefineError(f"{path}:{i}: expected a JSON string or an object with a 'text' string")
            texts.append(text)
        return cls(texts)

    def __call__(self, messages: list[dict[str, str]]) -> str:
        # The turn is read from the conversation, not counted from calls: a resumed run asks for
        # turn 3 first, and must get the third recorded answer.
        turn = sum(1 for m in messages if m.get("role") == "assistant") + 1
        if self.check is not None:
            self.check(messages, turn)
        self.calls.append([dict(m) for m in messages])
        return self.completions[min(turn, len(self.completions)) - 1]


def make_policy(policy: Any, *, store: Any = None, temperature: float | None = None,
                max_tokens: int | None = None) -> tuple[Callable[[list[dict[str, str]]], Any], str]:
    """An async ``messages -> text`` callable and a label from a model string, an LLM client
    (anything with an async ``chat``) or a plain callable (sync or async).

    ``scripted:FILE.jsonl`` whose lines carry no ``match`` keys replays the file in turn order
    (:class:`ReplayPolicy`); other ``scripted:`` forms go through the LLM layer's scripted back-end."""
    if isinstance(policy, str):
        spec = policy
        if spec.startswith("scripted:") and spec.endswith(".jsonl") and Path(spec[9:]).is_file() \
                and '"match"' not in Path(spec[9:]).read_text():
            return make_policy(ReplayPolicy.from_jsonl(spec[9:]))[0], spec
        from veriforge.llm.factory import create_client

        client = create_client(spec, store=store)
        ask = make_policy(client, temperature=temperature, max_tokens=max_tokens)[0]
        ask.client = client  # type: ignore[attr-defined]  # created here, so closed by the loop
        return ask, spec
    chat = getattr(policy, "chat", None)
    if chat is not None and inspect.iscoroutinefunction(chat):
        params: dict[str, Any] = {"n": 1}
        if temperature is not None:
            params["temperature"] = temperature
        if max_tokens is not None:
            params["max_tokens"] = max_tokens

        async def ask_client(messages: list[dict[str, str]]) -> str:
            resp = await policy.chat(messages, **params)
            return resp.completions[0].text

        return ask_client, str(getattr(policy, "model", "") or type(policy).__name__)
    if callable(policy):
        async def ask_callable(messages: list[dict[str, str]]) -> str:
            value = policy(messages)
            if inspect.isawaitable(value):
                value = await value
            return str(value)

        return ask_callable, str(getattr(policy, "__name__", None) or type(policy).__name__)
    raise RefineError(f"a policy is a model string, an LLM client or a callable messages -> text, "
                      f"not {type(policy).__name__}")


# ---------------------------------------------------------------------------------------------
# The loop


def _baseline(spec: Any, baseline: Any, backend: str, store: Any) -> tuple[Any, str]:
    """The speed baseline and its description. ``"auto"``: the task's first bundled implementation
    (the baseline :func:`veriforge.cudaperf.reward.trl_reward` trains with), or no speed term for a
    task without one (an imported KernelBench problem)."""
    from veriforge.cuda.evaluate import evaluate

    if baseline is None:
        return None, "none (speed not scored)"
    if isinstance(baseline, int | float):
        return float(baseline), f"{float(baseline):.4g} s"
    if isinstance(baseline, str) and baseline == "auto":
        if not spec.implementations or spec.folder is None:
            return None, "none: the task has no implementation (speed not scored)"
        impl = spec.implementations[0]
        baseline = Path(spec.folder) / impl.file
        label = f"implementation {impl.name!r} ({impl.strategy})"
    elif isinstance(baseline, str | Path):
        path = Path(baseline)
        if not path.is_file():
            raise RefineError(f"baseline {baseline!s} is not a file (give a source file, seconds, 'auto' or None)")
        baseline, label = path, f"file {path.name}"
    else:
        return baseline, "given evaluation"
    res = evaluate(spec, baseline, backend=backend, store=store)
    if not res.verdict.correct:
        raise RefineError(f"the baseline ({label}) is not correct on {spec.id}: {res.verdict.reason}")
    return res, label


def _run_config(spec: Any, *, model: str, turns: int, backend: str, config: Any, baseline: str,
                gpu: str) -> dict[str, Any]:
    from veriforge.cuda.tasks.reference import task_content_hash

    cfg = config if isinstance(config, str) else config.to_dict()
    return {"task": spec.id, "task_hash": task_content_hash(spec), "model": model, "turns": turns,
            "backend": backend, "reward": cfg, "baseline": baseline, "gpu": gpu}


def _best(attempts: list[Attempt]) -> Attempt:
    return max(attempts, key=lambda a: (a.correct, a.reward, -a.turn))


def _evaluate_attempt(spec: Any, completion: str, *, turn: int, turns: int, backend: str, store: Any,
                      config: Any, base: Any, gpu: str, seen: dict[str, Attempt]) -> Attempt:
    from veriforge.core.types import Candidate, Verdict
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.evaluate.result import EvalResult
    from veriforge.cudaperf.feedback import extract_candidate, feedback_message
    from veriforge.cudaperf.reward import reward

    source = extract_candidate(completion, spec.family)
    digest = hashlib.sha256(source.encode()).hexdigest()
    earlier = seen.get(digest)
    if earlier is not None:  # the same code again: its verdict cannot change, so reuse it
        note = f"(The same code as attempt {earlier.turn}; not evaluated again.)\n\n"
        fb = earlier.feedback.split("\n\n", 1)[-1] if earlier.feedback.startswith("Attempt ") else earlier.feedback
        head = f"Attempt {turn} of {turns}: {earlier.outcome.replace('_', ' ')}."
        return Attempt(turn=turn, completion=completion, source=source, outcome=earlier.outcome,
                       correct=earlier.correct, reward=earlier.reward, terms=dict(earlier.terms),
                       structure=dict(earlier.structure), speedup=earlier.speedup, provenance=earlier.provenance,
                       reason=earlier.reason, feedback=f"{head}\n\n{note}{_retarget(fb, turn, turns)}",
                       verdict=dict(earlier.verdict), eval_key=earlier.eval_key, repeat_of=earlier.turn)
    language = "cuda" if spec.family == "c2cuda" else "python"
    started = time.perf_counter()
    try:
        res = evaluate(spec, Candidate(source=source, language=language), backend=backend, store=store)
    except VeriforgeError as exc:
        if "back-end cannot run here" in str(exc):
            raise
        res = EvalResult(verdict=Verdict.compile_failed(f"{type(exc).__name__}: {exc}"[:500]), task_id=spec.id,
                         backend=backend, details={"task_family": spec.family, "candidate_source": source})
    except Exception as exc:  # hostile text must cost the model its turn, not end the episode
        res = EvalResult(verdict=Verdict.compile_failed(f"{type(exc).__name__}: {exc}"[:500]), task_id=spec.id,
                         backend=backend, details={"task_family": spec.family, "candidate_source": source})
    seconds = time.perf_counter() - started
    rew = reward(res, base, config=config, gpu=gpu)
    fb = feedback_message(res, rew, turn=turn, turns=turns, family=spec.family, source=source, gpu=gpu)
    return Attempt(turn=turn, completion=completion, source=source, outcome=rew.outcome, correct=rew.correct,
                   reward=rew.value, terms=dict(rew.terms), structure=dict(rew.structure), speedup=rew.speedup,
                   provenance=rew.provenance, reason=rew.reason or res.verdict.reason, feedback=fb,
                   verdict=res.verdict.model_dump(mode="json"), eval_key=res.key, eval_seconds=seconds)


def _retarget(feedback: str, turn: int, turns: int) -> str:
    """An earlier attempt's feedback body, with the closing instruction fitting this turn."""
    body = feedback.rsplit("\n\n", 1)[0] if ("answer again" in feedback or "Make it faster" in feedback) \
        else feedback
    if turn < turns:
        return body + "\n\nAnswer with DIFFERENT code: a short plan, then the complete file in one fenced block."
    return body


def _trajectory(outcome: RefineOutcome) -> Any:
    from veriforge.core.types import Trajectory, Verdict

    traj = Trajectory(id=f"{RUN_KIND}-{outcome.run_id}", task_id=outcome.task_id)
    for m in outcome.prompt:
        traj.add(m["role"], m["content"], kind="prompt")
    for a in outcome.attempts:
        traj.add("assistant", a.completion, kind="proposal", candidate=a.code_hash, metadata={"turn": a.turn})
        verdict = Verdict.model_validate(a.verdict) if a.verdict else None
        traj.add("user", a.feedback, kind="feedback", candidate=a.code_hash, verdict=verdict, reward=a.reward,
                 metadata={"turn": a.turn, "outcome": a.outcome, "speedup": a.speedup, "provenance": a.provenance,
                           "terms": a.terms, **({"repeat_of": a.repeat_of} if a.repeat_of else {})})
    traj.reward = outcome.best.reward
    traj.metadata = {"best_turn": outcome.best.turn, "turns": len(outcome.attempts), "model": outcome.model}
    return traj


async def refine_task_async(task: Any, policy: Any, *, turns: int = 3, backend: str = "cpu", store: Any = None,
                            config: Any = "veriforge", baseline: Any = "auto", run_id: str | None = None,
                            out_dir: str | Path | None = None, gpu: str = "H100-SXM",
                            temperature: float | None = None, max_tokens: int | None = None,
                            report: bool = True,
                            on_attempt: Callable[[Attempt], None] | None = None) -> RefineOutcome:
    """:func:`refine_task` for callers with an event loop."""
    from veriforge.cuda.evaluate.harness import resolve_task
    from veriforge.cudaperf.feedback import task_prompt
    from veriforge.cudaperf.reward import PRESETS, RewardConfig

    if turns < 1:
        raise RefineError("refinement needs at least one turn")
    if isinstance(config, str) and config not in PRESETS:
        raise RefineError(f"unknown reward preset {config!r}; known: {', '.join(PRESETS)}")
    if not isinstance(config, str | RewardConfig):
        raise RefineError("config is a reward preset name or a RewardConfig")
    if run_id is not None and store is None:
        raise RefineError("resuming a run (run_id) needs the run store it was recorded in")
    spec = resolve_task(task)
    ask, label = make_policy(policy, store=store, temperature=temperature, max_tokens=max_tokens)
    base, base_label = _baseline(spec, baseline, backend, store)
    prompt = task_prompt(spec)
    recorded: dict[int, Attempt] = {}
    answers: dict[int, str] = {}
    if store is not None:
        # A plain callable has no stable identity (tests and benchmarks wrap policies), so any
        # callable may resume a callable's run; model strings and clients must match.
        ident = "callable" if callable(policy) and not isinstance(policy, str) and not hasattr(policy, "chat") \
            else label
        rid = store.start_run(RUN_KIND, _run_config(spec, model=ident, turns=turns, backend=backend, config=config,
                                                    baseline=base_label, gpu=gpu), run_id)
        for ev in store.events(rid, "completion"):
            answers[int(ev.payload["turn"])] = str(ev.payload["text"])
        for ev in store.events(rid, "attempt"):
            att = Attempt.from_dict(ev.payload)
            att.replayed = True
            recorded[att.turn] = att
    else:
        rid = run_id or f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
    messages = [dict(m) for m in prompt]
    attempts: list[Attempt] = []
    seen: dict[str, Attempt] = {}
    try:
        for turn in range(1, turns + 1):
            att = recorded.get(turn)
            if att is None:
                text = answers.get(turn)
                asked = 0.0
                if text is None:
                    t0 = time.perf_counter()
                    text = await ask([dict(m) for m in messages])
                    asked = time.perf_counter() - t0
                    if store is not None:
                        store.add_event(rid, "completion", {"turn": turn, "text": text})
                att = _evaluate_attempt(spec, text, turn=turn, turns=turns, backend=backend, store=store,
                                        config=config, base=base, gpu=gpu, seen=seen)
                att.policy_seconds = asked
                if store is not None:
                    store.add_event(rid, "attempt", att.to_dict())
            attempts.append(att)
            seen.setdefault(hashlib.sha256(att.source.encode()).hexdigest(), att)
            messages += [{"role": "assistant", "content": att.completion}, {"role": "user", "content": att.feedback}]
            if store is not None and not att.replayed:
                b = _best(attempts)
                store.set_state(rid, "best", {"turn": b.turn, "reward": b.reward, "outcome": b.outcome})
            if on_attempt is not None:
                on_attempt(att)
    except BaseException:
        if store is not None:
            store.finish_run(rid, "failed", {"turns_done": len(attempts)})
        raise
    finally:
        client = getattr(ask, "client", None)
        if client is not None:
            await client.aclose()
    outcome = RefineOutcome(task_id=spec.id, family=spec.family, run_id=rid, attempts=attempts,
                            best=_best(attempts), prompt=prompt, baseline=base_label, model=label, backend=backend,
                            reward_config=config if isinstance(config, str) else config.shape)
    outcome.trajectory = _trajectory(outcome)
    if report:
        from veriforge.core.paths import home

        folder = Path(out_dir) / rid if out_dir is not None else home() / "cudaperf-refine" / rid
        write_run_folder(outcome, folder)
    if store is not None:
        store.finish_run(rid, "done", outcome.summary())
    return outcome


def write_run_folder(outcome: RefineOutcome, folder: str | Path) -> Path:
    """report.html, attempts.jsonl and best.cu/best.py in ``folder`` (created); returns the report."""
    from veriforge.cudaperf.report import render_report

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    outcome.folder = out
    (out / "attempts.jsonl").write_text("".join(json.dumps(a.to_dict(), default=str) + "\n"
                                                for a in outcome.attempts))
    (out / ("best.cu" if outcome.family == "c2cuda" else "best.py")).write_text(outcome.best.source)
    outcome.report = out / "report.html"
    outcome.report.write_text(render_report(outcome))
    return outcome.report


def refine_task(task: Any, policy: Any, *, turns: int = 3, backend: str = "cpu", store: Any = None,
                config: Any = "veriforge", baseline: Any = "auto", run_id: str | None = None,
                out_dir: str | Path | None = None, gpu: str = "H100-SXM", temperature: float | None = None,
                max_tokens: int | None = None, report: bool = True,
                on_attempt: Callable[[Attempt], None] | None = None) -> RefineOutcome:
    """Refine ``task`` (a TaskSpec, bundled id or folder) over ``turns`` turns with ``policy``.

    ``policy``: a model string (``vllm:...``, ``M@http://host/v1``, ``scripted:FILE.jsonl``), an
    :class:`~veriforge.llm.client.LLMClient`, or a callable ``messages -> text`` (sync or async).
    ``baseline``: ``"auto"`` (the task's first implementation), a source file, seconds, an
    EvalResult, or None (speed not scored). ``config``: a reward preset or
    :class:`~veriforge.cudaperf.reward.RewardConfig`. With a ``store`` every answer and attempt is
    recorded as it happens, and ``run_id`` resumes an interrupted run: recorded turns are replayed
    without asking the model or evaluating again. The run folder (``out_dir/run_id``, default
    ``$VERIFORGE_HOME/cudaperf-refine/run_id``) gets report.html, attempts.jsonl and the best source.
    """
    return asyncio.run(refine_task_async(task, policy, turns=turns, backend=backend, store=store, config=config,
                                         baseline=baseline, run_id=run_id, out_dir=out_dir, gpu=gpu,
                                         temperature=temperature, max_tokens=max_tokens, report=report,
                                         on_attempt=on_attempt))
