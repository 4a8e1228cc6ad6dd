"""OptiML-G: the Mixture-of-Thoughts generator — a task in, the best verified kernel out.

Why several thoughts: one prompt for "a fast kernel" tends to yield the same design every time; a
named strategy per conversation (one thread per element, grid-stride, tiling, warp primitives,
vectorised access, fused pass — :mod:`veriforge.optiml.thoughts`) spreads the candidates over
different designs. Each thought is one multi-turn conversation driven by the shared refine loop
(:func:`veriforge.search.refine.refine`): the model answers with a PLAN and a complete ``.cu``
file, the candidate is compiled and verified by :func:`veriforge.cuda.evaluate.evaluate` (CPU
back-end by default), and a failure comes back as feedback — compiler errors pinned to the
candidate's lines, or the failing configurations with the wrong elements — for up to ``rounds``
turns. Thoughts run concurrently (model calls on the event loop, evaluations in worker threads).

The winner is the verified candidate with the best objective: by default the composite objective
of :mod:`veriforge.optiml.objective` (runtime estimated by the cost model on the CPU back-end, or
measured on a GPU, nudged by bottleneck proxies) — the same number OptiML-X then minimises. A
verified candidate without a time of that provenance on *every* configuration (e.g. an estimate
left unknown because the analysis could not count some of its work) has no objective, ranks after
every candidate that has one and keeps the reason (``unscored_reason``); numbers of different
provenances are never compared. Every thought's
outcome is reported, not just the winner's.

Natural-language input: a description alone cannot be verified — there is no reference to check
against — so a generation always runs against a task (a bundled id or a task folder, whose
reference and inputs decide correctness). The user's words are passed to the model next to the
task's contract; the contract is authoritative.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veriforge.core.hashing import content_hash
from veriforge.errors import ConfigError, VeriforgeError
from veriforge.optiml.prompts import (
    GENERATION_SYSTEM,
    compile_feedback,
    extract_code,
    extract_plan,
    feedback_message,
    generation_prompt,
    verify_feedback,
)
from veriforge.optiml.thoughts import Thought, default_thoughts

if TYPE_CHECKING:
    from veriforge.cuda.evaluate.result import EvalResult
    from veriforge.cuda.tasks.schema import TaskSpec
    from veriforge.llm import LLMClient

__all__ = [
    "GenerationResult",
    "Generator",
    "GeneratorConfig",
    "GeneratorError",
    "RoundRecord",
    "ThoughtOutcome",
    "default_objective",
    "estimated_time_objective",
    "generate",
    "resolve_client",
    "resolve_generation_task",
    "unscored_reason",
]

log = logging.getLogger(__name__)

#: Provenances from most to least trustworthy; a candidate is ranked by this first.
PROVENANCE_ORDER = ("measured", "estimated", "emulated")

#: ``objective(eval_result) -> (value or None, provenance)``; lower is better.
ObjectiveFn = Callable[["EvalResult"], tuple[float | None, str | None]]


class GeneratorError(VeriforgeError):
    """OptiML-G cannot run as asked (no task to verify against, an unsupported task family)."""


class GeneratorConfigError(GeneratorError, ConfigError):
    """The generation request is missing something only the user can supply (e.g. ``--task``)."""


@dataclass
class GeneratorConfig:
    """How a generation runs.

    ``rounds``: turns per thought (the first answer plus ``rounds - 1`` feedback rounds);
    ``concurrency``: thoughts in flight at once; ``temperature``/``max_tokens`` go to every model
    call (None: the server's default); ``backend``/``trials``/``configs``/``timeout`` go to
    :func:`~veriforge.cuda.evaluate.evaluate` (``configs=None`` checks every configuration).
    """

    rounds: int = 3
    concurrency: int = 4
    backend: str = "cpu"
    temperature: float | None = None
    max_tokens: int | None = None
    trials: int = 2
    configs: list[str] | None = None
    timeout: float | None = None

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise GeneratorConfigError("rounds must be >= 1")
        if self.concurrency < 1:
            raise GeneratorConfigError("concurrency must be >= 1")
        if self.backend not in ("cpu", "gpu"):
            raise GeneratorConfigError(f"backend must be cpu or gpu, got {self.backend!r}")


@dataclass
class RoundRecord:
    """One turn of one thought: what the check said and, if verified, the objective."""

    turn: int
    status: str  # verified | compile_error | incorrect | rejected | no_code | error | repeat
    feedback: str
    candidate_hash: str | None = None
    objective: float | None = None
    provenance: str | None = None
    seconds: float = 0.0
    unscored_reason: str | None = None  # verified but no objective: why (e.g. an estimate unknown)

    def to_dict(self) -> dict[str, Any]:
        return {"turn": self.turn, "status": self.status, "feedback": self.feedback,
                "candidate_hash": self.candidate_hash, "objective": self.objective,
                "provenance": self.provenance, "unscored_reason": self.unscored_reason,
                "seconds": round(self.seconds, 4)}


@dataclass
class ThoughtOutcome:
    """Everything one thought produced: its best candidate, status, plan and every round."""

    thought: Thought
    status: str  # verified | compile_error | incorrect | rejected | no_code | error | llm_error
    source: str | None = None
    plan: str = ""
    objective: float | None = None
    provenance: str | None = None
    rounds: list[RoundRecord] = field(default_factory=list)
    error: str = ""
    eval_result: dict[str, Any] | None = None
    trajectory: dict[str, Any] | None = None
    unscored_reason: str | None = None  # verified without an objective: why; ranks after scored ones

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    def to_dict(self, *, full: bool = False) -> dict[str, Any]:
        """JSON form; ``full`` adds the evaluation result and the conversation trajectory."""
        out: dict[str, Any] = {
            "thought": self.thought.name,
            "title": self.thought.title,
            "status": self.status,
            "verified": self.verified,
            "objective": self.objective,
            "provenance": self.provenance,
            "unscored_reason": self.unscored_reason,
            "plan": self.plan,
            "rounds": [r.to_dict() for r in self.rounds],
            "error": self.error,
            "source": self.source,
        }
        if full:
            out["eval_result"] = self.eval_result
            out["trajectory"] = self.trajectory
        return out


@dataclass
class GenerationResult:
    """The generation's outcome: the winning thought and source, and every thought's outcome."""

    task_id: str
    request: str | None
    backend: str
    objective_name: str
    outcomes: list[ThoughtOutcome]
    winner: str | None = None
    seconds: float = 0.0

    @property
    def success(self) -> bool:
        return self.winner is not None

    @property
    def best(self) -> ThoughtOutcome | None:
        return next((o for o in self.outcomes if o.thought.name == self.winner), None)

    @property
    def source(self) -> str | None:
        best = self.best
        return best.source if best is not None else None

    def to_dict(self, *, full: bool = False) -> dict[str, Any]:
        best = self.best
        return {
            "task_id": self.task_id,
            "request": self.request,
            "backend": self.backend,
            "objective_name": self.objective_name,
            "winner": self.winner,
            "objective": best.objective if best else None,
            "provenance": best.provenance if best else None,
            "seconds": round(self.seconds, 3),
            "thoughts": [o.to_dict(full=full) for o in self.outcomes],
        }

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Write ``generated.cu`` (the winner, if any), ``generation.json`` (full outcome) and
        ``thoughts/<name>.cu`` (each thought's best candidate) under ``out_dir``."""
        out = Path(out_dir)
        (out / "thoughts").mkdir(parents=True, exist_ok=True)
        paths: dict[str, Path] = {}
        for o in self.outcomes:
            if o.source:
                p = out / "thoughts" / f"{o.thought.name}.cu"
                p.write_text(o.source, encoding="utf-8")
                paths[f"thought:{o.thought.name}"] = p
        if self.source:
            paths["kernel"] = out / "generated.cu"
            paths["kernel"].write_text(self.source, encoding="utf-8")
        paths["json"] = out / "generation.json"
        paths["json"].write_text(json.dumps(self.to_dict(full=True), indent=2), encoding="utf-8")
        return paths


# ------------------------------------------------------------------------------------------------
# Objective


def estimated_time_objective(res: EvalResult) -> tuple[float | None, str | None]:
    """Total ``time_s`` over the task's configurations of the first provenance (measured,
    estimated, emulated) that has a time for every configuration (never a mix of provenances,
    never a subset of the configurations)."""
    from veriforge.optiml.objective import score_time

    configs = [r.config for r in res.verdict.results]
    for provenance in PROVENANCE_ORDER:
        ts = score_time(res.measurements, provenance, configs, res.details.get("estimate"))
        if ts.time_s is not None:
            return float(sum(ts.config_times.values())), provenance
    return None, None


def unscored_reason(res: EvalResult, backend: str = "cpu") -> str:
    """Why a verified result has no objective: the configurations without a time of the back-end's
    provenance, with the estimate's reasons (what could not be counted)."""
    from veriforge.optiml.objective import no_score_reason, provenance_for_backend

    provenance = provenance_for_backend(backend)
    why = no_score_reason(res.measurements, provenance, [r.config for r in res.verdict.results],
                          res.details.get("estimate"))
    return why or "the objective gave no value"


def default_objective(backend: str = "cpu") -> tuple[ObjectiveFn, str]:
    """OptiML-X's composite objective (:mod:`veriforge.optiml.objective`) for ``backend`` — the
    same number the optimizer will minimise next — as ``(fn, name)``; the plain time of
    :func:`estimated_time_objective` only if that module cannot be imported."""
    try:
        from veriforge.optiml.objective import composite_objective, provenance_for_backend
    except ImportError:  # pragma: no cover - the module ships with the package
        return estimated_time_objective, "estimated_time"
    provenance = provenance_for_backend(backend)

    def objective(res: EvalResult) -> tuple[float | None, str | None]:
        value = composite_objective(res.measurements, res.features, provenance,
                                    configs=[r.config for r in res.verdict.results],
                                    estimate=res.details.get("estimate"))
        return (value.value, provenance) if value is not None else (None, None)

    return objective, "composite"


def _rank(outcome: ThoughtOutcome) -> tuple[int, float]:
    order = PROVENANCE_ORDER.index(outcome.provenance) if outcome.provenance in PROVENANCE_ORDER \
        else len(PROVENANCE_ORDER)
    return order, (outcome.objective if outcome.objective is not None else math.inf)


# ------------------------------------------------------------------------------------------------
# Resolution of inputs


def resolve_generation_task(request: str | None, task: str | Path | None) -> tuple[TaskSpec, str | None]:
    """The task to verify against and the user's wording (None when the input is a task itself).

    ``task`` (an id or a folder) wins; without it, ``request`` must itself name a task (bundled id,
    ``family/id`` or folder). A description with no task is refused: it cannot be verified.
    """
    from veriforge.cuda.tasks import find_task, load_task
    from veriforge.cuda.tasks.schema import TaskFormatError

    if task is not None:
        spec = load_task(find_task(task))
        words = request.strip() if request and request.strip() and request.strip() != str(task) else None
    else:
        if not request or not request.strip():
            raise GeneratorConfigError("nothing to generate: give a task in words plus --task, "
                                       "or a task id/folder")
        try:
            spec = load_task(find_task(request.strip()))
        except TaskFormatError:
            raise GeneratorConfigError(
                "a task given only in words cannot be verified: there is no reference to check the kernel "
                "against. Pass --task ID|FOLDER — a bundled task whose description matches (see "
                "`veriforge tasks list`) or your own task folder with a reference (docs/tasks.md)."
            ) from None
        words = None
    if spec.family != "c2cuda":
        raise GeneratorError(f"task {spec.id!r} is a {spec.family} task; OptiML-G generates C→CUDA "
                             "(c2cuda) kernels with an extern \"C\" entry point")
    return spec, words


def resolve_client(model: str | None = None, settings: Any | None = None,
                   store: Any | None = None) -> LLMClient:
    """An LLM client for ``model`` or the configured ``llm.model``; a clear error when neither is set."""
    from veriforge.llm import create_client
    from veriforge.llm.errors import LLMConfigError

    if settings is None:
        from veriforge.core.config import active_settings

        settings = active_settings()
    configured = model or getattr(getattr(settings, "llm", None), "model", None)
    if not configured:
        from veriforge.llm.naming import no_model_message

        raise LLMConfigError("OptiML-G needs a language model to write kernels (setting llm.model, or "
                             "--model). " + no_model_message() + " See docs/llm.md.")
    llm_settings = getattr(settings, "llm", None)
    return create_client(configured, llm_settings, store=store)


# ------------------------------------------------------------------------------------------------
# The generator


@dataclass
class _Proposal:
    """One model answer: the extracted code (empty if none), the plan and the raw reply."""

    source: str
    reply: str
    plan: str
    has_code: bool

    @property
    def hash(self) -> str:
        return content_hash("optiml-g", self.source if self.has_code else "no-code:" + self.reply)


class Generator:
    """Mixture-of-Thoughts generation for one task with one model client.

    ``objective`` overrides the ranking (``fn(eval_result) -> (value, provenance)``, lower is
    better); ``store`` (a RunStore) caches evaluations across thoughts and runs.
    """

    def __init__(self, client: LLMClient, task: TaskSpec, *, thoughts: Sequence[Thought] | None = None,
                 config: GeneratorConfig | None = None, store: Any | None = None,
                 objective: ObjectiveFn | None = None, objective_name: str | None = None,
                 on_event: Callable[[str, dict[str, Any]], None] | None = None) -> None:
        self.client = client
        self.task = task
        self.thoughts = list(thoughts) if thoughts is not None else default_thoughts()
        if not self.thoughts:
            raise GeneratorConfigError("no thoughts to run")
        self.config = config or GeneratorConfig()
        self.store = store
        if objective is None:
            self.objective, self.objective_name = default_objective(self.config.backend)
        else:
            self.objective = objective
            self.objective_name = objective_name or getattr(objective, "__name__", "custom")
        self.on_event = on_event

    def _emit(self, kind: str, **payload: Any) -> None:
        if self.on_event is not None:
            self.on_event(kind, payload)

    async def run(self, request: str | None = None) -> GenerationResult:
        """Run every thought (``concurrency`` at a time) and pick the winner."""
        started = time.perf_counter()
        gate = asyncio.Semaphore(self.config.concurrency)

        async def one(thought: Thought) -> ThoughtOutcome:
            async with gate:
                return await self._run_thought(thought, request)

        outcomes = list(await asyncio.gather(*(one(t) for t in self.thoughts)))
        verified = [o for o in outcomes if o.verified]
        winner = min(verified, key=_rank).thought.name if verified else None
        result = GenerationResult(task_id=self.task.id, request=request, backend=self.config.backend,
                                  objective_name=self.objective_name, outcomes=outcomes, winner=winner,
                                  seconds=time.perf_counter() - started)
        self._emit("done", winner=winner)
        return result

    def run_sync(self, request: str | None = None) -> GenerationResult:
        return asyncio.run(self.run(request))

    # --------------------------------------------------------------------------------------------

    async def _run_thought(self, thought: Thought, request: str | None) -> ThoughtOutcome:
        from veriforge.llm.errors import LLMRequestError
        from veriforge.search.refine import refine

        spec = self.task
        prompt = generation_prompt(spec, thought, request)
        replies: list[str] = []
        records: list[RoundRecord] = []
        results: dict[str, EvalResult] = {}

        async def propose(traj: Any) -> _Proposal:
            messages = [{"role": "system", "content": GENERATION_SYSTEM}]
            assistant_turn = 0
            for m in traj.messages():
                if m["role"] == "assistant":
                    m = {"role": "assistant", "content": replies[assistant_turn]}
                    assistant_turn += 1
                messages.append(m)
            params: dict[str, Any] = {}
            if self.config.temperature is not None:
                params["temperature"] = self.config.temperature
            if self.config.max_tokens is not None:
                params["max_tokens"] = self.config.max_tokens
            resp = await self.client.chat(messages, **params)
            text = resp.text
            replies.append(text)
            code = extract_code(text, spec.entry)
            proposal = _Proposal(source=code or "", reply=text, plan=extract_plan(text),
                                 has_code=code is not None)
            earlier = next((r for r in records if r.candidate_hash == proposal.hash), None)
            if earlier is not None:  # refine reuses the earlier verification; keep the turn on record
                records.append(RoundRecord(turn=len(replies) - 1, status="repeat",
                                           candidate_hash=proposal.hash,
                                           feedback=f"same candidate as turn {earlier.turn + 1}",
                                           objective=earlier.objective, provenance=earlier.provenance,
                                           unscored_reason=earlier.unscored_reason))
            return proposal

        async def verify(p: _Proposal) -> Any:
            return await self._verify(thought, p, len(replies) - 1, records, results)

        try:
            run = await refine(propose, verify, turns=self.config.rounds, task_id=spec.id, prompt=prompt,
                               trajectory_id=f"optiml-g-{spec.id}-{thought.name}")
        except LLMRequestError as exc:
            log.warning("thought %s: model call failed: %s", thought.name, exc)
            self._emit("thought_done", thought=thought.name, status="llm_error")
            return ThoughtOutcome(thought=thought, status="llm_error", rounds=records, error=str(exc),
                                  source=None)
        best: _Proposal = run.best
        v = run.best_verification
        status = v.details.get("status", "error") if v is not None else "error"
        res = results.get(best.hash)
        outcome = ThoughtOutcome(
            thought=thought, status=status, source=best.source if best.has_code else None, plan=best.plan,
            objective=v.details.get("objective") if v is not None else None,
            provenance=v.details.get("provenance") if v is not None else None,
            unscored_reason=v.details.get("unscored_reason") if v is not None else None,
            rounds=records, eval_result=res.to_dict() if res is not None else None,
            trajectory=run.trajectory.model_dump(mode="json"),
            error="" if status == "verified" else (v.feedback if v is not None else ""),
        )
        self._emit("thought_done", thought=thought.name, status=status, objective=outcome.objective)
        return outcome

    async def _verify(self, thought: Thought, p: _Proposal, turn: int, records: list[RoundRecord],
                      results: dict[str, EvalResult]) -> Any:
        from veriforge.core.types import Candidate
        from veriforge.cuda.evaluate import evaluate
        from veriforge.search.refine import Verification

        spec = self.task
        started = time.perf_counter()

        def record(status: str, feedback: str, **kw: Any) -> None:
            records.append(RoundRecord(turn=turn, status=status, feedback=feedback, candidate_hash=p.hash,
                                       seconds=time.perf_counter() - started, **kw))
            self._emit("round", thought=thought.name, turn=turn, status=status)

        if not p.has_code:
            body = (f"Your answer contained no ```cuda code block with the complete file defining "
                    f"`{spec.entry}`.")
            record("no_code", body)
            return Verification(ok=False, feedback=feedback_message(body, spec.entry),
                                details={"status": "no_code"})
        candidate = Candidate(source=p.source, metadata={"thought": thought.name, "generator": "optiml-g"})
        try:
            res = await asyncio.to_thread(evaluate, spec, candidate, self.config.backend, store=self.store,
                                          trials=self.config.trials, configs=self.config.configs,
                                          timeout=self.config.timeout)
        except (VeriforgeError, ValueError) as exc:
            body = f"The candidate could not be evaluated: {exc}"
            record("error", body)
            return Verification(ok=False, feedback=feedback_message(body, spec.entry),
                                details={"status": "error"})
        results[p.hash] = res
        verdict = res.verdict
        if not verdict.compiled:
            body = compile_feedback(res.log, verdict.reason, p.source)
            record("compile_error", body)
            return Verification(ok=False, feedback=feedback_message(body, spec.entry),
                                details={"status": "compile_error"}, verdict=verdict)
        if not verdict.correct:
            status = ("rejected" if verdict.rejected
                      else "emulation_limit" if res.details.get("emulation_limit") else "incorrect")
            body = verify_feedback(verdict)
            record(status, body)
            return Verification(ok=False, feedback=feedback_message(body, spec.entry),
                                details={"status": status}, verdict=verdict)
        value, provenance = self.objective(res)
        why = unscored_reason(res, self.config.backend) if value is None else None
        shown = f"{value:.4g}" if value is not None else f"unknown ({why})"
        feedback = f"Verified correct on every configuration. Objective ({self.objective_name}): {shown}" + \
            (f" ({provenance})" if provenance else "")
        record("verified", feedback, objective=value, provenance=provenance, unscored_reason=why)
        score = -math.log(value) if value is not None and value > 0 else None
        return Verification(ok=True, score=score, feedback=feedback, verdict=verdict,
                            details={"status": "verified", "objective": value, "provenance": provenance,
                                     "unscored_reason": why})


def generate(task: str | Path | TaskSpec, *, request: str | None = None, model: str | None = None,
             client: LLMClient | None = None, thoughts: Sequence[Thought] | None = None,
             config: GeneratorConfig | None = None, store: Any | None = None, settings: Any | None = None,
             objective: ObjectiveFn | None = None) -> GenerationResult:
    """Synchronous one-call OptiML-G: resolve the task and the model, run every thought."""
    from veriforge.cuda.tasks.schema import TaskSpec

    if isinstance(task, TaskSpec):
        spec = task
    else:
        spec, words = resolve_generation_task(request, task)
        request = words
    own = client is None
    cl = client or resolve_client(model, settings, store)

    async def main() -> GenerationResult:
        try:
            return await Generator(cl, spec, thoughts=thoughts, config=config, store=store,
                                   objective=objective).run(request)
        finally:
            if own:
                await cl.aclose()

    return asyncio.run(main())
