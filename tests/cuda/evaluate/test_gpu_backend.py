"""GPU back-end: timing statistics, driver generation + nvcc builds (no GPU), and real-GPU runs."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from veriforge.cuda.evaluate.backend import BackendRun, BackendUnavailableError, CaseOutput, CParam
from veriforge.cuda.evaluate.gpu import GpuBackend, _side_stream_problems, timing_measurements
from veriforge.cuda.evaluate.gpu_driver import gpu_driver_source
from veriforge.cuda.evaluate.timing import side_stream_suspect, speedup_review, summarize
from veriforge.errors import CompileError

TASKS = Path(__file__).resolve().parents[3] / "src" / "veriforge" / "data" / "tasks" / "c2cuda"
VADD_PARAMS = [CParam("a", "const float*", "in"), CParam("b", "const float*", "in"), CParam("c", "float*", "out"),
               CParam("n", "int", "scalar")]
NAIVE = r"""
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
"""
# Same kernel name as NAIVE: the two libraries must coexist in one driver process (RTLD_LOCAL).
SIDE_STREAM = r"""
#include <cuda_runtime.h>
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float s = 0.f; for (int k = 0; k < 2000; ++k) s += a[i] * 1e-9f; c[i] = a[i] + b[i] + s * 0.f; }
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    static cudaStream_t side = nullptr;
    if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    add_kernel<<<(n + 255) / 256, 256, 0, side>>>(a, b, c, n);   // the timer's stream does not wait
}
"""


# ---------------------------------------------------------------------------------------------
# Statistics and flags (pure Python).

def test_summarize_median_iqr_std():
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.n, s.median_ms, s.min_ms, s.max_ms) == (5, 3.0, 1.0, 5.0)
    assert s.iqr_ms == pytest.approx(2.0)  # quartiles 2 and 4 (linear interpolation)
    assert s.std_ms == pytest.approx(np.std([1, 2, 3, 4, 5]))
    assert summarize([2.0]).iqr_ms == 0.0
    with pytest.raises(ValueError):
        summarize([])


def test_side_stream_and_review_flags():
    assert not side_stream_suspect(1.00, 1.02)     # normal sync overhead
    assert not side_stream_suspect(0.004, 0.030)   # tiny kernel: launch + sync latency only
    assert side_stream_suspect(0.005, 2.0)         # events saw nothing, the device was busy for 2 ms
    assert speedup_review(1.0, 5.0) == (5.0, False)
    assert speedup_review(0.1, 5.0) == (50.0, True)
    assert speedup_review(0.0, 5.0) == (None, True)


def test_timing_measurements_from_driver_json():
    timing = {"device": "NVIDIA H200", "cc": "9.0", "l2_bytes": 62914560, "flush_bytes": 125829120, "warmup": 3,
              "trials": 5, "configs": [
                  {"config": "small", "sets": 2, "libs": [
                      {"event_ms": [0.010, 0.011, 0.012, 0.010, 0.011], "wall_ms": [0.03] * 5},
                      {"event_ms": [0.2, 0.21, 0.2, 0.2, 0.19], "wall_ms": [0.22] * 5}]},
                  {"config": "large", "sets": 2, "libs": [
                      {"event_ms": [0.006, 0.006, 0.007, 0.006, 0.006], "wall_ms": [3.0, 3.1, 2.9, 3.0, 3.0]},
                      {"event_ms": [3.0, 3.0, 3.0, 3.0, 3.0], "wall_ms": [3.05] * 5}]}]}
    ms = timing_measurements(timing, "gpu:NVIDIA H200", baseline=True)
    assert [m.details["config"] for m in ms] == ["small", "large"]
    small, large = ms
    assert small.provenance == "measured" and small.unit == "s" and small.samples == 5
    assert small.value == pytest.approx(0.011e-3) and small.spread == pytest.approx(0.001e-3)
    assert small.details["speedup"] == pytest.approx(0.2 / 0.011) and small.details["review"] is True
    assert small.details["side_stream_suspect"] is False and small.details["flush_l2_bytes"] == 125829120
    assert large.details["side_stream_suspect"] is True
    run = BackendRun(status="ok", cases=[CaseOutput("small", 0), CaseOutput("large", 0), CaseOutput("large", 1)],
                     measurements=ms)
    _side_stream_problems(run)
    assert run.cases[0].problems == [] and run.cases[2].problems == []
    assert "side stream" in run.cases[1].problems[0] and "'large'" in run.cases[1].problems[0]
    no_base = timing_measurements(timing, "gpu:x", baseline=False)
    assert "speedup" not in no_base[0].details


# ---------------------------------------------------------------------------------------------
# Driver generation and nvcc builds (no GPU needed).

def test_driver_source_follows_the_signature():
    params = [*VADD_PARAMS[:3], CParam("acc", "int*", "inout"), CParam("n", "int", "scalar"),
              CParam("alpha", "double", "scalar"), CParam("m", "size_t", "scalar")]
    src = gpu_driver_source("solve", params)
    assert "typedef void (*vf_entry_t)(const void*, const void*, void*, void*, int, double, " \
           "unsigned long long);" in src
    assert 'dlsym(h, "solve")' in src
    # Only outputs are restored between timed trials and downloaded after the correctness run.
    restore = src[src.index("static void vf_restore"):src.index("static void vf_call")]
    assert "a.d2" in restore and "a.d3" in restore and "a.d0" not in restore
    assert "cudaMemsetAsync(flush_buf" in src and "std::shuffle" in src
    assert src.index("cudaEventRecord(ev1") < src.index("cudaDeviceSynchronize(), \"timed call (all streams)")


@pytest.mark.nvcc
def test_driver_and_candidate_libraries_build_for_sm90():
    from veriforge.cuda.evaluate.gpu_build import build_driver, build_library

    driver = build_driver("solve", VADD_PARAMS, "sm_90")
    assert driver.is_file() and driver.stat().st_mode & 0o111
    assert build_driver("solve", VADD_PARAMS, "sm_90") == driver  # cached by content
    libs = [build_library(NAIVE, "sm_90"), build_library(SIDE_STREAM, "sm_90", filename="side.cu")]
    for impl in ("naive", "vectorized", "grid_stride"):
        libs.append(build_library((TASKS / "vector_add" / "impls" / f"{impl}.cu").read_text(), "sm_90",
                                  filename=f"{impl}.cu"))
    nm = shutil.which("nm")
    for lib in libs:
        assert lib.suffix == ".so"
        if nm:
            syms = subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
            assert " T solve" in syms
    with pytest.raises(CompileError, match=r"broken\.cu.*error"):
        build_library('extern "C" void solve(float* c) { undefined_call(c); }\n', "sm_90", filename="broken.cu")


@pytest.mark.nvcc
def test_backend_says_why_it_cannot_run_without_a_gpu(monkeypatch):
    from veriforge.cuda.evaluate import gpu_build

    monkeypatch.setattr(gpu_build.shutil, "which", lambda name: None)
    gpu_build.detect_gpu.cache_clear()
    try:
        be = GpuBackend()
        assert "no NVIDIA GPU" in (be.unavailable_reason() or "")
        from veriforge.cuda.evaluate.backend import CRequest

        with pytest.raises(BackendUnavailableError):
            be.run_c(CRequest(task_id="t", source=NAIVE, entry="solve", params=VADD_PARAMS, cases=[]))
    finally:
        gpu_build.detect_gpu.cache_clear()


# ---------------------------------------------------------------------------------------------
# On a real GPU.

@pytest.mark.gpu
def test_gpu_evaluates_checks_and_times_vector_add():
    from veriforge.cuda.evaluate.backend import TimingOptions
    from veriforge.cuda.evaluate.harness import evaluate

    be = GpuBackend(baseline_source=(TASKS / "vector_add" / "impls" / "vectorized.cu").read_text())
    res = evaluate(TASKS / "vector_add", NAIVE, backend=be, timing=TimingOptions(warmup=2, trials=10))
    assert res.verdict.correct, res.verdict.reason
    times = [m for m in res.measurements if m.provenance == "measured"]
    assert {m.details["config"] for m in times} == {"small", "odd", "large"}
    assert all(m.value > 0 and m.details["baseline_median_ms"] > 0 and m.details["interleaved"] for m in times)
    # A candidate that skips the last element is wrong on the GPU as well.
    wrong = NAIVE.replace("if (i < n)", "if (i < n - 1)")
    assert not evaluate(TASKS / "vector_add", wrong, backend=GpuBackend()).verdict.correct


@pytest.mark.gpu
def test_gpu_flags_work_left_on_a_side_stream():
    from veriforge.cuda.evaluate.backend import CCase, CRequest, TimingOptions

    n = 1 << 22
    rng = np.random.default_rng(0)
    cases = [CCase("big", t, [rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32),
                              np.full(n, np.nan, np.float32), n]) for t in range(2)]
    run = GpuBackend().run_c(CRequest(task_id="t", source=SIDE_STREAM, entry="solve", params=VADD_PARAMS,
                                      cases=cases, timing=TimingOptions(warmup=1, trials=5)))
    assert run.ok, run.message
    assert run.measurements[0].details["side_stream_suspect"] is True
    assert any("side stream" in p for c in run.cases for p in c.problems)


@pytest.mark.gpu
def test_gpu_torch_candidate_through_the_binding(tmp_path: Path):
    from veriforge.cuda.evaluate.backend import TimingOptions
    from veriforge.cuda.evaluate.harness import evaluate

    task = tmp_path / "relu_t"
    task.mkdir()
    (task / "task.toml").write_text(textwrap.dedent('''
        id = "relu_t"
        family = "torch2cuda"
        category = "elementwise"
        title = "ReLU"
        description = "y = max(x, 0)"
        [[configs]]
        name = "small"
        seed = 1
        n = 4096
        [[configs]]
        name = "big"
        seed = 2
        n = 1048576
    '''))
    (task / "reference.py").write_text(textwrap.dedent('''
        import torch
        n = 1024
        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x)
        def get_inputs():
            return [torch.randn(n)]
        def get_init_inputs():
            return []
    '''))
    cand = textwrap.dedent('''
        import torch
        from veriforge.cuda.torchbind import load_cuda
        SRC = r"""
        __global__ void relu_k(const float* x, float* y, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
        }
        extern "C" void relu(const float* x, float* y, int n) { relu_k<<<(n + 255) / 256, 256>>>(x, y, n); }
        """
        _ext = load_cuda("relu_t", SRC)
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                x = x.contiguous()
                y = torch.empty_like(x)
                _ext.relu(x, y, x.numel())
                return y
    ''')
    res = evaluate(task, cand, backend="gpu", timing=TimingOptions(warmup=2, trials=10), timeout=600)
    assert res.verdict.correct, res.verdict.reason
    times = [m for m in res.measurements if m.provenance == "measured"]
    assert {m.details["config"] for m in times} == {"small", "big"}
    assert all(m.details["baseline"].startswith("reference Model") for m in times)
