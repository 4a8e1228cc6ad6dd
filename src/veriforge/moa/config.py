"""The ReM-MoA configuration tree (TOML-loadable, validated by pydantic).

One :class:`MoAConfig` describes a whole run: which method (ReM-MoA or a baseline), how deep and
how wide, who the proposers are (model, persona, sampling), who aggregates, how the Reviewer
spends its comparison budget, how routing picks references, and how the final answer is made.
The same tree drives every baseline, so a scaling grid changes only ``method``, ``depth`` and
``width``. A TOML file may hold it at top level or under a ``[moa]`` table::

    method = "rem_moa"
    depth = 3
    width = 3

    [[proposers]]
    name = "careful"
    model = "vllm:Qwen/Qwen2.5-7B-Instruct"
    system = "You are a careful mathematician."
    temperature = 0.7

    [reviewer]
    # reward_model = "runs/distill/reviewer"   # a distilled reviewer instead of the LLM judge
    budget = "swiss"      # all_pairs | swiss | topk
    rounds = 3
    rating = "bradley_terry"

    [routing]
    top_m = 2
    failed_f = 1
    max_reference_tokens = 1500

An agent without ``model`` uses the default model (``--model``, then ``[llm] model``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from veriforge.moa.errors import MoAConfigError

#: What every proposer and aggregator is asked to end with (extractors look for ``Answer:``).
DEFAULT_INSTRUCTION = ("Reason step by step, then give your final answer on the last line in the form "
                       "'Answer: <answer>'.")

__all__ = [
    "FINAL_POLICIES",
    "METHODS",
    "AgentConfig",
    "FinalConfig",
    "Method",
    "MoAConfig",
    "ReviewerConfig",
    "RoutingConfig",
    "load_config",
]

Method = Literal["rem_moa", "moa", "self_moa", "self_consistency", "single"]
METHODS: tuple[str, ...] = ("rem_moa", "moa", "self_moa", "self_consistency", "single")
#: ReM-MoA's final-answer policies (see :class:`FinalConfig`); the free ones need no request.
FINAL_POLICIES: tuple[str, ...] = ("aggregate", "top", "vote", "weighted_vote")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentConfig(_Section):
    """One proposer (or the aggregator): a model, a persona and its sampling settings.

    ``n`` samples are drawn per call (each becomes its own trace).
    """

    name: str | None = None
    model: str | None = None
    system: str | None = None
    temperature: float | None = Field(default=0.7, ge=0.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1)
    n: int = Field(default=1, ge=1)


class ReviewerConfig(_Section):
    """The comparative Reviewer: pairwise judgements, rated by Bradley–Terry or Elo.

    ``kind`` picks who judges a pair (``veriforge.moa.reviewers``): ``llm`` (a chat model, both orders;
    ``model=None`` uses the aggregator's model), ``reward`` (a distilled reward model in the local
    directory ``reward_model``; a tie when scores differ by at most ``tie_margin``) or ``judge`` (any
    ``veriforge.rank`` judge named ``"module:attribute"``). Left unset, it is inferred from which of
    ``reward_model`` / ``judge`` is given (else ``llm``), so the distilled reviewer is one line.

    ``budget`` chooses which pairs are judged after each layer: ``all_pairs`` (every new pair),
    ``swiss`` (``rounds`` Swiss rounds over the whole memory) or ``topk`` (new traces against the
    current top ``k`` and each other). ``max_comparisons`` caps comparisons per layer.
    ``skip_known`` records pairs with identical responses or equal parsed answers as ties without
    asking (counted in ``LayerStats.skipped_comparisons``); ``false`` asks anyway (the ablation).
    """

    kind: Literal["llm", "reward", "judge"] | None = None
    model: str | None = None
    reward_model: str | None = None
    judge: str | None = None
    tie_margin: float = Field(default=0.0, ge=0.0)
    reward_max_length: int = Field(default=512, ge=8)
    skip_known: bool = True
    budget: Literal["all_pairs", "swiss", "topk"] = "topk"
    rounds: int | None = Field(default=None, ge=1)
    k: int = Field(default=3, ge=1)
    max_comparisons: int | None = Field(default=None, ge=0)
    rating: Literal["bradley_terry", "elo"] = "bradley_terry"
    both_orders: bool = True
    temperature: float | None = 0.0
    max_tokens: int | None = Field(default=None, ge=1)
    system: str | None = None
    template: str | None = None
    concurrency: int = Field(default=4, ge=1)

    @model_validator(mode="after")
    def _kind(self) -> ReviewerConfig:
        """Infer ``kind`` and refuse settings that belong to another kind (they would be ignored silently)."""
        if self.reward_model is not None and self.judge is not None:
            raise ValueError("set reward_model or judge, not both")
        inferred = "reward" if self.reward_model is not None else "judge" if self.judge is not None else "llm"
        kind = self.kind or inferred
        if kind == "reward" and self.reward_model is None:
            raise ValueError('kind = "reward" needs reward_model = "PATH" (a `moa distill` output directory)')
        if kind == "judge" and self.judge is None:
            raise ValueError('kind = "judge" needs judge = "module:attribute"')
        if kind != inferred:
            raise ValueError(f"kind = {kind!r} but {inferred} settings are given")
        if kind != "llm" and self.model is not None:
            raise ValueError(f"model is the LLM judge's model; kind = {kind!r} makes no LLM request")
        self.kind = kind
        return self


class RoutingConfig(_Section):
    """Curated Diversified Memory Routing: what each next-layer agent is shown.

    Each agent gets up to ``top_m`` traces from the top ``good_fraction`` of the ranking and up to
    ``failed_f`` from the bottom ``failed_fraction`` (labelled as failed), preferring, in order,
    answers it has not been shown yet (``diversity="answers"``), traces other agents of the layer
    were not given, better rank, newer layer. ``diversity="traces"`` skips the answer criterion;
    ``"none"`` gives every agent the same best traces (an ablation). ``max_layer_age`` limits
    references to the last few layers. ``max_reference_tokens`` is enforced by leaving out whole
    traces (recorded with the reason), never by cutting text. ``use_verifier`` lets verifier
    failures label traces as failed (only for verifiers that do not use the gold answer).
    """

    top_m: int = Field(default=2, ge=0)
    failed_f: int = Field(default=1, ge=0)
    diversity: Literal["answers", "traces", "none"] = "answers"
    good_fraction: float = Field(default=0.5, gt=0.0, le=1.0)
    failed_fraction: float = Field(default=0.34, ge=0.0, le=1.0)
    max_layer_age: int | None = Field(default=None, ge=1)
    max_reference_tokens: int | None = Field(default=2000, ge=1)
    use_verifier: bool = False


class FinalConfig(_Section):
    """How ReM-MoA turns its ranked memory into one answer.

    Policies (over the top ``k`` of the Reviewer's ranking):

    * ``aggregate`` — the aggregator model writes a new answer from the top ``k`` traces (one more
      request, the only policy that costs anything);
    * ``top`` — the top-ranked trace as is;
    * ``vote`` — majority of the extracted answers among the top ``k`` (ties: the better-ranked);
    * ``weighted_vote`` (default) — each of the top ``k`` votes for its answer with weight 1/rank:
      the top trace's answer stands unless runners-up agreeing on another answer outweigh it
      (ranks 2, 3 and 4 together do; 2 and 3 alone do not). With answers that never coincide
      (free text, code) it is ``top``. Chosen as the default from measurements
      (benchmarks/results/moa_final_policy.txt): best or within one standard error of the best
      at every depth and reviewer accuracy tried, and best when the reviewer is weak.

    The free policies are always computed and reported (:attr:`MoAResult.policy_texts`) so the gap
    between them is visible; ``evaluate_all`` also runs the aggregator when another policy answers
    (benchmarks use it to measure every policy in one run; its spend stays in the ``aggregator`` role
    so a non-aggregate policy's cost is the total minus that role).

    Its reference budget is separate from routing's, so a tight proposer budget does not also cap
    the aggregator (a known fault of vanilla MoA implementations).
    """

    policy: Literal["aggregate", "top", "vote", "weighted_vote"] = "weighted_vote"
    k: int = Field(default=4, ge=1)
    max_reference_tokens: int | None = Field(default=6000, ge=1)
    evaluate_all: bool = False


class MoAConfig(_Section):
    """A whole ReM-MoA (or baseline) run. ``width=None`` means one agent per listed proposer.

    ``instruction`` ends every proposer and aggregator prompt (benchmarks set their answer format).
    """

    method: Method = "rem_moa"
    depth: int = Field(default=2, ge=1)
    width: int | None = Field(default=None, ge=1)
    proposers: list[AgentConfig] = Field(default_factory=lambda: [AgentConfig()])
    aggregator: AgentConfig | None = None
    reviewer: ReviewerConfig = Field(default_factory=ReviewerConfig)
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
    final: FinalConfig = Field(default_factory=FinalConfig)
    instruction: str = DEFAULT_INSTRUCTION
    seed: int = 0

    @model_validator(mode="after")
    def _check(self) -> MoAConfig:
        if not self.proposers:
            raise ValueError("at least one proposer is needed")
        return self

    @property
    def layer_width(self) -> int:
        return self.width if self.width is not None else len(self.proposers)

    def layer_agents(self) -> list[AgentConfig]:
        """The agents of one layer: the proposers cycled to ``width``, each with a distinct name."""
        out = []
        for i in range(self.layer_width):
            agent = self.proposers[i % len(self.proposers)]
            name = agent.name or f"agent{i % len(self.proposers)}"
            if i >= len(self.proposers):
                name = f"{name}#{i // len(self.proposers)}"
            out.append(agent.model_copy(update={"name": name}))
        return out

    def aggregator_agent(self) -> AgentConfig:
        """The aggregator: as configured, else the first proposer at temperature 0."""
        if self.aggregator is not None:
            return self.aggregator.model_copy(update={"name": self.aggregator.name or "aggregator"})
        first = self.proposers[0]
        return first.model_copy(update={"name": "aggregator", "temperature": 0.0, "n": 1, "system": None})

    def reviewer_model(self) -> str | None:
        """The LLM judge's model (only meaningful for ``reviewer.kind == "llm"``)."""
        return self.reviewer.model or self.aggregator_agent().model

    def models(self) -> list[str | None]:
        """Every model string the run may call (``None``: the default model); a ``reward`` or ``judge``
        reviewer calls none, so no client is made for it."""
        names: list[str | None] = [a.model for a in self.proposers] + [self.aggregator_agent().model]
        if self.method == "rem_moa" and self.reviewer.kind == "llm":
            names.append(self.reviewer_model())
        return list(dict.fromkeys(names))

    def with_default_model(self, model: str) -> MoAConfig:
        """Fill every unset model (proposers, aggregator, reviewer) with ``model``."""
        data = self.model_dump()
        for agent in data["proposers"]:
            agent["model"] = agent["model"] or model
        if data["aggregator"] is not None:
            data["aggregator"]["model"] = data["aggregator"]["model"] or model
        data["reviewer"]["model"] = data["reviewer"]["model"] or None
        return MoAConfig.model_validate(data)

    def replace(self, **fields: Any) -> MoAConfig:
        """A validated copy with some top-level fields changed (the scaling grid's knob)."""
        return MoAConfig.model_validate({**self.model_dump(), **fields})


def load_config(path: str | Path | None = None, data: dict[str, Any] | None = None) -> MoAConfig:
    """Read a config from a TOML file (top level or a ``[moa]`` table) or from a dict."""
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise MoAConfigError(f"MoA config file not found: {p}")
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise MoAConfigError(f"{p}: invalid TOML ({exc})") from exc
    data = dict(data or {})
    if isinstance(data.get("moa"), dict) and len(data) == 1:
        data = data["moa"]
    try:
        return MoAConfig.model_validate(data)
    except ValidationError as exc:
        where = f" in {path}" if path is not None else ""
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors())
        raise MoAConfigError(f"invalid MoA config{where}: {problems}") from exc
