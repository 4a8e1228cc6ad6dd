"""The harness end to end on the CPU back-end: correct, wrong, crashing, hanging, cached."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from veriforge.core.store import RunStore
from veriforge.cuda.evaluate.backend import BackendRun, CRequest
from veriforge.cuda.evaluate.compare import compare
from veriforge.cuda.evaluate.cpu import CpuBackend
from veriforge.cuda.evaluate.harness import evaluate
from veriforge.cuda.tasks.generate import poison

TASKS = Path(__file__).parents[1] / "tasks" / "data"
AXPY = TASKS / "c2cuda" / "vec_scale_add"
HIST = TASKS / "c2cuda" / "histogram"

OFF_BY_ONE = r'''
__global__ void k(const float* x, const float* y, float* out, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i] + (i == 7 ? 1.0f : 0.0f);
}
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    k<<<(n + 127) / 128, 128>>>(x, y, out, alpha, n);
}
'''


def test_correct_impl_passes_with_measurements() -> None:
    res = evaluate(AXPY, AXPY / "impls" / "naive.cu")
    assert res.verdict.correct, res.verdict.reason
    assert {r.config for r in res.verdict.results} == {"small", "odd"}
    provenances = {m.provenance for m in res.measurements}
    assert "emulated" in provenances
    assert res.time("estimated", "odd") is not None and res.time("estimated", "odd") > 0
    assert all(m.backend == "cpu-runtime" for m in res.measurements if m.provenance == "emulated")


def test_wrong_element_is_reported_precisely() -> None:
    res = evaluate(AXPY, OFF_BY_ONE, estimate=False)
    assert not res.verdict.correct and not res.verdict.rejected
    msg = res.verdict.reason
    assert "config 'small'" in msg and "1 of 100 elements wrong" in msg and "index 7" in msg
    assert "expected" in msg and "got" in msg


def test_signature_mismatch_is_a_compile_error_with_the_expected_prototype() -> None:
    src = OFF_BY_ONE.replace("float alpha, int n) {\n    k<<<", "double alpha, int n) {\n    k<<<")
    res = evaluate(AXPY, src, estimate=False)
    assert not res.verdict.compiled
    assert 'extern "C" void solve(const float* x' in res.verdict.reason


def test_integer_outputs_exact_and_unwritten_detected() -> None:
    assert evaluate(HIST, HIST / "impls" / "shared.cu", estimate=False).verdict.correct
    src = (HIST / "impls" / "per_bin.cu").read_text().replace("if (b >= bins) return;", "if (b >= bins - 1) return;")
    res = evaluate(HIST, src, estimate=False)
    assert not res.verdict.correct
    assert "never written" in res.verdict.reason


def test_crash_and_hang_do_not_take_the_harness_down() -> None:
    crash = OFF_BY_ONE.replace("k<<<(n + 127) / 128, 128>>>(x, y, out, alpha, n);", "*(volatile int*)0 = 1;")
    crash = crash.replace("__global__ void k", "__global__ void k2")
    crash += "\n__global__ void unused() {}\nvoid f() { unused<<<1, 1>>>(); }\n"
    res = evaluate(AXPY, crash, estimate=False)
    assert not res.verdict.correct and "crash" in res.verdict.reason
    hang = OFF_BY_ONE.replace("if (i < n) out[i]", "volatile int spin = 1;\n    while (spin) {}\n    if (i < n) out[i]")
    started = time.monotonic()
    res = evaluate(AXPY, hang, estimate=False, timeout=1)
    assert time.monotonic() - started < 30
    assert not res.verdict.correct and res.details["status"] == "timeout"
    # Running out of time on the CPU runtime is an emulation limit: not verified, not called wrong.
    assert res.details["emulation_limit"] is True
    assert res.verdict.reason.startswith("emulation limit:") and "not known to be wrong" in res.verdict.reason
    # A crash is never an emulation limit.
    assert "emulation_limit" not in evaluate(AXPY, crash, estimate=False).details


def test_run_store_cache_is_warm_and_fast(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    first = evaluate(AXPY, AXPY / "impls" / "grid_stride.cu", store=store, estimate=False)
    assert first.verdict.correct and not first.cached
    started = time.perf_counter()
    second = evaluate(AXPY, AXPY / "impls" / "grid_stride.cu", store=store, estimate=False)
    assert second.cached and second.verdict == first.verdict
    assert time.perf_counter() - started < 0.5
    other = evaluate(AXPY, AXPY / "impls" / "grid_stride.cu", store=store, estimate=False, seed=5)
    assert not other.cached


def test_compare_is_scale_aware() -> None:
    ref = np.array([1e-3, -2e-3, 3e-3], dtype=np.float32)
    assert not compare("y", np.zeros(3, np.float32), ref, (1e-4, 1e-5)).passed
    assert compare("y", ref * (1 + 1e-6), ref, (1e-4, 1e-5)).passed
    unwritten = compare("y", poison("float32", 3), ref, (1e-4, 1e-5))
    assert "never written" in unwritten.message


def test_poison_patterns_differ_and_are_never_valid_floats() -> None:
    assert np.isnan(poison("float32", 4)).all() and np.isnan(poison("float64", 2)).all()
    assert (poison("int32", 2) != poison("int32", 2, pattern=1)).all()


@pytest.mark.parametrize("trials", [1])
def test_trials_must_be_at_least_two(trials: int) -> None:
    with pytest.raises(ValueError):
        evaluate(AXPY, OFF_BY_ONE, trials=trials)


class _SideStreamBackend(CpuBackend):
    """The CPU back-end plus the finding a GPU back-end reports for work left on a side stream."""

    def run_c(self, request: CRequest) -> BackendRun:
        run = super().run_c(request)
        run.cases[-1].problems.append(f"config {run.cases[-1].config!r}: the call returned before its work "
                                      f"finished (a side stream the timer does not wait for)")
        return run


def test_c_backend_problems_reject_the_candidate() -> None:
    impl = AXPY / "impls" / "naive.cu"
    assert evaluate(AXPY, impl, estimate=False).verdict.correct
    res = evaluate(AXPY, impl, backend=_SideStreamBackend(), estimate=False)
    assert not res.verdict.correct and res.verdict.rejected
    assert res.details["rejection"] == "dynamic"
    assert "side stream" in res.verdict.reason and "config 'odd'" in res.verdict.reason


class _RecordingBackend(CpuBackend):
    def __init__(self) -> None:
        self.baselines: list[str | None] = []

    def run_c(self, request: CRequest) -> BackendRun:
        self.baselines.append(request.baseline_source)
        return super().run_c(request)


def test_baseline_source_reaches_the_backend_and_the_cache_key(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    be = _RecordingBackend()
    impl, baseline = AXPY / "impls" / "naive.cu", AXPY / "impls" / "grid_stride.cu"
    plain = evaluate(AXPY, impl, backend=be, store=store, estimate=False)
    timed = evaluate(AXPY, impl, backend=be, store=store, estimate=False, baseline=baseline)
    assert plain.verdict.correct and timed.verdict.correct and not timed.cached
    assert plain.key != timed.key
    assert be.baselines == [None, baseline.read_text()]
