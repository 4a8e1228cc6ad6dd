"""The prompts each method sends. One place, so methods differ only in what they show.

References are rendered as ``### Reference k [LABEL] (...)`` blocks followed by the trace's full
text. ``STRONG``/``FAILED`` come from ReM-MoA routing (failed traces are explicitly marked so the
agent learns from them instead of copying them); ``RESPONSE`` is vanilla MoA's unlabelled previous
layer. The aggregate-and-synthesize wording follows Together's MoA so the baseline is faithful.
"""

from __future__ import annotations

from collections.abc import Sequence

from veriforge.llm.types import Message
from veriforge.moa.config import DEFAULT_INSTRUCTION
from veriforge.moa.memory import ReasoningMemory, RefShown

__all__ = [
    "DEFAULT_INSTRUCTION",
    "MOA_AGGREGATE_SYSTEM",
    "REM_FINAL_SYSTEM",
    "aggregate_messages",
    "proposer_messages",
    "render_references",
]


MOA_AGGREGATE_SYSTEM = (
    "You have been provided with a set of responses from various models to the latest user query. "
    "Your task is to synthesize these responses into a single, high-quality response. It is crucial to "
    "critically evaluate the information provided in these responses, recognizing that some of it may be "
    "biased or incorrect. Your response should not simply replicate the given answers but should offer a "
    "refined, accurate, and comprehensive reply to the instruction."
)

REM_LAYER_INTRO = (
    "Below are reasoning traces from other agents, selected from a memory ranked by a reviewer. Traces "
    "marked STRONG were ranked highly; traces marked FAILED were ranked low (or failed verification): "
    "find their mistakes and do not repeat them. References can be wrong: check every step yourself."
)

REM_FINAL_SYSTEM = (
    "You are the final aggregator. You are given the best-ranked reasoning traces for the user's query, "
    "best first, as ranked by a reviewer that compared them pairwise. Weigh them critically, resolve "
    "disagreements by checking the reasoning, and write one final, correct response."
)


def _header(k: int, ref: RefShown, memory: ReasoningMemory) -> str:
    trace = memory[ref.id]
    if ref.label == "good":
        tag = "STRONG"
        why = f"reviewer rank {ref.rank}" if ref.rank is not None else "ranked high"
    elif ref.label == "failed":
        tag = "FAILED"
        why = "failed verification" if ref.label_source == "verifier" else "ranked low by the reviewer"
    else:
        tag, why = "RESPONSE", "previous layer"
    return f"### Reference {k} [{tag}] ({why}; layer {trace.layer}, {trace.agent})"


def render_references(refs: Sequence[RefShown], memory: ReasoningMemory) -> str:
    """The reference blocks, in the order given, each with its full text."""
    return "\n\n".join(f"{_header(k, r, memory)}\n{memory[r.id].reasoning.strip()}"
                       for k, r in enumerate(refs, start=1))


def proposer_messages(
    question: str, instruction: str, system: str | None, refs: Sequence[RefShown] = (),
    memory: ReasoningMemory | None = None, *, style: str = "rem",
) -> list[Message]:
    """A proposer's messages. ``style="rem"`` (labelled memory references in the user turn) or
    ``"moa"`` (Together's aggregate-and-synthesize system prompt with the previous layer)."""
    out: list[Message] = []
    if refs and memory is not None and style == "moa":
        persona = f"{system}\n\n" if system else ""
        out.append(Message(role="system", content=f"{persona}{MOA_AGGREGATE_SYSTEM}\n\nResponses from models:\n\n"
                                                   f"{render_references(refs, memory)}"))
        out.append(Message(role="user", content=f"{question}\n\n{instruction}"))
        return out
    if system:
        out.append(Message(role="system", content=system))
    if refs and memory is not None:
        body = f"{question}\n\n{REM_LAYER_INTRO}\n\n{render_references(refs, memory)}\n\n{instruction}"
    else:
        body = f"{question}\n\n{instruction}"
    out.append(Message(role="user", content=body))
    return out


def aggregate_messages(
    question: str, instruction: str, refs: Sequence[RefShown], memory: ReasoningMemory, *, style: str = "rem",
) -> list[Message]:
    """The final aggregator's messages over ``refs`` (ranked memory for ReM-MoA, last layer for MoA)."""
    system = REM_FINAL_SYSTEM if style == "rem" else MOA_AGGREGATE_SYSTEM
    return [
        Message(role="system", content=f"{system}\n\nResponses:\n\n{render_references(refs, memory)}"),
        Message(role="user", content=f"{question}\n\n{instruction}"),
    ]
