"""Feed stdin and collect stdout/stderr incrementally, keeping at most a cap of each.

Reading as data arrives (instead of ``communicate()``) is what makes the cap real: a program
printing gigabytes never has more than ``cap`` bytes of it in our memory, and it is never
blocked on a full pipe (the excess is read and counted, then dropped).
"""

from __future__ import annotations

import os
import selectors
import time
from collections.abc import Callable
from typing import IO

__all__ = ["CappedBuffer", "pump"]

_CHUNK = 65536


class CappedBuffer:
    """Keeps the first ``cap`` bytes and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - max(room, 0))

    @property
    def truncated(self) -> bool:
        return self.dropped > 0


def pump(
    stdin: IO[bytes] | None,
    data: bytes,
    outputs: dict[IO[bytes], CappedBuffer],
    deadline: float,
    on_deadline: Callable[[], float | None],
) -> None:
    """Run until every output pipe reached EOF.

    When ``deadline`` (a ``time.monotonic()`` value) passes, ``on_deadline`` is called; it may
    return a new deadline (e.g. a short grace period after killing) or None to stop reading.
    """
    sel = selectors.DefaultSelector()
    view = memoryview(data)
    if stdin is not None:
        if data:
            os.set_blocking(stdin.fileno(), False)
            sel.register(stdin, selectors.EVENT_WRITE)
        else:
            stdin.close()
    for pipe in outputs:
        sel.register(pipe, selectors.EVENT_READ)
    try:
        while any(key.events & selectors.EVENT_READ for key in sel.get_map().values()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                new = on_deadline()
                if new is None:
                    return
                deadline = new
                continue
            for key, _ in sel.select(timeout=min(remaining, 1.0)):
                pipe = key.fileobj
                if key.events & selectors.EVENT_WRITE:
                    try:
                        written = os.write(pipe.fileno(), view[:_CHUNK])
                    except BlockingIOError:
                        continue
                    except (BrokenPipeError, OSError):
                        written = len(view)
                    view = view[written:]
                    if not view:
                        sel.unregister(pipe)
                        pipe.close()
                    continue
                chunk = os.read(pipe.fileno(), _CHUNK)
                if chunk:
                    outputs[pipe].feed(chunk)
                else:
                    sel.unregister(pipe)
    finally:
        sel.close()
        if stdin is not None and not stdin.closed:
            try:
                stdin.close()
            except OSError:
                pass
