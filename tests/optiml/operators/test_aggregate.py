"""The ``aggregate`` operator: single-address atomics become warp / block / grid-stride aggregated reductions."""

from __future__ import annotations

import re

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators import find_tunables
from veriforge.optiml.operators.aggregate import aggregate_edits

FLOAT_SUM = """
#include <cuda_runtime.h>

__global__ void sum_atomic(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(out, x[i]);
    }
}

extern "C" void solve(const float* x, float* out, int n) {
    int threads = 256;
    sum_atomic<<<(n + threads - 1) / threads, threads>>>(x, out, n);
}
"""

COUNT_IF = """
#include <cuda_runtime.h>
#define TPB 128

__global__ void count_above(const float* x, float t, int* count, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n && x[i] > t) atomicAdd(count, 1);
}

extern "C" void solve(const float* x, float t, int* count, int n) {
    count_above<<<(n + TPB - 1) / TPB, TPB>>>(x, t, count, n);
}
"""

# the slot is a thread-independent offset from a scalar parameter; no grid-stride form (extra statement)
UNSIGNED_MAX = """
#include <cuda_runtime.h>

__global__ void umax(const unsigned int* v, unsigned int* m, int slot, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int w = i < n ? v[i] : 0u;
    if (i < n) atomicMax(&m[slot], w ^ 0x5a5a5a5au);
}

extern "C" void solve(const unsigned int* v, unsigned int* m, int slot, int n) {
    umax<<<(n + 63) / 64, 64>>>(v, m, slot, n);
}
"""

SIZES = [1, 5, 31, 33, 300, 1000]


def _variants(source: str) -> dict[str, str]:
    edits = aggregate_edits(source)
    assert all(e.operator == "aggregate" for e in edits)
    return {e.evidence["variant"]: e.source for e in edits}


def _resized(source: str, threads: int) -> str:
    """The block size changed by text, as `tune` does it."""
    tunable = next(t for t in find_tunables(source) if "block" in t.roles)
    out = source
    for s, e, off in sorted(tunable.spans, reverse=True):
        out = out[:s] + str(threads + off) + out[e:]
    return out


def _check_sum(source: str) -> None:
    mod = cpu.compile(source)
    for n in SIZES:
        x = np.random.default_rng(n).uniform(-1, 1, n).astype(np.float32)
        out = np.zeros(1, np.float32)
        mod.call("solve", [x, out, n])
        np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-5)


def _check_count(source: str) -> None:
    mod = cpu.compile(source)
    for n in SIZES:
        x = np.random.default_rng(n).integers(-5, 5, n).astype(np.float32)
        count = np.zeros(1, np.int32)
        mod.call("solve", [x, np.float32(0.0), count, n])
        assert count[0] == int((x > 0).sum())


def _check_umax(source: str) -> None:
    mod = cpu.compile(source)
    for n in SIZES:
        v = np.random.default_rng(n).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        m = np.array([7, 3, 11], np.uint32)
        mod.call("solve", [v, m, 1, n])
        assert m[1] == max(3, int((v ^ np.uint32(0x5A5A5A5A)).max()))
        assert m[0] == 7 and m[2] == 11


def test_float_sum_all_variants_correct_and_after_retuning() -> None:
    variants = _variants(FLOAT_SUM)
    assert set(variants) == {"warp", "block", "grid_stride"}
    gs = variants["grid_stride"]
    assert "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)" in gs
    assert "#define AGG_GRID_THREADS" in gs
    assert "<<<(((n + threads - 1) / threads) < AGG_GRID_THREADS / threads ? " in gs
    assert "if ((threadIdx.x & 31) == 0 && agg != 0.0f) atomicAdd(out, agg);" in variants["warp"]
    for name, source in variants.items():
        assert source.count("atomicAdd") == 1 and "__shfl_xor_sync" in source, name
        _check_sum(source)
        for threads in (32, 1024):  # the block size stays a tunable and the result stays correct
            _check_sum(_resized(source, threads))


def test_count_with_predicate_all_variants() -> None:
    variants = _variants(COUNT_IF)
    assert set(variants) == {"warp", "block", "grid_stride"}
    assert "if (i < n && x[i] > t) agg += (int)(1);" in variants["grid_stride"]
    for source in variants.values():
        _check_count(source)
        _check_count(source.replace("#define TPB 128", "#define TPB 512"))


