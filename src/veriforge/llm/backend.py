"""The one interface every model back-end implements.

A back-end only has to turn a :class:`ChatRequest` into a :class:`ChatResponse`; caching,
retries, concurrency limits, accounting and tracing live once in :class:`LLMClient`, so a new
back-end is a single small class. Three optional attributes refine how the client treats it
(read with :func:`getattr` so plain objects with just ``chat`` work too):

``identity``
    A string that names the model *and where it runs* (``vllm:Qwen@http://host:8000/v1``). It is
    part of the cache key and the key of the shared concurrency limit. Default: the class name.
``cacheable``
    ``False`` for models whose weights change under the same name (an RL policy being trained),
    so the client never serves stale samples. Default ``True``.
``supports_n``
    ``False`` when the back-end produces one sample per call; the client then sends ``n``
    single-sample requests. The HTTP back-end flips it when a server ignores ``n``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from veriforge.llm.types import ChatRequest, ChatResponse


@runtime_checkable
class ChatBackend(Protocol):
    """Anything with ``async chat(request) -> ChatResponse``.

    Contract: return one :class:`Completion` per index in ``request.indices()``, with
    ``Completion.index`` set to that global index; raise
    :class:`~veriforge.llm.errors.LLMRequestError` (``retryable`` set truthfully) on failure.
    """

    async def chat(self, request: ChatRequest) -> ChatResponse: ...


def backend_identity(backend: object) -> str:
    """The back-end's identity string (see module docstring)."""
    ident = getattr(backend, "identity", None)
    return str(ident) if ident else type(backend).__name__


def backend_cacheable(backend: object) -> bool:
    return bool(getattr(backend, "cacheable", True))


def backend_supports_n(backend: object) -> bool:
    return bool(getattr(backend, "supports_n", True))


async def close_backend(backend: object) -> None:
    """Release a back-end's resources (HTTP connections) if it has any."""
    aclose = getattr(backend, "aclose", None)
    if aclose is not None:
        await aclose()
