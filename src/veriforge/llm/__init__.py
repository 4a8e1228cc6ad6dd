"""The LLM layer: one async chat interface over every kind of model.

``create_client("vllm:Qwen/Qwen2.5-7B-Instruct")`` (or ``hf:/path``, ``scripted:replies.jsonl``,
``MODEL@http://host:port/v1`` ... see :mod:`veriforge.llm.naming` and docs/llm.md) gives an
:class:`LLMClient` whose ``await client.chat(messages, n=4)`` returns a :class:`ChatResponse` with
``n`` completions, cached per sample, retried on transient errors, rate-limited per back-end,
accounted and traced. Back-ends with heavy dependencies are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from veriforge.llm.accounting import Price, PriceTable, Totals
from veriforge.llm.backend import ChatBackend
from veriforge.llm.cache import MemoryCache, ResponseCache, StoreCache, cache_key
from veriforge.llm.client import LLMClient
from veriforge.llm.errors import LLMConfigError, LLMRequestError
from veriforge.llm.factory import create_backend, create_client, ping
from veriforge.llm.naming import ModelSpec, parse_model
from veriforge.llm.retry import RetryPolicy
from veriforge.llm.trace import read_trace
from veriforge.llm.types import ChatRequest, ChatResponse, Completion, Message, TokenLogprob, TopLogprob, Usage

if TYPE_CHECKING:
    from veriforge.llm.backends.openai_http import OpenAICompatibleBackend
    from veriforge.llm.backends.scripted import ScriptedBackend
    from veriforge.llm.backends.transformers_local import TransformersBackend

__all__ = [
    "ChatBackend",
    "ChatRequest",
    "ChatResponse",
    "Completion",
    "LLMClient",
    "LLMConfigError",
    "LLMRequestError",
    "MemoryCache",
    "Message",
    "ModelSpec",
    "OpenAICompatibleBackend",
    "Price",
    "PriceTable",
    "ResponseCache",
    "RetryPolicy",
    "ScriptedBackend",
    "StoreCache",
    "TokenLogprob",
    "TopLogprob",
    "Totals",
    "TransformersBackend",
    "Usage",
    "cache_key",
    "create_backend",
    "create_client",
    "parse_model",
    "ping",
    "read_trace",
]

_LAZY = {
    "OpenAICompatibleBackend": "veriforge.llm.backends.openai_http",
    "ScriptedBackend": "veriforge.llm.backends.scripted",
    "TransformersBackend": "veriforge.llm.backends.transformers_local",
}


def __getattr__(name: str) -> Any:
    """Import back-end classes on first access (keeps ``import veriforge.llm`` light)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'veriforge.llm' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
