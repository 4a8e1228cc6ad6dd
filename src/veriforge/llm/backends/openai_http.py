"""Any OpenAI-compatible chat server: vLLM, SGLang, Ollama, llama.cpp, hosted APIs.

Uses the ``openai`` package's ``AsyncOpenAI`` with a ``base_url``. Its own retries are switched
off (``max_retries=0``) because :class:`~veriforge.llm.client.LLMClient` retries with jitter,
counts attempts and traces them; two retry loops stacked would multiply waits and hide failures.
Provider-specific options (vLLM's ``top_k``, ``repetition_penalty``, guided decoding, Ollama's
``options``...) travel in ``extra_body``: the back-end's defaults merged with ``request.extra``.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from veriforge.llm.errors import LLMRequestError, kind_for_status, status_is_retryable
from veriforge.llm.types import ChatRequest, ChatResponse, Completion, TokenLogprob, TopLogprob, Usage

#: Sent when a local server needs no key (the openai client refuses an empty one).
DUMMY_API_KEY = "sk-no-key-required"

CONNECT_TIMEOUT_S = 5.0


class OpenAICompatibleBackend:
    """Chat completions over HTTP from ``base_url`` (which ends in ``/v1``)."""

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        extra_body: dict[str, Any] | None = None,
        provider: str = "openai-compatible",
    ) -> None:
        self.name = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key or DUMMY_API_KEY
        self.timeout_s = timeout_s
        self.extra_body = dict(extra_body or {})
        self.provider = provider
        self.identity = f"{provider}:{model}@{self.base_url}"
        self.supports_n = True
        # One AsyncOpenAI per event loop: its connection pool cannot be shared across loops.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            import httpx
            from openai import AsyncOpenAI

            # Connecting takes milliseconds when a server is up: a host that does not accept the
            # connection is reported in seconds, while a long generation keeps the whole timeout.
            timeout = httpx.Timeout(self.timeout_s, connect=min(CONNECT_TIMEOUT_S, self.timeout_s))
            client = AsyncOpenAI(api_key=self.api_key, base_url=self.base_url, max_retries=0, timeout=timeout)
            self._clients[loop] = client
        return client

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.name,
            "messages": [m.model_dump() for m in request.messages],
        }
        if request.n != 1:
            params["n"] = request.n
        for key in ("temperature", "top_p", "max_tokens", "stop", "seed"):
            value = getattr(request, key)
            if value is not None:
                params[key] = value
        if request.logprobs:
            params["logprobs"] = True
            if request.top_logprobs is not None:
                params["top_logprobs"] = request.top_logprobs
        extra = {**self.extra_body, **request.extra}
        if extra:
            params["extra_body"] = extra
        return params

    async def chat(self, request: ChatRequest) -> ChatResponse:
        import openai

        try:
            resp = await self._client().chat.completions.create(**self._params(request))
        except openai.APITimeoutError as exc:
            import httpx

            if isinstance(exc.__cause__, httpx.ConnectTimeout):
                raise LLMRequestError(f"{self.identity}: cannot connect within "
                                      f"{min(CONNECT_TIMEOUT_S, self.timeout_s):g} s", retryable=True,
                                      kind="connection") from exc
            raise LLMRequestError(f"{self.identity}: no answer within {self.timeout_s:g} s",
                                  retryable=True, kind="timeout") from exc
        except openai.APIConnectionError as exc:
            raise LLMRequestError(f"{self.identity}: cannot connect ({exc})", retryable=True,
                                  kind="connection") from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            raise LLMRequestError(
                f"{self.identity}: HTTP {status}: {_error_message(exc)}",
                status=status,
                retryable=status_is_retryable(status),
                kind=kind_for_status(status),
                retry_after=_retry_after(exc),
            ) from exc
        except openai.APIError as exc:  # malformed reply and the like: a server bug, not transient
            raise LLMRequestError(f"{self.identity}: {exc}", kind="protocol") from exc
        except ValueError as exc:  # a body that is not JSON (a proxy's error page, a cut-off reply): retry
            raise LLMRequestError(f"{self.identity}: the reply is not JSON ({exc})", retryable=True,
                                  kind="protocol") from exc
        try:
            return self._response(request, resp)
        except (TypeError, AttributeError, KeyError, ValueError) as exc:  # JSON, but not a chat completion
            raise LLMRequestError(f"{self.identity}: the reply is not a chat completion "
                                  f"({type(exc).__name__}: {exc}; body starts {str(resp)[:120]!r})",
                                  kind="protocol") from exc

    def _response(self, request: ChatRequest, resp: Any) -> ChatResponse:
        """The reply as a :class:`ChatResponse`; raises TypeError/AttributeError on the wrong shape."""
        choices = resp.choices
        if not isinstance(choices, list) or not choices:
            raise TypeError(f"'choices' is {type(choices).__name__}, not a non-empty list")
        indices = request.indices()
        completions = []
        for j, choice in enumerate(sorted(choices, key=lambda c: c.index or 0)):
            text = choice.message.content
            if text is not None and not isinstance(text, str):
                raise TypeError(f"choices[{j}].message.content is {type(text).__name__}, not a string")
            completions.append(Completion(
                index=indices[j] if j < len(indices) else j,
                text=text or "",
                finish_reason=choice.finish_reason,
                logprobs=_logprobs(choice.logprobs) if request.logprobs else None,
            ))
        usage = Usage(
            prompt_tokens=getattr(resp.usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(resp.usage, "completion_tokens", 0) or 0,
        )
        return ChatResponse(model=resp.model or self.name, completions=completions, usage=usage)

    async def list_models(self) -> list[str]:
        """The model ids the server offers (``GET /models``)."""
        import openai

        try:
            page = await self._client().models.list()
        except openai.APIError as exc:
            raise LLMRequestError(f"{self.identity}: listing models failed: {exc}",
                                  status=getattr(exc, "status_code", None)) from exc
        return [m.id for m in page.data]

    async def aclose(self) -> None:
        """Close this loop's connection pool (pools of other, finished loops are just dropped)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        self._clients.clear()
        if client is not None:
            await client.close()


def _logprobs(lp: Any) -> list[TokenLogprob] | None:
    content = getattr(lp, "content", None) if lp is not None else None
    if content is None:
        return None
    return [
        TokenLogprob(
            token=t.token,
            logprob=t.logprob,
            top_logprobs=[TopLogprob(token=a.token, logprob=a.logprob) for a in (t.top_logprobs or [])],
        )
        for t in content
    ]


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return str(getattr(exc, "message", exc))


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: rare from model servers, and the back-off covers it
