"""Canonical JSON and content hashes.

Everything veriforge caches (evaluations, LLM requests, compiled artefacts) is keyed by a hash of
its *content*, so the same program or request is recognised whoever produced it and in whichever
process. That only works if the bytes being hashed are canonical: dict order, whitespace and the
way a pydantic model or a tuple is written must not change the key. This module is the one place
that decides those bytes.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

__all__ = ["canonical_json", "content_hash", "jsonable"]


def jsonable(obj: Any) -> Any:
    """``obj`` converted to plain JSON types (dict with str keys, list, str, int, float, bool, None).

    Pydantic models are dumped in JSON mode, dataclasses as dicts, tuples as lists, sets as sorted
    lists (a set has no order, so sorting is what makes it canonical), paths and enums as their
    string/value. Non-finite floats are refused: JSON cannot carry them and a NaN in a cache key
    or a stored result is always a bug upstream.
    """
    if obj is None or isinstance(obj, bool | int | str):
        return obj
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ValueError(f"cannot encode non-finite float {obj!r} as JSON")
        return obj
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump) and not isinstance(obj, type):
        return jsonable(model_dump(mode="json"))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return jsonable(dataclasses.asdict(obj))
    if isinstance(obj, enum.Enum):
        return jsonable(obj.value)
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if not isinstance(key, str | int | float | bool) and key is not None:
                raise TypeError(f"cannot encode dict key of type {type(key).__name__} as JSON")
            skey = key if isinstance(key, str) else json.dumps(key)
            if skey in out:
                raise ValueError(f"dict keys collide after conversion to JSON strings: {skey!r}")
            out[skey] = jsonable(value)
        return out
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, set | frozenset):
        items = [jsonable(v) for v in obj]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, separators=(",", ":")))
    if isinstance(obj, bytes):
        # bytes have no JSON form; hex keeps them exact and distinguishable from text.
        return {"__bytes__": obj.hex()}
    tolist = getattr(obj, "tolist", None)  # numpy scalars and arrays
    if callable(tolist):
        return jsonable(tolist())
    raise TypeError(f"cannot encode object of type {type(obj).__name__} as JSON")


def canonical_json(obj: Any) -> str:
    """The one canonical JSON text of ``obj``: sorted keys, no whitespace, UTF-8 kept as is.

    Two values that mean the same thing (same dict in another order, a model and its dump, a tuple
    and a list) give the same string, so the string can be hashed into a cache key.
    """
    return json.dumps(jsonable(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def content_hash(*parts: str | bytes) -> str:
    """SHA-256 hex digest of ``parts``, each length-prefixed.

    The length prefix makes the split between parts part of the hash, so
    ``content_hash("ab", "c") != content_hash("a", "bc")``; a plain concatenation would collide.
    Strings are hashed as UTF-8; a ``str`` and the ``bytes`` of its UTF-8 encoding hash the same.
    """
    digest = hashlib.sha256()
    digest.update(b"veriforge-hash-v1")
    feed_parts(digest, parts, "content_hash")
    return digest.hexdigest()


def feed_parts(digest: Any, parts: tuple[str | bytes, ...], what: str) -> None:
    """Feed ``parts`` to a hashlib/hmac object, each length-prefixed (str as UTF-8), so the split
    between parts is part of the digest (shared by :func:`content_hash` and the store's HMACs)."""
    for part in parts:
        if isinstance(part, str):
            data = part.encode("utf-8")
        elif isinstance(part, bytes | bytearray | memoryview):
            data = bytes(part)
        else:
            raise TypeError(f"{what} parts must be str or bytes, got {type(part).__name__}")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
