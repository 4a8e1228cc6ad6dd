"""A scripted-model callable importable as ``replies_module:answer`` (tests put this folder on sys.path)."""

from __future__ import annotations

from veriforge.llm import ChatRequest, Completion


def answer(request: ChatRequest, sample_index: int) -> str | Completion:
    prompt = request.messages[-1].content
    if sample_index == 2:
        return Completion(index=99, text=f"third:{prompt}", finish_reason="length")
    return f"{prompt.upper()}#{sample_index}"
