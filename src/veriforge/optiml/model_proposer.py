"""The model edit proposer of OptiML-X: a language model edits a kernel *because of* its profile.

A model asked to "make this faster" guesses; a model shown the bottleneck diagnosis ("global loads
at line 12 use 32 sectors per request", "occupancy limited by registers to 25%") and the key
features of the current kernel can aim its edits. :class:`ModelProposer` implements the
:class:`veriforge.search.Proposer` protocol (name ``"model"``): for a search node it prompts the
model with the node's kernel (line-numbered, so findings' lines can be found) and its evidence —
the evaluator's ``details`` (``findings``, ``features``, ``bottleneck`` as written by
:class:`veriforge.optiml.xsearch.KernelEvaluator`), diagnosing the features itself when findings
are missing — and asks for ``k`` edited kernels, each with a one-line description. Every parsed
edit becomes an :class:`~veriforge.search.Edit` carrying that evidence, so the search tree and the
report show *why* each edit was tried.

Model output is untrusted text: sections without a description, without code, with code that
does not define the entry point or that changes nothing are skipped, each with a logged reason
(kept in :attr:`ModelProposer.skipped`); a failed model call yields no edits for that node rather
than ending the search. A missing model configuration is still an error.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from veriforge.optiml.prompts import EDIT_SYSTEM, edit_prompt, parse_edits, task_contract

if TYPE_CHECKING:
    from veriforge.core.types import Candidate
    from veriforge.cuda.tasks.schema import TaskSpec
    from veriforge.llm import LLMClient
    from veriforge.optiml.diagnosis import Finding
    from veriforge.search import Edit
    from veriforge.search.tree import Node

__all__ = ["KEY_FEATURES", "ModelProposer", "node_evidence", "proposers_with_model"]

log = logging.getLogger(__name__)

#: Features shown to the model first, in this order (the ones edits can move); others follow.
KEY_FEATURES = (
    "global_load_efficiency", "global_load_sectors_per_request", "global_store_efficiency",
    "global_store_sectors_per_request", "theoretical_occupancy", "achieved_occupancy", "registers_per_thread",
    "spill_bytes", "shared_mem_static_bytes", "shared_mem_dynamic_bytes", "shared_load_bank_conflict_ways",
    "shared_store_bank_conflict_ways", "arithmetic_intensity", "flops", "barriers", "divergent_branches",
    "warp_execution_efficiency", "dram_throughput",
)


def _ordered_features(features: Mapping[str, Any], limit: int) -> dict[str, float]:
    numeric = {k: float(v) for k, v in features.items()
               if not isinstance(v, bool) and isinstance(v, int | float)}
    ordered = [k for k in KEY_FEATURES if k in numeric] + sorted(k for k in numeric if k not in KEY_FEATURES)
    return {k: numeric[k] for k in ordered[:limit]}


def node_evidence(node: Any, *, max_findings: int = 8, max_features: int = 16,
                  gpu: str = "H100-SXM") -> dict[str, Any]:
    """The profile evidence of a search node: findings (dicts, most severe first), key features,
    the primary bottleneck and the objective with its provenance.

    Findings come from the evaluator's ``details["findings"]``; when it wrote only features they
    are diagnosed here (:func:`veriforge.optiml.diagnosis.diagnose`), so the prompt always carries
    the diagnosis the features support.
    """
    from veriforge.optiml.diagnosis import Finding, diagnose, primary_bottleneck

    ev = getattr(node, "evaluation", None)
    details: Mapping[str, Any] = getattr(ev, "details", None) or {}
    features = dict(details.get("features") or {})
    raw = details.get("findings")
    findings: list[Finding]
    if raw:
        findings = [f if isinstance(f, Finding) else Finding.from_dict(f) for f in raw]
    elif features:
        findings = diagnose(features, gpu=gpu)
    else:
        findings = []
    findings = findings[:max_findings]
    return {
        "findings": [f.to_dict() for f in findings],
        "features": _ordered_features(features, max_features),
        "bottleneck": details.get("bottleneck") or primary_bottleneck(findings),
        "objective": getattr(ev, "objective", None),
        "provenance": getattr(ev, "provenance", None),
        "time_s": details.get("time_s"),
    }


class ModelProposer:
    """Proposes edits of a kernel through a language model, from its profile evidence.

    ``client`` is a :class:`~veriforge.llm.LLMClient` (``veriforge.optiml.generator.resolve_client``
    makes one from a model string); ``task`` adds the task contract (signature, sizes) to the
    prompt and sets the entry point edits must define. ``temperature``/``max_tokens`` go to every
    call. States are :class:`~veriforge.core.types.Candidate` objects (or plain source strings).

    Priors (PUCT): edit *i* of a reply (0-based) gets ``base × decay**i``. ``base`` defaults to
    ``1 + Σ severity`` of the findings shown — the scale the built-in operators use for an edit
    motivated by those findings (``1 +`` the motivating severities), because a model edit answers
    the whole diagnosis; ``decay`` 0.85 because models put their best idea first.
    """

    name = "model"

    def __init__(self, client: LLMClient, task: TaskSpec | None = None, *, temperature: float | None = None,
                 max_tokens: int | None = None, max_findings: int = 8, max_features: int = 16,
                 gpu: str = "H100-SXM", prior: float | None = None, prior_decay: float = 0.85) -> None:
        if prior is not None and prior <= 0:
            raise ValueError("prior must be > 0")
        if not 0 < prior_decay <= 1:
            raise ValueError("prior_decay must be in (0, 1]")
        self.client = client
        self.prior = prior
        self.prior_decay = prior_decay
        self.task = task
        self.entry = task.entry if task is not None else "solve"
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_findings = max_findings
        self.max_features = max_features
        self.gpu = gpu
        self.calls = 0
        #: every failed call (``kind`` "call_failed") and dropped reply section ("dropped"), as
        #: ``{"node": id, "kind": ..., "reason": ...}``
        self.skipped: list[dict[str, Any]] = []
        self._contract = task_contract(task) if task is not None else None

    def prompt(self, node: Node[Any], k: int) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """The chat messages for ``node`` and the evidence they carry."""
        from veriforge.optiml.diagnosis import summarize

        evidence = node_evidence(node, max_findings=self.max_findings, max_features=self.max_features,
                                 gpu=self.gpu)
        findings = [_finding(f) for f in evidence["findings"]]
        objective = None
        if evidence["objective"] is not None:
            objective = f"{evidence['objective']:.6g}"
            if evidence["provenance"]:
                objective += f" ({evidence['provenance']})"
            if evidence["time_s"] is not None:
                objective += f", time {evidence['time_s']:.4g} s"
        text = edit_prompt(_source_of(node.state), k=k, findings_text=summarize(findings),
                           features=evidence["features"], objective=objective, contract=self._contract)
        return [{"role": "system", "content": EDIT_SYSTEM}, {"role": "user", "content": text}], evidence

    async def propose(self, node: Node[Any], k: int) -> list[Edit[Candidate]]:
        """Up to ``k`` edits of ``node.state`` (fewer when the reply has fewer usable sections)."""
        from veriforge.core.types import Candidate
        from veriforge.llm.errors import LLMRequestError
        from veriforge.search import Edit

        k = max(1, int(k))
        messages, evidence = self.prompt(node, k)
        params: dict[str, Any] = {}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        self.calls += 1
        node_id = getattr(node, "id", None)
        try:
            resp = await self.client.chat(messages, **params)
        except LLMRequestError as exc:
            self._skip(node_id, f"model call failed: {exc}", kind="call_failed")
            return []
        parsed, reasons = parse_edits(resp.text, self.entry)
        for reason in reasons:
            self._skip(node_id, reason)
        parent_source = _source_of(node.state)
        parent_hash = getattr(node.state, "hash", None)
        # A model edit answers the whole diagnosis it was shown, so it starts level with the built-in
        # restructuring edits (2 + severities) rather than below them with the small tuning moves.
        base = self.prior if self.prior is not None else \
            2.0 + sum(float(f.get("severity") or 0.0) for f in evidence["findings"])
        edits: list[Edit[Candidate]] = []
        seen: set[str] = set()
        for pe in parsed:
            if len(edits) >= k:
                self._skip(node_id, f"edit {pe.index}: more than the {k} edits asked for")
                continue
            if pe.source.strip() == parent_source.strip():
                self._skip(node_id, f"edit {pe.index}: the code is unchanged")
                continue
            if pe.source in seen:
                self._skip(node_id, f"edit {pe.index}: same code as an earlier edit")
                continue
            seen.add(pe.source)
            cand = Candidate(source=pe.source, parent=parent_hash,
                             metadata={"proposer": self.name, "edit": pe.description,
                                       "model": self.client.model})
            prior = round(base * self.prior_decay ** len(edits), 6)
            edits.append(Edit(cand, description=pe.description, proposer=self.name, evidence=evidence,
                              prior=prior, metadata={"model": self.client.model, "edit_index": pe.index}))
        return edits

    def _skip(self, node_id: Any, reason: str, kind: str = "dropped") -> None:
        log.info("model proposer: node %s: skipped %s", node_id, reason)
        self.skipped.append({"node": node_id, "kind": kind, "reason": reason})


def _finding(data: Mapping[str, Any]) -> Finding:
    from veriforge.optiml.diagnosis import Finding

    return Finding.from_dict(data)


def _source_of(state: Any) -> str:
    source = getattr(state, "source", state)
    if not isinstance(source, str):
        raise TypeError(f"the model proposer edits CUDA sources; got a state of type {type(state).__name__}")
    return source


def proposers_with_model(client: LLMClient, task: TaskSpec,
                         builtin: Sequence[Any] | None = None) -> list[Any]:
    """The built-in operators plus a model proposer, for a search that uses both."""
    from veriforge.optiml.operators import BuiltinProposer

    return [*(builtin if builtin is not None else [BuiltinProposer()]), ModelProposer(client, task)]
