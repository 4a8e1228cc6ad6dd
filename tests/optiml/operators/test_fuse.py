"""The ``fuse`` operator: consecutive element-wise launches become one kernel.

Fused programs run on the CPU runtime against numpy (sizes around the block size), also after
``tune`` changed the block size; chains it must not fuse (a neighbour read of a written buffer,
different grids, a barrier, host code between the launches, ...) yield no edit.
"""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators import apply_tunables, find_tunables
from veriforge.optiml.operators.fuse import fuse_edits

SIZES = (1, 255, 256, 257, 1000)

TWO = """
#include <cuda_runtime.h>

__global__ void square(const float* a, float* t, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) t[i] = a[i] * a[i];
}

__global__ void shift(float* out, const float* src, const float* w, float c, int n, int m) {
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    if (idx >= n) return;
    float i = src[idx] + c;  // a local named like the other kernel's index
    out[idx] = i * w[idx % m];
}

extern "C" void solve(const float* x, const float* w, float* tmp, float* y, float c, int n, int m) {
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    square<<<blocks, threads>>>(x, tmp, n);
    int unused = n / 2;
    shift<<<blocks, threads>>>(y, tmp, w, c, n, m);
}
"""

IN_PLACE = """
__global__ void add1(float* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (v[i] < 0.0f) v[i] = -v[i];
    }
}

__global__ void twice(float* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = 2.0f * v[i] + 1.0f;
}

extern "C" void solve(float* v, int n) {
    add1<<<(n + 127) / 128, 128>>>(v, n);
    twice<<<(n + 127) / 128, 128>>>(v, n);
    twice<<<(n + 127) / 128, 128>>>(v, n);
}
"""

REFUSED = {
    "neighbour read": ("out[idx] = i * w[idx % m];", "out[idx] = i * w[idx % m] + src[idx + 1 < n ? idx + 1 : idx];"),
    "different grid": ("shift<<<blocks, threads>>>", "shift<<<blocks + 1, threads>>>"),
    "different block": ("shift<<<blocks, threads>>>", "shift<<<blocks, 128>>>"),
    "different bound": ("(y, tmp, w, c, n, m)", "(y, tmp, w, c, n - 1, m)"),
    "barrier": ("if (idx >= n) return;", "__syncthreads();\n    if (idx >= n) return;"),
    "shared memory": ("float i = src[idx] + c;", "__shared__ float s[256]; s[0] = 0.0f; float i = src[idx] + c;"),
    "atomic": ("out[idx] = i * w[idx % m];", "atomicAdd(&out[idx], i * w[idx % m]);"),
    "grid-stride loop": ("if (i < n) t[i] = a[i] * a[i];",
                         "for (; i < n; i += blockDim.x * gridDim.x) t[i] = a[i] * a[i];"),
    "synchronize between": ("int unused = n / 2;", "cudaDeviceSynchronize();"),
    "memcpy between": ("int unused = n / 2;", "cudaMemcpy(y, tmp, 4, cudaMemcpyDeviceToDevice);"),
    "stream": ("shift<<<blocks, threads>>>", "shift<<<blocks, threads, 0, 0>>>"),
    "offset view": ("(y, tmp, w, c, n, m)", "(y, tmp + 1, w, c, n, m)"),
    "hidden offset alias": ("int threads = 256;", "float* t2 = tmp + 1;\n    int threads = 256;"),
    "conditional launch": ("    shift<<<", "    if (n > 4) shift<<<"),
}


def _fused(source: str):
    [edit] = fuse_edits(source)
    assert edit.operator == "fuse"
    return edit


def _check_two(source: str, sizes=SIZES) -> None:
    mod = cpu.compile(source)
    rng = np.random.default_rng(0)
    for n in sizes:
        m = 7
        x, w = rng.standard_normal(n).astype(np.float32), rng.standard_normal(m).astype(np.float32)
        tmp, y = np.zeros(n, np.float32), np.zeros(n, np.float32)
        mod.call("solve", [x, w, tmp, y, 0.5, n, m])
        np.testing.assert_allclose(tmp, x * x, rtol=1e-6)
        np.testing.assert_allclose(y, (x * x + np.float32(0.5)) * w[np.arange(n) % m], rtol=1e-5)


