"""The engine: runs ReM-MoA and its baselines over one question, layer by layer.

Every method shares the same machinery — agents called concurrently per layer, every output stored
as a :class:`~veriforge.moa.memory.Trace`, per-run accounting — and differs only in what each
layer is shown and how the final answer is made:

=================  ============================================================================
``rem_moa``        layer 0 independent; after each layer the Reviewer ranks the whole memory;
                   each next-layer agent gets its own routed mix of strong and failed traces;
                   final answer from the top ``final.k`` of the memory (weighted_vote / top / vote / aggregate)
``moa``            Together's MoA: each layer sees the previous layer's answers through one
                   aggregate-and-synthesize prompt; a final aggregator over the last layer
``self_moa``       the same, but every layer is the first proposer sampled ``width`` times
``self_consistency``  the first proposer sampled ``depth × width`` times; majority vote
``single``         the first proposer, once
=================  ============================================================================

Determinism: every call carries a seed derived from ``(config.seed, layer, agent)``, and samples
of one call are distinct sample indices, so a scripted back-end replays a run exactly and a cache
never collapses ``n`` samples into one.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from veriforge.core.hashing import content_hash
from veriforge.errors import VeriforgeError
from veriforge.llm.types import ChatRequest, Message
from veriforge.moa.accounting import MeteredClient, RunAccount
from veriforge.moa.config import AgentConfig, MoAConfig
from veriforge.moa.errors import MoAConfigError, MoAError
from veriforge.moa.extract import Extracted, Extractor, Verifier, as_extracted, default_extractor
from veriforge.moa.memory import RankedTrace, ReasoningMemory, RefShown, Trace
from veriforge.moa.prompts import aggregate_messages, proposer_messages
from veriforge.moa.reviewer import Reviewer
from veriforge.moa.reviewers import check_reviewer, make_backend
from veriforge.moa.routing import Route, previous_layer_route, reference_diversity, route_layer, select_within_budget
from veriforge.moa.tokens import TokenCounter, estimate_tokens

if TYPE_CHECKING:
    from veriforge.core.store import RunStore

__all__ = ["RUN_KIND", "LayerStats", "MoAEngine", "MoAResult", "majority_vote"]

RUN_KIND = "moa"
#: Run-state key of a run's spend so far (a resumed run continues its account from it).
STATE_SPEND = "moa.spend"

ClientSource = Mapping[str, Any] | Callable[[str], Any]


class LayerStats(BaseModel):
    """What happened in one layer: traces, parse failures, reference diversity, dropped references,
    and the Reviewer's comparisons (``inconsistent``: preferences that flipped with the order;
    ``skipped_comparisons``: pairs whose outcome was known — identical responses or equal parsed
    answers — recorded as ties without a request, included in ``comparisons``)."""

    layer: int
    traces: int
    parsed: int
    distinct_answers: int
    diversity: dict[str, float] = Field(default_factory=dict)
    dropped_refs: int = 0
    comparisons: int = 0
    inconsistent: int = 0
    failed_comparisons: int = 0
    skipped_comparisons: int = 0


class MoAResult(BaseModel):
    """The answer of a run, the ranking it came from, and what it cost.

    ``account`` and ``seconds`` (engine time) cover every attempt of a resumed run. For ReM-MoA,
    ``policy_texts``/``policy_answers`` hold what every final-answer policy would have
    answered (``aggregate`` only when it ran), so a benchmark can score them all from one run.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_id: str
    method: str
    question: str
    answer: str | None
    parsed: bool
    text: str
    final_refs: list[str] = Field(default_factory=list)
    ranking: list[RankedTrace] = Field(default_factory=list)
    layers: list[LayerStats] = Field(default_factory=list)
    account: dict[str, Any] = Field(default_factory=dict)
    resumed_layers: int = 0
    seconds: float = 0.0
    policy_texts: dict[str, str] = Field(default_factory=dict)
    policy_answers: dict[str, str | None] = Field(default_factory=dict)
    memory: ReasoningMemory | None = Field(default=None, exclude=True, repr=False)

    @property
    def total_tokens(self) -> int:
        return int(self.account.get("total_tokens", 0))


