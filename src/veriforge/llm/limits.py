"""Per-back-end concurrency limits shared by every client of that back-end.

Two clients (say, the generator and the reviewer of a MoA run) that talk to the same vLLM server
must share one budget of in-flight requests, or the server sees twice the intended load. The
limit is keyed by the back-end's identity string; semaphores are per event loop because asyncio
primitives cannot cross loops.
"""

from __future__ import annotations

import asyncio
import threading
import weakref

_lock = threading.Lock()
_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def shared_limiter(identity: str, limit: int) -> asyncio.Semaphore:
    """The semaphore for ``identity`` on the running loop, created with ``limit`` slots.

    The first client to ask for a back-end decides its limit; later clients share it (and their
    own ``max_concurrency`` is ignored for that back-end), so the server-side load stays bounded.
    """
    if limit < 1:
        raise ValueError("max_concurrency must be at least 1")
    loop = asyncio.get_running_loop()
    with _lock:
        per_loop = _by_loop.setdefault(loop, {})
        sem = per_loop.get(identity)
        if sem is None:
            sem = per_loop[identity] = asyncio.Semaphore(limit)
        return sem
