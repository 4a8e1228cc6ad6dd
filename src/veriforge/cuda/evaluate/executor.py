"""Running many evaluations in parallel: one small interface, three implementations.

``submit(fn, *args) -> Future`` and ``map(fn, items) -> list`` (results in order; an exception in
one item is returned as that item's result when ``return_exceptions=True``).

* :class:`ThreadExecutor` - threads; right when every evaluation already isolates the candidate
  in its own subprocess (the CPU back-end does), so the harness process only waits.
* :class:`LocalExecutor` - a process pool (default); a harness-level crash in one job cannot
  take the others down.
* :class:`RayExecutor` - Ray tasks (``dist`` extra) for worker machines; GPU jobs ask for
  ``num_gpus=1``; a job past its timeout is cancelled with ``ray.cancel(force=True)``.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any

from veriforge.errors import VeriforgeError

__all__ = ["Executor", "ExecutorTimeoutError", "LocalExecutor", "RayExecutor", "ThreadExecutor", "default_workers"]


class ExecutorTimeoutError(VeriforgeError, TimeoutError):
    """A job did not finish within the executor's timeout."""


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


class Executor(ABC):
    """Submit callables (picklable for process/Ray executors) and collect their results."""

    @abstractmethod
    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> cf.Future:
        """Schedule ``fn(*args, **kwargs)``; returns a :class:`concurrent.futures.Future`."""

    def map(self, fn: Callable[..., Any], items: Iterable[Any], *, timeout: float | None = None,
            return_exceptions: bool = False) -> list[Any]:
        """``[fn(item) for item in items]`` in parallel, in order."""
        futures = [self.submit(fn, item) for item in items]
        out: list[Any] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        for fut in futures:
            try:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                out.append(fut.result(timeout=left))
            except ExecutorTimeoutError as exc:
                if not return_exceptions:
                    raise
                out.append(exc)
            except cf.TimeoutError:
                err = ExecutorTimeoutError(f"job did not finish within {timeout} s")
                if not return_exceptions:
                    raise err from None
                out.append(err)
            except Exception as exc:
                if not return_exceptions:
                    raise
                out.append(exc)
        return out

    def shutdown(self) -> None:  # noqa: B027 - optional hook; executors without workers need nothing
        """Release workers."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class ThreadExecutor(Executor):
    def __init__(self, max_workers: int | None = None) -> None:
        self._pool = cf.ThreadPoolExecutor(max_workers=max_workers or default_workers())

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> cf.Future:
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class LocalExecutor(Executor):
    """A process pool (``forkserver`` start method: no inherited threads or locks)."""

    def __init__(self, max_workers: int | None = None, start_method: str = "forkserver") -> None:
        ctx = multiprocessing.get_context(start_method)
        self._pool = cf.ProcessPoolExecutor(max_workers=max_workers or default_workers(), mp_context=ctx)

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> cf.Future:
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor(Executor):
    """Ray tasks. ``address="local"`` starts a private local cluster on 127.0.0.1 (tests);
    ``address="auto"`` joins a running cluster. ``num_gpus`` per job (1 for GPU evaluations)."""

    def __init__(self, address: str | None = "local", *, num_cpus: int | None = None, num_gpus: float = 0.0,
                 timeout: float | None = None, init_kwargs: dict[str, Any] | None = None) -> None:
        try:
            import ray
        except ImportError as exc:
            raise VeriforgeError("RayExecutor needs ray: pip install 'veriforge[dist]'") from exc
        self._ray = ray
        self._owns = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "ignore_reinit_error": True}
            if address == "local":
                kwargs["num_cpus"] = num_cpus or default_workers()
                kwargs["_node_ip_address"] = "127.0.0.1"
            else:
                kwargs["address"] = address
            kwargs.update(init_kwargs or {})
            ray.init(**kwargs)
            self._owns = True
        self.num_gpus = num_gpus
        self.timeout = timeout
        self._remote = ray.remote(_call)

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> cf.Future:
        ref = self._remote.options(num_gpus=self.num_gpus, max_retries=0).remote(fn, args, kwargs)
        fut: cf.Future = cf.Future()
        ray = self._ray
        timeout = self.timeout

        def wait() -> None:
            ready, _ = ray.wait([ref], timeout=timeout)
            if not ready:
                ray.cancel(ref, force=True)
                fut.set_exception(ExecutorTimeoutError(f"Ray job did not finish within {timeout:g} s and was "
                                                       f"cancelled"))
                return
            try:
                fut.set_result(ray.get(ref))
            except Exception as exc:
                cause = getattr(exc, "cause", None)
                fut.set_exception(cause if isinstance(cause, BaseException) else exc)

        import threading

        threading.Thread(target=wait, daemon=True).start()
        return fut

    def shutdown(self) -> None:
        if self._owns:
            self._ray.shutdown()
            self._owns = False


def _call(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    return fn(*args, **kwargs)