def test_second_reads_first_output_at_i() -> None:
    edit = _fused(TWO)
    assert edit.evidence["kernels"] == ["square", "shift"] and edit.evidence["removed"] == ["shift", "square"]
    src = edit.source
    assert src.count("<<<") == 1 and "square_fused<<<blocks, threads>>>(x, tmp, n, y, w, c, m);" in src
    assert "__global__ void square(" not in src and "int unused = n / 2;" in src
    assert edit.evidence["registers"] == ["tmp"] and "tmp[fz_i] = fz_tmp;" in src  # intermediate in a register
    assert "int fz_i = blockIdx.x" in src  # `i` is a local of shift: the fused index gets a fresh name
    _check_two(src)


@pytest.mark.parametrize("block", [32, 1024])
def test_tune_after_fuse_stays_correct(block: int) -> None:
    src = _fused(TWO).source
    threads = next(t for t in find_tunables(src) if t.name == "threads")
    tuned = apply_tunables(src, [(threads, block)])
    assert f"int threads = {block};" in tuned
    _check_two(tuned, (5, 1023, 2049))


def test_in_place_chain_with_conditional_write() -> None:
    edit = _fused(IN_PLACE)
    assert edit.evidence["registers"] == []  # first step writes conditionally: stays in memory
    assert edit.source.count("{  // twice") == 2
    mod = cpu.compile(edit.source)
    rng = np.random.default_rng(1)
    for n in (1, 127, 128, 129, 1000):
        v0 = rng.standard_normal(n).astype(np.float32)
        v = v0.copy()
        mod.call("solve", [v, n])
        np.testing.assert_allclose(v, 2 * (2 * np.abs(v0) + 1) + 1, rtol=1e-6)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused(case: str) -> None:
    old, new = REFUSED[case]
    assert old in TWO
    source = TWO.replace(old, new)
    if case == "hidden offset alias":
        source = source.replace("(y, tmp, w,", "(y, t2, w,")
    assert fuse_edits(source) == []


def test_single_launch_and_findings_prior() -> None:
    edit = _fused(TWO)
    assert fuse_edits(edit.source) == []  # nothing left to fuse
    assert edit.prior == pytest.approx(1.2)
    finding = {"kind": "memory_bound", "severity": 0.7, "line": 3, "message": "DRAM bound"}
    [motivated] = fuse_edits(TWO, [finding])
    assert motivated.prior == pytest.approx(2.7) and motivated.evidence["findings"][0]["kind"] == "memory_bound"


@pytest.mark.nvcc
def test_edits_compile_with_nvcc() -> None:
    from veriforge.cuda.toolchain.compiler import compile as nvcc_compile

    for source in (TWO, IN_PLACE):
        nvcc_compile(_fused(source).source, arch="sm_90")  # raises when it does not compile


def test_bundled_fused_scale_bias_clamp_through_the_evaluator() -> None:
    from veriforge.core.types import Candidate
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.tasks import bundled_tasks, load_task
    from veriforge.optiml.objective import time_of

    spec = next(s for s in map(load_task, bundled_tasks("c2cuda")) if s.id == "fused_scale_bias_clamp")
    naive = (spec.folder / spec.implementations[0].file).read_text()
    best = (spec.folder / "impls" / "fused_2d.cu").read_text()
    edit = _fused(naive)
    assert edit.evidence["kernels"] == ["scale_kernel", "bias_kernel", "clamp_kernel"]
    result = evaluate(spec, Candidate(source=edit.source, language="cuda"), backend="cpu")
    assert result.correct, result.verdict.reason
    t, _ = time_of(result.measurements, "estimated")
    t_best, _ = time_of(evaluate(spec, Candidate(source=best, language="cuda"), backend="cpu").measurements,
                        "estimated")
    assert t and t_best and t < 1.10 * t_best  # one launch, y through a register: close to the hand-fused one
