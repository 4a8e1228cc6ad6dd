"""The JSONL trace: one line per client call, success or failure.

A run's trace is its evidence: what was asked, what came back (or why nothing did), how long it
took, how many attempts, which samples were cached, tokens and cost. Each line is written with a
single ``write`` on a file opened in append mode, so lines from several threads or processes
sharing one trace file never interleave.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any


class TraceWriter:
    """Appends JSON records, one per line, to ``path`` (parent folders created on demand)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)


def read_trace(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All records of a trace file, in order (for tests, reports and replays)."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
