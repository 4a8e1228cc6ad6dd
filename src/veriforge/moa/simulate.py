"""Scripted agents of known behaviour, to *measure* how MoA and ReM-MoA behave with depth.

Real models make it hard to tell whether depth helps because of the method or because of luck. Here
every participant is a scripted back-end (:class:`~veriforge.llm.ScriptedBackend` callables, driven
through the real engine, client, judge and tournament code) with behaviour fixed by a few numbers:

* a **proposer** adopts the answer of one reference it is shown (one not marked FAILED, chosen at
  random) with probability ``q``; otherwise it answers on its own: right with probability ``p``,
  else one of ``distractors`` wrong answers at random. With ``avoid_failed > 0`` an own answer that
  a FAILED reference also gave is redrawn with that probability (off by default: no hoped-for
  learning from failures unless asked for). ``shared_wrong`` correlates the agents' errors: a
  wrong own answer is the question's one "popular" wrong answer with that probability (else a
  distractor at random, as with ``shared_wrong = 0``, the default: errors independent across
  agents). Real models share misconceptions; this knob is what separates ReM-MoA from cheap
  self-consistency (docs/moa.md, "Scaling honesty");
* the **aggregator** adopts the plurality answer of what it is shown (ties: the first shown) with
  probability ``q_agg``, else answers on its own like a proposer;
* the **reviewer** sees two responses; when exactly one is right it prefers that one with
  probability ``r`` (independently in each order, so disagreements become ties), otherwise says
  tie. ``position_bias`` is the probability it just answers ``[[A]]``.

Randomness comes from a hash of the seed and the request, so a run is exactly reproducible.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from veriforge.core.hashing import content_hash
from veriforge.llm.client import LLMClient
from veriforge.llm.types import ChatRequest
from veriforge.moa.config import AgentConfig, MoAConfig, ReviewerConfig

__all__ = ["AGENT_MODEL", "AGGREGATOR_MODEL", "REVIEWER_MODEL", "SimItem", "SimScore", "SimWorld", "sim_config"]

AGENT_MODEL = "sim-agent"
AGGREGATOR_MODEL = "sim-aggregator"
REVIEWER_MODEL = "sim-reviewer"

_QID = re.compile(r"\[Q(\d+)\]")
_REF = re.compile(r"### Reference \d+ \[(STRONG|FAILED|RESPONSE)\][^\n]*\n(.*?)(?=\n### Reference |\Z)", re.S)
_ANSWER = re.compile(r"Answer:\s*(\S+)")
_RESP = re.compile(r"\[Response A\]\n(.*?)\n\n\[Response B\]\n(.*?)\n\nWhich response", re.S)


def _last_answer(text: str) -> str | None:
    found = _ANSWER.findall(text)
    return found[-1] if found else None


@dataclass(frozen=True)
class SimItem:
    """A sim question as a benchmark item (what :func:`~veriforge.moa.scaling.run_grid` needs)."""

    id: str
    prompt: str


@dataclass(frozen=True)
class SimScore:
    """A scorer's verdict in the shape :func:`~veriforge.moa.scaling.run_grid` reads."""

    correct: bool
    parsed: str | None
    parse_failed: bool


