"""Executors: ordered results, exceptions per item, process isolation, Ray on 127.0.0.1."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from veriforge.cuda.evaluate.executor import ExecutorTimeoutError, LocalExecutor, ThreadExecutor

AXPY = Path(__file__).parents[1] / "tasks" / "data" / "c2cuda" / "vec_scale_add"


def _square(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x * x


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_thread_executor_orders_results_and_returns_exceptions() -> None:
    with ThreadExecutor(2) as ex:
        out = ex.map(_square, [1, 2, 3, 4], return_exceptions=True)
    assert out[:2] == [1, 4] and isinstance(out[2], ValueError) and out[3] == 16


def test_local_executor_runs_in_other_processes_and_survives_a_crash() -> None:
    # Worker processes import functions by module name: use library functions, not test ones.
    from veriforge.cuda.evaluate.harness import evaluate

    with LocalExecutor(2) as ex:
        assert ex.submit(os.getpid).result() != os.getpid()
        futs = [ex.submit(evaluate, AXPY, AXPY / "impls" / f, estimate=False) for f in ("naive.cu", "vectorized.cu")]
        assert [f.result().verdict.correct for f in futs] == [True, True]
    with LocalExecutor(1) as ex:
        with pytest.raises(Exception, match="terminated abruptly"):
            ex.submit(os._exit, 9).result()


def test_map_timeout() -> None:
    with ThreadExecutor(1) as ex:
        with pytest.raises(ExecutorTimeoutError):
            ex.map(_sleep, [2.0], timeout=0.2)


def test_ray_executor_local_cluster() -> None:
    pytest.importorskip("ray")
    from veriforge.cuda.evaluate.executor import RayExecutor

    ex = RayExecutor("local", num_cpus=2, timeout=20)
    try:
        assert ex.map(_square, [1, 2, 4]) == [1, 4, 16]
        assert isinstance(ex.map(_square, [3], return_exceptions=True)[0], ValueError)
        ex.timeout = 1.0
        started = time.monotonic()
        out = ex.map(_sleep, [30.0], return_exceptions=True)
        assert isinstance(out[0], ExecutorTimeoutError) and time.monotonic() - started < 20
    finally:
        ex.shutdown()