def majority_vote(answers: Sequence[str | None], weights: Sequence[float] | None = None) -> str | None:
    """The answer with the most (weighted) votes; ties go to the one that appeared first; ``None`` if
    none parsed. ``weights`` (one per answer, default 1) makes it a weighted vote."""
    totals: dict[str, float] = {}
    for k, a in enumerate(answers):
        if a is not None:
            totals[a] = totals.get(a, 0.0) + (1.0 if weights is None else weights[k])
    if not totals:
        return None
    best = max(totals.values())
    return next(a for a in totals if totals[a] >= best - 1e-12)


def _seed(*parts: Any) -> int:
    return int(content_hash("moa-seed", *[str(p) for p in parts])[:8], 16)


class MoAEngine:
    """Runs one :class:`MoAConfig` over questions.

    ``clients`` maps model strings to ready clients, or is a factory ``model -> client``; by
    default clients come from :func:`veriforge.llm.create_client` (with ``settings`` and ``store``,
    so the request cache persists). ``default_model`` fills agents without a model (then
    ``settings.llm.model``). ``store`` (a :class:`~veriforge.core.store.RunStore`) persists the
    memory and run; ``None`` keeps it in memory only (simulations). ``extractor`` reads answers,
    ``verifier`` checks them (stored as ``Trace.verified``, never used as a reviewer rating).
    """

    def __init__(
        self,
        config: MoAConfig,
        *,
        clients: ClientSource | None = None,
        default_model: str | None = None,
        settings: Any | None = None,
        store: RunStore | None = None,
        extractor: Extractor = default_extractor,
        verifier: Verifier | None = None,
        token_counter: TokenCounter = estimate_tokens,
    ) -> None:
        self.config = config
        self.default_model = default_model
        self.settings = settings
        self.store = store
        self.extractor = extractor
        self.verifier = verifier
        self.count = token_counter
        self._clients: dict[str, Any] = {}
        self._client_source = clients
        self._owned: list[Any] = []
        for model in config.models():  # fail before any call when a model is missing
            self.model_name(model)
        if config.method == "rem_moa":
            check_reviewer(config.reviewer)  # a bad reward_model path or judge fails here, before any request

    # -------------------------------------------------------------------- clients

    def model_name(self, model: str | None) -> str:
        """The model string an agent uses (its own, else the default, else the settings')."""
        name = model or self.default_model
        if not name and self.settings is not None:
            name = getattr(getattr(self.settings, "llm", self.settings), "model", None)
        if not name and isinstance(self._client_source, Mapping) and len(self._client_source) == 1:
            name = next(iter(self._client_source))
        if not name:
            from veriforge.llm.naming import no_model_message

            raise MoAConfigError("ReM-MoA: an agent has no model. Set `model` for each [[proposers]] entry "
                                 "(and [aggregator], [reviewer]) in the MoA config, or a default model. "
                                 + no_model_message())
        return name

    def client(self, model: str | None) -> Any:
        name = self.model_name(model)
        if name not in self._clients:
            source = self._client_source
            if isinstance(source, Mapping):
                if name not in source:
                    raise MoAConfigError(f"no client given for model {name!r} (have: {', '.join(source)})")
                self._clients[name] = source[name]
            elif callable(source):
                self._clients[name] = source(name)
            else:
                from veriforge.llm.factory import create_client

                llm = getattr(self.settings, "llm", self.settings)
                client = create_client(name, llm, self.store)
                self._owned.append(client)
                self._clients[name] = client
        return self._clients[name]

    async def aclose(self) -> None:
        """Close the clients this engine created (not the ones it was given)."""
        for client in self._owned:
            await client.aclose()
        self._owned.clear()

    # ------------------------------------------------------------------------ run

    async def run(self, question: str, *, run_id: str | None = None) -> MoAResult:
        """Answer ``question``; with a store and an unfinished ``run_id``, resume after its stored layers."""
        cfg = self.config
        memory, run_id = self._open(question, run_id)
        account = RunAccount.from_dict(self.store.get_state(run_id, STATE_SPEND) if self.store is not None else None)
        resumed = memory.layers_done
        try:
            result = await self._dispatch(question, memory, account)
        except BaseException:
            if self.store is not None:
                self._checkpoint(memory, account)
                self.store.finish_run(run_id, "failed")
            raise
        result = result.model_copy(update={"question": question, "account": account.to_dict(),
                                           "seconds": account.seconds, "resumed_layers": resumed,
                                           "memory": memory})
        if self.store is not None:
            self._checkpoint(memory, account)
            summary = {"answer": result.answer, "parsed": result.parsed, "account": result.account,
                       "method": cfg.method}
            self.store.finish_run(run_id, "done", summary)
        return result

    def _checkpoint(self, memory: ReasoningMemory, account: RunAccount) -> None:
        """Store the run's spend so far: after a kill, a resumed run's account still covers every
        request whose answer was kept (each agent's traces, each verdict, each finished layer)."""
        if self.store is not None:
            self.store.set_state(memory.run_id, STATE_SPEND, account.to_state())

    def spent(self, run_id: str) -> dict[str, Any]:
        """A stored run's spend so far (``MoAResult.account`` layout, with ``seconds``), e.g. of a run
        that failed; empty without a store or before the first checkpoint."""
        return dict(self.store.get_state(run_id, STATE_SPEND) or {}) if self.store is not None else {}

    def _open(self, question: str, run_id: str | None) -> tuple[ReasoningMemory, str]:
        import uuid

        if self.store is None:
            rid = run_id or uuid.uuid4().hex[:12]
            return ReasoningMemory(rid, None), rid
        rid = self.store.start_run(RUN_KIND, {"question": question, "config": self.config.model_dump(mode="json")},
                                   run_id)
        return ReasoningMemory.load(self.store, rid), rid

    async def _dispatch(self, question: str, memory: ReasoningMemory, account: RunAccount) -> MoAResult:
        method = self.config.method
        if method == "rem_moa":
            return await self._rem_moa(question, memory, account)
        if method in ("moa", "self_moa"):
            return await self._moa(question, memory, account, self_moa=method == "self_moa")
        if method == "self_consistency":
            return await self._self_consistency(question, memory, account)
        if method == "single":
            return await self._single(question, memory, account)
        raise MoAConfigError(f"unknown method {method!r}")

    # -------------------------------------------------------------------- methods

    async def _rem_moa(self, question: str, memory: ReasoningMemory, account: RunAccount) -> MoAResult:
        cfg = self.config
        agents = cfg.layer_agents()
        backend = make_backend(cfg.reviewer,
                               lambda: MeteredClient(self.client(cfg.reviewer_model()), account, "reviewer",
                                                     journal=memory if self.store is not None else None,
                                                     checkpoint=lambda: self._checkpoint(memory, account)))
        reviewer = Reviewer(config=cfg.reviewer, seed=cfg.seed, backend=backend)
        stats: list[LayerStats] = []
        names = [a.name or "" for a in agents]
        for layer in range(cfg.depth):
            routes = self._routes(memory, layer, agents, lambda view, layer=layer: route_layer(
                view, names, cfg.routing, layer, self.count))
            await self._propose_layer(question, memory, account, layer, agents, routes, style="rem")
            unreviewed = [t.id for t in memory.proposals()
                          if t.layer <= layer and (memory.ratings is None or t.id not in memory.ratings.scores)]
            review = (await reviewer.review(memory, question, unreviewed, upto_layer=layer,
                                            checkpoint=lambda: self._checkpoint(memory, account))
                      if unreviewed else None)
            self._checkpoint(memory, account)
            stats.append(self._stats(memory, layer, routes, review))
            self._event(memory, "layer", stats[-1].model_dump(mode="json"))
        return await self._final_rem(question, memory, account, stats)

    async def _moa(self, question: str, memory: ReasoningMemory, account: RunAccount, *,
                   self_moa: bool) -> MoAResult:
        cfg = self.config
        if self_moa:
            first = cfg.layer_agents()[0]
            agents = [first.model_copy(update={"name": first.name or "agent0", "n": cfg.layer_width})]
        else:
            agents = cfg.layer_agents()
        stats: list[LayerStats] = []
        names = [a.name or "" for a in agents]
        for layer in range(cfg.depth):
            routes = self._routes(memory, layer, agents, lambda view, layer=layer: previous_layer_route(
                view, names, layer, cfg.routing.max_reference_tokens, self.count))
            await self._propose_layer(question, memory, account, layer, agents, routes, style="moa")
            stats.append(self._stats(memory, layer, routes, None))
            self._event(memory, "layer", stats[-1].model_dump(mode="json"))
        last = memory.layer(cfg.depth - 1)
        refs, dropped = select_within_budget(last, cfg.final.max_reference_tokens, self.count)
        trace = await self._aggregate(question, memory, account, refs, dropped, style="moa")
        return self._result(memory, trace.reasoning, self._extract(trace.reasoning), [r.id for r in refs], stats)

    async def _self_consistency(self, question: str, memory: ReasoningMemory, account: RunAccount) -> MoAResult:
        cfg = self.config
        first = cfg.layer_agents()[0]
        agent = first.model_copy(update={"n": cfg.depth * cfg.layer_width})
        await self._propose_layer(question, memory, account, 0, [agent], [Route(agent="")], style="rem")
        traces = memory.layer(0)
        winner = majority_vote([t.answer for t in traces])
        chosen = next((t for t in traces if winner is not None and t.answer == winner), traces[0])
        stats = [self._stats(memory, 0, [], None)]
        extracted = Extracted(winner, winner is not None, "majority vote")
        return self._result(memory, chosen.reasoning, extracted, [t.id for t in traces], stats)

    async def _single(self, question: str, memory: ReasoningMemory, account: RunAccount) -> MoAResult:
        agent = self.config.layer_agents()[0].model_copy(update={"n": 1})
        await self._propose_layer(question, memory, account, 0, [agent], [Route(agent="")], style="rem")
        trace = memory.layer(0)[0]
        extracted = Extracted(trace.answer, trace.parsed, "single")
        return self._result(memory, trace.reasoning, extracted, [trace.id], [self._stats(memory, 0, [], None)])

    # ------------------------------------------------------------------- pieces

    @staticmethod
    def _stored(memory: ReasoningMemory, layer: int, index: int, agent: AgentConfig) -> list[Trace]:
        """Agent ``index``'s traces of ``layer`` if all its samples are stored (a resumed run), else []."""
        prefix = f"L{layer}A{index}s"
        mine = [t for t in memory.layer(layer) if t.id.startswith(prefix)]
        return mine if len(mine) >= agent.n else []

    def _routes(self, memory: ReasoningMemory, layer: int, agents: Sequence[AgentConfig],
                route: Callable[[ReasoningMemory], list[Route]]) -> list[Route]:
        """What each agent of ``layer`` is shown. A fully stored layer keeps the references its traces
        record; otherwise ``route`` runs over the memory. Routing only ever considers traces of earlier
        layers and ratings of finished reviews, so agents resumed after a kill (with some of their
        layer's traces already stored) get exactly the references their interrupted call had."""
        stored = [self._stored(memory, layer, k, a) for k, a in enumerate(agents)]
        if all(stored):
            return [Route(agent=a.name or "", refs=list(t[0].references), dropped=list(t[0].dropped))
                    for a, t in zip(agents, stored, strict=True)]
        if layer == 0:
            return [Route(agent=a.name or "") for a in agents]
        return route(memory)

    async def _propose_layer(
        self, question: str, memory: ReasoningMemory, account: RunAccount, layer: int,
        agents: Sequence[AgentConfig], routes: Sequence[Route], *, style: str,
    ) -> list[Trace]:
        """Call every agent of a layer concurrently (one trace per sample), skipping agents whose traces
        are already stored; each agent's traces are stored as soon as its call returns."""

        async def one(k: int, agent: AgentConfig, route: Route) -> list[Trace]:
            done = self._stored(memory, layer, k, agent)
            if done:
                return done
            traces = await self._propose(question, memory, account, layer, k, agent, route, style)
            memory.persist(traces)
            self._checkpoint(memory, account)
            return traces

        batches = await asyncio.gather(*(one(k, a, r) for k, (a, r) in
                                         enumerate(zip(agents, routes, strict=True))))
        traces = [t for batch in batches for t in batch]
        memory.add((t for t in traces if t.id not in memory), persist=False)  # each stored as it came
        return traces

    async def _propose(
        self, question: str, memory: ReasoningMemory, account: RunAccount, layer: int, index: int,
        agent: AgentConfig, route: Route, style: str,
    ) -> list[Trace]:
        cfg = self.config
        messages = proposer_messages(question, cfg.instruction, agent.system, route.refs, memory, style=style)
        model = self.model_name(agent.model)
        request = ChatRequest(messages=messages, n=agent.n, temperature=agent.temperature, top_p=agent.top_p,
                              max_tokens=agent.max_tokens, seed=_seed(cfg.seed, layer, index, agent.name))
        response = await self.client(agent.model).chat(request)
        account.add("proposers", response)
        prompt = _render(messages)
        share = _split_prompt_tokens(response.usage.prompt_tokens, len(response.completions))
        traces = []
        for position, completion in enumerate(response.completions):
            extracted = self._extract(completion.text)
            cached = response.cached[position] if position < len(response.cached) else False
            fresh_single = len(response.completions) == 1 and not cached
            traces.append(Trace(
                id=f"L{layer}A{index}s{completion.index}", layer=layer, agent=agent.name or f"agent{index}",
                model=model, system=agent.system, prompt=prompt, reasoning=completion.text,
                answer=extracted.answer, parsed=extracted.parsed, prompt_tokens=share,
                completion_tokens=response.usage.completion_tokens if fresh_single else self.count(completion.text),
                finish_reason=completion.finish_reason, references=list(route.refs), dropped=list(route.dropped),
                verified=await self._verify(question, extracted.answer),
                meta={"extracted_by": extracted.how, "cached": cached},
            ))
        return traces

    async def _aggregate(
        self, question: str, memory: ReasoningMemory, account: RunAccount, refs: Sequence[RefShown],
        dropped: Sequence[Any], *, style: str,
    ) -> Trace:
        if not refs:
            raise MoAError("nothing to aggregate: every reference exceeded final.max_reference_tokens "
                           f"({len(dropped)} dropped); raise the budget")
        if "final" in memory:  # a resumed run whose aggregation was stored before the kill
            return memory["final"]
        cfg = self.config
        agent = cfg.aggregator_agent()
        messages = aggregate_messages(question, cfg.instruction, refs, memory, style=style)
        request = ChatRequest(messages=messages, n=1, temperature=agent.temperature, top_p=agent.top_p,
                              max_tokens=agent.max_tokens, seed=_seed(cfg.seed, "final"))
        response = await self.client(agent.model).chat(request)
        account.add("aggregator", response)
        extracted = self._extract(response.text)
        trace = Trace(id="final", layer=cfg.depth, agent=agent.name or "aggregator",
                      model=self.model_name(agent.model), role="aggregator", prompt=_render(messages),
                      reasoning=response.text, answer=extracted.answer, parsed=extracted.parsed,
                      prompt_tokens=response.usage.prompt_tokens, completion_tokens=response.usage.completion_tokens,
                      finish_reason=response.completions[0].finish_reason, references=list(refs),
                      dropped=list(dropped), verified=await self._verify(question, extracted.answer))
        memory.add([trace])
        return trace

    async def _final_rem(self, question: str, memory: ReasoningMemory, account: RunAccount,
                         stats: list[LayerStats]) -> MoAResult:
        final = self.config.final
        ranked = memory.ranking()
        top = [memory[i] for i in ranked[: final.k]]
        choices = _free_policies(top)
        texts = {name: trace.reasoning for name, (trace, _) in choices.items()}
        answers = {name: answer for name, (_, answer) in choices.items()}
        if final.policy == "aggregate" or final.evaluate_all:
            rank = {tid: k for k, tid in enumerate(ranked, start=1)}
            refs, dropped = select_within_budget(top, final.max_reference_tokens, self.count,
                                                 label="good", label_source="reviewer")
            refs = [r.model_copy(update={"rank": rank[r.id]}) for r in refs]
            trace = await self._aggregate(question, memory, account, refs, dropped, style="rem")
            extracted = self._extract(trace.reasoning)
            texts["aggregate"], answers["aggregate"] = trace.reasoning, extracted.answer
            if final.policy == "aggregate":
                result = self._result(memory, trace.reasoning, extracted, [r.id for r in refs], stats)
                return result.model_copy(update={"policy_texts": texts, "policy_answers": answers})
        chosen, answer = choices[final.policy]
        how = {"top": "top-ranked", "vote": "vote over top-k", "weighted_vote": "rank-weighted vote over top-k"}
        refs_used = [chosen.id] if final.policy == "top" else [t.id for t in top]
        result = self._result(memory, chosen.reasoning, Extracted(answer, answer is not None, how[final.policy]),
                              refs_used, stats)
        return result.model_copy(update={"policy_texts": texts, "policy_answers": answers})

    def _result(self, memory: ReasoningMemory, text: str, extracted: Extracted, refs: list[str],
                stats: list[LayerStats]) -> MoAResult:
        ranking = memory.ranked() if memory.ratings is not None else []
        return MoAResult(run_id=memory.run_id, method=self.config.method, question="", answer=extracted.answer,
                         parsed=extracted.parsed, text=text, final_refs=refs, ranking=ranking, layers=stats)

    def _extract(self, text: str) -> Extracted:
        return as_extracted(self.extractor(text))

    async def _verify(self, question: str, answer: str | None) -> bool | None:
        if self.verifier is None:
            return None
        try:
            out = self.verifier(question, answer)
            if inspect.isawaitable(out):
                out = await out
        except VeriforgeError:
            return None  # the verifier could not run (sandbox, toolchain): unknown, not failed
        return None if out is None else bool(out)

    def _stats(self, memory: ReasoningMemory, layer: int, routes: Sequence[Route], review: Any) -> LayerStats:
        traces = memory.layer(layer)
        answers = {t.answer for t in traces if t.answer is not None}
        with_refs = [r for r in routes if r.refs]
        outcomes = review.outcomes if review is not None else []
        return LayerStats(
            layer=layer, traces=len(traces), parsed=sum(t.parsed for t in traces), distinct_answers=len(answers),
            diversity=reference_diversity(with_refs, memory) if len(with_refs) > 1 else {},
            dropped_refs=sum(len(r.dropped) for r in routes), comparisons=len(outcomes),
            inconsistent=sum(1 for o in outcomes if o.consistent is False),
            failed_comparisons=sum(1 for o in outcomes if o.failed),
            skipped_comparisons=sum(1 for o in outcomes if o.meta.get("skipped")),
        )

    def _event(self, memory: ReasoningMemory, kind: str, payload: dict[str, Any]) -> None:
        if self.store is not None:
            self.store.add_event(memory.run_id, kind, payload)


def _free_policies(top: Sequence[Trace]) -> dict[str, tuple[Trace, str | None]]:
    """What each request-free final policy answers from the ranked ``top`` traces (best first): the
    trace whose text stands for the answer, and the answer. A vote's text is the best-ranked trace
    that gave the winning answer."""
    answers = [t.answer for t in top]

    def pick(winner: str | None) -> tuple[Trace, str | None]:
        return next((t for t in top if winner is not None and t.answer == winner), top[0]), winner

    return {
        "top": (top[0], top[0].answer),
        "vote": pick(majority_vote(answers)),
        "weighted_vote": pick(majority_vote(answers, [1.0 / r for r in range(1, len(top) + 1)])),
    }


def _render(messages: Sequence[Message]) -> str:
    """The prompt as stored in a trace: each message as ``[role]`` and its content."""
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in messages)


def _split_prompt_tokens(prompt_tokens: int, samples: int) -> int:
    """The prompt is billed once per call; each of its samples is charged an equal share (a trace's
    ``completion_tokens`` is the bill for a lone fresh sample, else the counter's estimate of its text;
    exact spend is in the run's account)."""
    return prompt_tokens // samples if samples else prompt_tokens