@dataclass
class SimWorld:
    """Questions with known answers and the scripted participants' behaviour (see module docstring)."""

    p: float = 0.4
    q: float = 0.6
    r: float = 0.8
    q_agg: float = 0.9
    distractors: int = 3
    avoid_failed: float = 0.0
    position_bias: float = 0.0
    shared_wrong: float = 0.0
    seed: int = 0
    calls: Counter[str] = field(default_factory=Counter)

    # ------------------------------------------------------------------ questions

    def question(self, i: int) -> str:
        return f"[Q{i}] What is the secret number of puzzle {i}?"

    def gold(self, i: int) -> str:
        return str(100 + i)

    def wrong(self, i: int) -> list[str]:
        return [str(100 + i + 17 * k) for k in range(1, self.distractors + 1)]

    def correct(self, question: str, answer: str | None) -> bool:
        m = _QID.search(question)
        return m is not None and answer == self.gold(int(m.group(1)))

    def items(self, n: int) -> list[SimItem]:
        """The first ``n`` questions as benchmark items (ids ``q0``, ``q1``, ...)."""
        return [SimItem(id=f"q{i}", prompt=self.question(i)) for i in range(n)]

    def score(self, item: SimItem, text: str) -> SimScore:
        """Score a response to ``item`` against the known answer (the default extractor reads it)."""
        from veriforge.moa.extract import default_extractor

        answer = default_extractor(text).answer
        return SimScore(self.correct(item.prompt, answer), answer, answer is None)

    # ------------------------------------------------------------------ behaviour

    def _rng(self, role: str, request: ChatRequest, index: int) -> random.Random:
        text = "\n".join(m.content for m in request.messages)
        digest = content_hash("sim", str(self.seed), role, str(request.seed), str(index), text)
        return random.Random(int(digest[:12], 16))

    def _qid(self, request: ChatRequest) -> int:
        for m in request.messages:
            found = _QID.search(m.content)
            if found:
                return int(found.group(1))
        raise ValueError("no [Qn] question id in the request")

    def popular_wrong(self, i: int) -> str:
        """The wrong answer agents share when their errors are correlated (``shared_wrong``)."""
        return self.wrong(i)[0]

    def _own(self, rng: random.Random, qid: int) -> str:
        if rng.random() < self.p:
            return self.gold(qid)
        # no extra draw when shared_wrong is 0, so earlier recorded simulations replay exactly
        if self.shared_wrong > 0 and rng.random() < self.shared_wrong:
            return self.popular_wrong(qid)
        return rng.choice(self.wrong(qid))

    def _refs(self, request: ChatRequest) -> list[tuple[str, str | None]]:
        refs = []
        for m in request.messages:
            refs += [(tag, _last_answer(body)) for tag, body in _REF.findall(m.content)]
        return refs

    def agent(self, request: ChatRequest, index: int) -> str:
        self.calls["agent"] += 1
        rng = self._rng("agent", request, index)
        qid = self._qid(request)
        refs = self._refs(request)
        usable = [a for tag, a in refs if tag != "FAILED" and a is not None]
        failed = {a for tag, a in refs if tag == "FAILED"}
        if usable and rng.random() < self.q:
            answer, how = rng.choice(usable), "adopted a reference"
        else:
            answer, how = self._own(rng, qid), "worked it out"
            if answer in failed and rng.random() < self.avoid_failed:
                answer, how = self._own(rng, qid), "avoided a failed answer"
        return f"[Q{qid}] I {how} (draw {rng.randrange(10**6)}).\nAnswer: {answer}"

    def aggregator(self, request: ChatRequest, index: int) -> str:
        self.calls["aggregator"] += 1
        rng = self._rng("aggregator", request, index)
        qid = self._qid(request)
        shown = [a for _, a in self._refs(request) if a is not None]
        if shown and rng.random() < self.q_agg:
            counts = Counter(shown)
            best = max(counts.values())
            answer = next(a for a in shown if counts[a] == best)
        else:
            answer = self._own(rng, qid)
        return f"[Q{qid}] Having weighed the responses:\nAnswer: {answer}"

    def reviewer(self, request: ChatRequest, index: int) -> str:
        self.calls["reviewer"] += 1
        rng = self._rng("reviewer", request, index)
        text = request.messages[-1].content
        if rng.random() < self.position_bias:
            return "Looks better.\n[[A]]"
        m = _RESP.search(text)
        if m is None:
            return "I cannot tell."
        qid = self._qid(request)
        ok_a = _last_answer(m.group(1)) == self.gold(qid)
        ok_b = _last_answer(m.group(2)) == self.gold(qid)
        if ok_a == ok_b:
            return "Equally good.\n[[tie]]"
        right, wrong = ("A", "B") if ok_a else ("B", "A")
        return f"Verdict:\n[[{right if rng.random() < self.r else wrong}]]"

    # -------------------------------------------------------------------- wiring

    def clients(self) -> dict[str, LLMClient]:
        """Clients for the three sim models (no cache: every cell's tokens are really spent)."""
        from veriforge.llm.backends.scripted import ScriptedBackend

        def make(fn: Any, name: str) -> LLMClient:
            return LLMClient(ScriptedBackend(fn, name=name, identity=f"sim:{name}:{self.seed}:{id(self)}"),
                             model=name, max_concurrency=64, use_cache=False)

        return {AGENT_MODEL: make(self.agent, AGENT_MODEL), AGGREGATOR_MODEL: make(self.aggregator, AGGREGATOR_MODEL),
                REVIEWER_MODEL: make(self.reviewer, REVIEWER_MODEL)}


def sim_config(method: str, depth: int, width: int = 3, *, reviewer: ReviewerConfig | None = None,
               seed: int = 0, **fields: Any) -> MoAConfig:
    """A config wired to the sim models (agents at temperature 0.7, aggregator at 0)."""
    return MoAConfig.model_validate({
        "method": method, "depth": depth, "width": width, "seed": seed,
        "proposers": [AgentConfig(name="sim", model=AGENT_MODEL).model_dump()],
        "aggregator": AgentConfig(name="aggregator", model=AGGREGATOR_MODEL, temperature=0.0).model_dump(),
        "reviewer": (reviewer or ReviewerConfig(model=REVIEWER_MODEL)).model_dump(),
        **fields,
    })
