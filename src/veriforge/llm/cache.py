"""The request cache: one entry per (back-end, canonical request, sample index).

Keying by sample index is the point: asking for ``n=4`` when 2 samples are cached must return
the 2 cached ones plus 2 *new* ones, never 4 copies of one answer, and asking for ``n=2`` later
returns exactly samples 0 and 1. The cache is a two-method protocol so the run store (persistent,
shared between processes) and a plain dict (one process, tests) are interchangeable.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol, runtime_checkable

from veriforge.llm.types import ChatRequest, Completion

#: Bumped when the key recipe or the stored value changes, so old entries are simply missed.
CACHE_FORMAT = 1


@runtime_checkable
class ResponseCache(Protocol):
    """Where cached samples live: JSON-serialisable dicts under string keys."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, value: dict[str, Any]) -> None: ...


class MemoryCache:
    """A process-local cache (the default when no run store is given)."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._data.get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._data[key] = value

    def __len__(self) -> int:
        return len(self._data)


class StoreCache:
    """Adapter that keeps the cache in a :class:`veriforge.core.store.RunStore`.

    The store persists entries across runs and processes, which is what makes a killed run
    resumable without paying for the same samples twice.
    """

    def __init__(self, store: Any) -> None:
        self._store = store

    def get(self, key: str) -> dict[str, Any] | None:
        return self._store.llm_cache_get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._store.llm_cache_put(key, value)


def cache_key(identity: str, request: ChatRequest, sample_index: int) -> str:
    """The key of one sample: a content hash of back-end identity, request identity and index."""
    from veriforge.core.hashing import canonical_json, content_hash

    return content_hash(
        "llm-sample", str(CACHE_FORMAT), identity, canonical_json(request.identity()), str(sample_index)
    )


def encode_sample(completion: Completion, model: str) -> dict[str, Any]:
    """The stored value for one sample."""
    return {"format": CACHE_FORMAT, "model": model, "completion": completion.model_dump(mode="json")}


def decode_sample(value: dict[str, Any], index: int) -> Completion | None:
    """The cached completion re-indexed, or ``None`` for an entry in an unknown format."""
    if not isinstance(value, dict) or value.get("format") != CACHE_FORMAT or "completion" not in value:
        return None
    return Completion.model_validate({**value["completion"], "index": index})