def test_unsigned_max_with_constant_offset_address() -> None:
    variants = _variants(UNSIGNED_MAX)
    assert set(variants) == {"warp", "block"}  # an extra statement: no grid-stride loop
    assert "unsigned int agg = 0u;" in variants["block"]
    assert "atomicMax(&m[slot], agg)" in variants["block"]
    for source in variants.values():
        _check_umax(source)
        _check_umax(source.replace("(n + 63) / 64, 64", "(n + 255) / 256, 256"))


def test_priors_follow_findings() -> None:
    plain = aggregate_edits(FLOAT_SUM)
    assert [e.evidence["variant"] for e in plain] == ["grid_stride", "block", "warp"]
    assert plain[0].prior == 1.5
    motivated = aggregate_edits(FLOAT_SUM, [{"kind": "memory_bound", "severity": 0.5, "line": 4, "message": ""}])
    assert motivated[0].prior == 2.5 and motivated[0].evidence["findings"][0]["kind"] == "memory_bound"


REFUSED = {
    "histogram": """
__global__ void hist(const int* x, int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[x[i] & 15], 1);
}
extern "C" void solve(const int* x, int* bins, int n) { hist<<<(n + 255) / 256, 256>>>(x, bins, n); }
""",
    "thread-indexed address": """
__global__ void scat(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(y + i, x[i]);
}
extern "C" void solve(const float* x, float* y, int n) { scat<<<(n + 255) / 256, 256>>>(x, y, n); }
""",
    "return value used": """
__global__ void take(const float* x, int* slot, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.0f) { int k = atomicAdd(slot, 1); y[k] = x[i]; }
}
extern "C" void solve(const float* x, int* slot, float* y, int n) { take<<<(n + 255) / 256, 256>>>(x, slot, y, n); }
""",
    "early return": """
__global__ void sum_ret(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(out, x[i]);
}
extern "C" void solve(const float* x, float* out, int n) { sum_ret<<<(n + 255) / 256, 256>>>(x, out, n); }
""",
    "block not a multiple of 32": """
__global__ void sum_odd(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}
extern "C" void solve(const float* x, float* out, int n) { sum_odd<<<(n + 99) / 100, 100>>>(x, out, n); }
""",
    "existing shared memory": """
__global__ void sum_sh(const float* x, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(out, s[0]);
}
extern "C" void solve(const float* x, float* out, int n) { sum_sh<<<(n + 255) / 256, 256>>>(x, out, n); }
""",
    "atomicCAS loop": """
__global__ void fmax_cas(const float* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int old = *out;
        while (__int_as_float(old) < x[i]) {
            int seen = atomicCAS(out, old, __float_as_int(x[i]));
            if (seen == old) break;
            old = seen;
        }
    }
}
extern "C" void solve(const float* x, int* out, int n) { fmax_cas<<<(n + 255) / 256, 256>>>(x, out, n); }
""",
    "float max (no atomicMax on float)": """
__global__ void fmx(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicMax(out, x[i]);
}
extern "C" void solve(const float* x, float* out, int n) { fmx<<<(n + 255) / 256, 256>>>(x, out, n); }
""",
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refusals(case: str) -> None:
    assert aggregate_edits(REFUSED[case]) == []


def test_grid_stride_needs_a_covering_grid() -> None:
    # a grid that covers only half of n: looping over all of n would change the result, so no grid-stride form
    half = FLOAT_SUM.replace("(n + threads - 1) / threads, threads", "(n / 2 + threads - 1) / threads, threads")
    assert set(_variants(half)) == {"warp", "block"}


@pytest.mark.nvcc
def test_edits_compile_with_nvcc() -> None:
    from veriforge.cuda.toolchain.compiler import compile as nvcc_compile

    for source in (FLOAT_SUM, COUNT_IF, UNSIGNED_MAX):
        for e in aggregate_edits(source):
            result = nvcc_compile(e.source, arch="sm_90")  # raises when it does not compile
            assert not [w for w in result.warnings if re.search(r"agg", str(w))]


def test_bundled_argmax_through_the_evaluator() -> None:
    from veriforge.core.types import Candidate
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.tasks import bundled_tasks, load_task

    spec = next(s for s in map(load_task, bundled_tasks("c2cuda")) if s.id == "argmax")
    naive = (spec.folder / spec.implementations[0].file).read_text()
    edits = aggregate_edits(naive)
    assert {e.evidence["variant"] for e in edits} == {"warp", "block", "grid_stride"}
    for e in edits:
        result = evaluate(spec, Candidate(source=e.source, language="cuda"), backend="cpu")
        assert result.correct, result.verdict.reason
