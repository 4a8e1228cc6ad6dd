"""``ast.parse`` that is safe to call from several threads at once.

CPython 3.11's AST-to-object conversion keeps its recursion-depth counter in per-interpreter state, so
two threads converting at the same time can corrupt it and one of them fails with ``SystemError: AST
constructor recursion depth mismatch`` (python/cpython#106905). The harness evaluates candidates on
thread pools and parses their Python (torch2cuda modules, expressions, estimates) while doing so; one
process-wide lock around the parse costs microseconds and removes the spurious failure.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

__all__ = ["parse"]

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec", **kwargs: Any) -> Any:
    """:func:`ast.parse`, serialised across threads."""
    with _LOCK:
        return ast.parse(source, filename, mode, **kwargs)
