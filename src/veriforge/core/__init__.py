"""veriforge.core: shared types, configuration, content hashing and the SQLite run store.

Names are imported lazily (PEP 562) so ``import veriforge.core`` stays cheap for tools that only
need, say, :func:`content_hash`; pydantic and sqlite load when first used.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "canonical_json": "hashing",
    "content_hash": "hashing",
    "Candidate": "types",
    "InputResult": "types",
    "Measurement": "types",
    "Provenance": "types",
    "Step": "types",
    "Task": "types",
    "Trajectory": "types",
    "Verdict": "types",
    "Settings": "config",
    "load_settings": "config",
    "RunStore": "store",
    "RunInfo": "store",
    "Event": "store",
    "Record": "store",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'veriforge.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"veriforge.core.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
