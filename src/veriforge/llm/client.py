"""`LLMClient`: the one way the rest of veriforge talks to a model.

It wraps any :class:`~veriforge.llm.backend.ChatBackend` and adds, once for all back-ends:

* a cache keyed by back-end identity + canonical request + *sample index* — ``n`` samples stay
  ``n`` distinct samples, and only the missing indices are requested;
* retries with exponential back-off and jitter on retryable errors (429, 5xx, timeouts, dropped
  connections), none on 400/401-style errors;
* a concurrency limit shared by every client of the same back-end;
* token and cost accounting (running totals in :attr:`LLMClient.totals`);
* a JSONL trace line per call.

If a back-end returns fewer samples than asked (an OpenAI-compatible server that ignores ``n``),
the client asks for the remaining ones one by one, so callers always get ``n`` samples.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from veriforge.llm.accounting import Accountant, PriceTable, Totals
from veriforge.llm.backend import (
    ChatBackend,
    backend_cacheable,
    backend_identity,
    backend_supports_n,
    close_backend,
)
from veriforge.llm.cache import MemoryCache, ResponseCache, cache_key, decode_sample, encode_sample
from veriforge.llm.errors import LLMRequestError
from veriforge.llm.limits import shared_limiter
from veriforge.llm.retry import RetryPolicy
from veriforge.llm.trace import TraceWriter
from veriforge.llm.types import ChatRequest, ChatResponse, Completion, Message, Usage

_log = logging.getLogger("veriforge.llm")
WAITING_NOTE_S = 30.0


class LLMClient:
    """Cache, retries, concurrency limit, accounting and trace around one back-end.

    ``model`` is the model string the client was created from (used for the trace and price
    lookup); ``cache=None`` with ``use_cache=True`` means a fresh in-memory cache.
    """

    def __init__(
        self,
        backend: ChatBackend,
        *,
        model: str | None = None,
        cache: ResponseCache | None = None,
        use_cache: bool = True,
        max_concurrency: int = 8,
        retry: RetryPolicy | None = None,
        prices: Mapping[str, Any] | PriceTable | None = None,
        trace_path: str | Path | None = None,
        waiting_note_s: float | None = WAITING_NOTE_S,
    ) -> None:
        self.backend = backend
        #: a request without an answer after this many seconds is logged (then at every multiple),
        #: so a hung server shows up long before its timeout; None: never
        self.waiting_note_s = waiting_note_s
        self.identity = backend_identity(backend)
        self.model = model or str(getattr(backend, "name", None) or self.identity)
        self.use_cache = use_cache and backend_cacheable(backend)
        self.cache: ResponseCache | None = (cache if cache is not None else MemoryCache()) if self.use_cache else None
        self.max_concurrency = max_concurrency
        self.retry = retry or RetryPolicy()
        table = prices if isinstance(prices, PriceTable) else PriceTable(prices)
        self._accountant = Accountant(table)
        self.trace = TraceWriter(trace_path) if trace_path else None

    # ----------------------------------------------------------------- public API

    @property
    def totals(self) -> Totals:
        """Running totals of calls, samples, tokens and cost."""
        return self._accountant.totals

    async def chat(
        self, request: ChatRequest | Sequence[Message | dict[str, Any]] | str, **params: Any
    ) -> ChatResponse:
        """Answer ``request`` (a :class:`ChatRequest`, a message list or a user prompt string).

        ``params`` are :class:`ChatRequest` fields (``n``, ``temperature``, ...) used when
        ``request`` is not already a :class:`ChatRequest`.
        """
        req = _as_request(request, params)
        started = time.monotonic()
        call_id = uuid.uuid4().hex
        attempts = [0]
        cached: dict[int, Completion] = {}
        try:
            keys = self._keys(req)
            if keys:
                cached = self._cache_lookup(keys)
            missing = [i for i in range(req.n) if i not in cached]
            fresh: list[Completion] = []
            usage = Usage()
            model_name = str(getattr(self.backend, "name", None) or self.model)
            if missing:
                fresh, usage, model_name = await self._fetch(req, missing, attempts)
                if keys:
                    for c in fresh:
                        self.cache.put(keys[c.index], encode_sample(c, model_name))  # type: ignore[union-attr]
        except Exception as exc:
            self._accountant.record_failure()
            self._trace(call_id, req, started, attempts[0], sorted(cached), error=exc)
            raise
        completions = sorted([*cached.values(), *fresh], key=lambda c: c.index)
        cost = self._accountant.prices.cost(usage, (self.model, model_name, self.identity))
        response = ChatResponse(
            model=model_name,
            completions=completions,
            usage=usage,
            cached=[c.index in cached for c in completions],
            latency_s=time.monotonic() - started,
            cost_usd=cost,
        )
        self._accountant.record(usage=usage, cost=cost, samples=req.n, cached=len(cached))
        self._trace(call_id, req, started, attempts[0], sorted(cached), response=response)
        return response

    async def complete(self, prompt: str, **params: Any) -> str:
        """The text of one sample for a single user prompt (convenience for simple callers)."""
        return (await self.chat(prompt, **{**params, "n": 1})).text

    async def aclose(self) -> None:
        """Close the back-end's connections."""
        await close_backend(self.backend)

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ internals

    def _keys(self, req: ChatRequest) -> dict[int, str]:
        if self.cache is None:
            return {}
        return {i: cache_key(self.identity, req, i) for i in range(req.n)}

    def _cache_lookup(self, keys: dict[int, str]) -> dict[int, Completion]:
        hits: dict[int, Completion] = {}
        for index, key in keys.items():
            value = self.cache.get(key)  # type: ignore[union-attr]
            completion = decode_sample(value, index) if value is not None else None
            if completion is not None:
                hits[index] = completion
        return hits

    async def _fetch(
        self, req: ChatRequest, indices: list[int], attempts: list[int]
    ) -> tuple[list[Completion], Usage, str]:
        """Produce samples ``indices``; top up one by one if the back-end returns too few."""
        if len(indices) > 1 and not backend_supports_n(self.backend):
            return await self._fetch_singly(req, indices, attempts)
        sub = req.model_copy(update={"n": len(indices), "sample_indices": indices})
        resp = await self._call(sub, attempts)
        got = _assign_indices(resp.completions, indices)
        missing = [i for i in indices if i not in got]
        if not missing:
            return [got[i] for i in indices], resp.usage, resp.model
        if len(got) <= 1 and hasattr(self.backend, "supports_n"):
            # The server answered n>1 with one sample: it ignores n. Remember, for all clients.
            self.backend.supports_n = False  # type: ignore[attr-defined]
        more, more_usage, _ = await self._fetch_singly(req, missing, attempts)
        merged = {**got, **{c.index: c for c in more}}
        return [merged[i] for i in indices], resp.usage + more_usage, resp.model

    async def _fetch_singly(
        self, req: ChatRequest, indices: list[int], attempts: list[int]
    ) -> tuple[list[Completion], Usage, str]:
        async def one(i: int) -> ChatResponse:
            resp = await self._call(req.model_copy(update={"n": 1, "sample_indices": [i]}), attempts)
            if not resp.completions:
                raise LLMRequestError(f"{self.model}: back-end returned no completion", kind="empty")
            return resp

        responses = await asyncio.gather(*(one(i) for i in indices))
        usage = Usage()
        out = []
        for i, resp in zip(indices, responses, strict=True):
            out.append(resp.completions[0].model_copy(update={"index": i}))
            usage = usage + resp.usage
        return out, usage, responses[0].model

    async def _call(self, req: ChatRequest, attempts: list[int]) -> ChatResponse:
        """One back-end request under the shared limit, retried while the error is retryable."""
        limiter = shared_limiter(self.identity, self.max_concurrency)
        attempt = timeouts = 0
        while True:
            attempts[0] += 1
            try:
                async with limiter:
                    return await self._chat_noting_waits(req)
            except LLMRequestError as exc:
                timeouts += exc.kind == "timeout"
                if not exc.retryable or not self.retry.allows(attempt, exc.kind, timeouts):
                    raise
                delay = self.retry.delay(attempt, exc.retry_after)
                # progress a user sees: which endpoint failed how, and that it is being retried
                _log.warning("%s (attempt %d); retrying in %.1f s", exc, attempt + 1, delay)
            attempt += 1
            await asyncio.sleep(delay)

    async def _chat_noting_waits(self, req: ChatRequest) -> ChatResponse:
        """``backend.chat(req)``, logging every ``waiting_note_s`` seconds it has not answered."""
        if not self.waiting_note_s:
            return await self.backend.chat(req)
        task = asyncio.ensure_future(self.backend.chat(req))
        waited = 0.0
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=self.waiting_note_s)
                if done:
                    return task.result()
                waited += self.waiting_note_s
                _log.warning("%s: no answer yet after %g s (still waiting)", self.identity, round(waited, 1))
        finally:
            if not task.done():
                task.cancel()

    def _trace(
        self,
        call_id: str,
        req: ChatRequest,
        started: float,
        attempts: int,
        cached_indices: list[int],
        *,
        response: ChatResponse | None = None,
        error: BaseException | None = None,
    ) -> None:
        if self.trace is None:
            return
        record: dict[str, Any] = {
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "call_id": call_id,
            "model": self.model,
            "backend": self.identity,
            "request": req.model_dump(mode="json", exclude={"sample_indices"}),
            "latency_s": round(time.monotonic() - started, 6),
            "attempts": attempts,
            "cached_indices": cached_indices,
        }
        if response is not None:
            record["response"] = response.model_dump(mode="json")
            record["cached"] = response.cached
        if error is not None:
            to_dict = getattr(error, "to_dict", None)
            record["error"] = to_dict() if callable(to_dict) else {"type": type(error).__name__,
                                                                 "message": str(error)}
        self.trace.write(record)


def _as_request(request: Any, params: Mapping[str, Any]) -> ChatRequest:
    if isinstance(request, ChatRequest):
        return ChatRequest.model_validate({**request.model_dump(), **params}) if params else request
    if isinstance(request, str):
        return ChatRequest(messages=[Message(role="user", content=request)], **params)
    return ChatRequest(messages=list(request), **params)


def _assign_indices(completions: list[Completion], indices: list[int]) -> dict[int, Completion]:
    """Map returned completions onto the requested global indices.

    Back-ends are asked to set global indices; one that numbers from 0 (like a raw server reply)
    is mapped positionally instead.
    """
    returned = [c.index for c in completions]
    if len(set(returned)) == len(returned) and set(returned) <= set(indices):
        return {c.index: c for c in completions}
    return {i: c.model_copy(update={"index": i}) for i, c in zip(indices, completions, strict=False)}
