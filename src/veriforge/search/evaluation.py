"""Evaluate each (state, sample) once: an in-memory map, optionally backed by the run store.

Evaluations are the expensive part of a search (compile, verify, profile), so they are keyed by
``(state key, sample index)``: sample 0 is the first measurement of a state, 1, 2, ... are
re-measurements (noise averaging, suspicious speedups, the final re-measure). A key+sample seen
before is answered from memory. With a :class:`~veriforge.core.store.RunStore`, results also go
through :meth:`RunStore.evaluate_once` under a key that includes the evaluator's fingerprint, so
they survive a crash, are shared with other runs of the same evaluator, and are computed once
even when several processes ask at the same moment.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

from veriforge.core.hashing import content_hash
from veriforge.search.errors import SearchError
from veriforge.search.interfaces import Evaluation, Evaluator, evaluator_fingerprint

if TYPE_CHECKING:
    from veriforge.core.store import RunStore

__all__ = ["EVALUATION_KIND", "EvaluationCache", "checked_evaluation"]

EVALUATION_KIND = "search"
"""The ``kind`` label of search evaluations in the run store's evaluations table."""


class EvaluationCache:
    """Calls the evaluator at most once per ``(key, sample)``.

    ``calls`` counts real evaluator calls, ``hits`` answers served from memory or the store,
    ``calls_by_key`` the real calls per state key (tests assert dedupe with it).
    """

    def __init__(self, evaluator: Evaluator[Any], *, store: RunStore | None = None,
                 fingerprint: str | None = None) -> None:
        self.evaluator = evaluator
        self.store = store
        self.fingerprint = fingerprint or evaluator_fingerprint(evaluator)
        self._memory: dict[tuple[str, int], Evaluation] = {}
        self._lock = threading.Lock()
        self.calls = 0
        self.hits = 0
        self.calls_by_key: Counter[str] = Counter()

    def store_key(self, key: str, sample: int) -> str:
        """The run-store key of one sample of one state under this evaluator."""
        return content_hash("veriforge.search.evaluation", self.fingerprint, key, str(sample))

    def remember(self, key: str, sample: int, evaluation: Evaluation) -> None:
        """Seed the memory (e.g. from a resumed tree) so the sample is never recomputed."""
        self._memory[(key, sample)] = evaluation

    async def get(self, state: Any, key: str, sample: int = 0) -> Evaluation:
        """The evaluation of ``state`` (whose key is ``key``), sample number ``sample``."""
        cached = self._memory.get((key, sample))
        if cached is not None:
            self.hits += 1
            return cached
        if self.store is None:
            result = await self._call_async(state, key)
        else:
            loop = asyncio.get_running_loop()
            computed: list[bool] = []

            def compute() -> dict[str, Any]:
                computed.append(True)
                return self._call_from_thread(state, key, loop).to_dict()

            data = await asyncio.to_thread(self.store.evaluate_once, self.store_key(key, sample), compute,
                                           EVALUATION_KIND)
            if not computed:
                self.hits += 1
            result = Evaluation.from_dict(data)
        self._memory[(key, sample)] = result
        return result

    def _count(self, key: str) -> None:
        with self._lock:
            self.calls += 1
            self.calls_by_key[key] += 1

    async def _call_async(self, state: Any, key: str) -> Evaluation:
        self._count(key)
        fn = self.evaluator.evaluate
        if inspect.iscoroutinefunction(fn):
            result = await fn(state)
        else:
            # A synchronous evaluator (compiling, running a subprocess) runs in a worker thread so a
            # batch of leaves is evaluated in parallel and the event loop stays responsive.
            result = await asyncio.to_thread(fn, state)
            if inspect.isawaitable(result):
                result = await result
        return checked_evaluation(result)

    def _call_from_thread(self, state: Any, key: str, loop: asyncio.AbstractEventLoop) -> Evaluation:
        self._count(key)
        result = self.evaluator.evaluate(state)
        if inspect.isawaitable(result):
            # An async evaluator runs on the search's event loop; this worker thread (holding the
            # store's claim on the key) waits for it.
            result = asyncio.run_coroutine_threadsafe(_await(result), loop).result()
        return checked_evaluation(result)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def checked_evaluation(result: Any) -> Evaluation:
    """``result`` if it is an Evaluation, else a clear error naming what came back."""
    if not isinstance(result, Evaluation):
        raise SearchError(f"the evaluator returned {type(result).__name__}, not an Evaluation")
    return result
