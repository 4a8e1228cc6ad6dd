"""The ``vectorize`` operator: VEC elements per thread through float4/int4/uint4 (and the 2-wide types).

Every produced edit runs on the CPU runtime against a numpy reference for sizes around the vector
width (tails), with misaligned views (the scalar fallback) and after ``tune`` changed the block size;
kernels it must not touch (scatters, shared memory, 2-D, ...) yield no edit.
"""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators import apply_tunables, find_tunables
from veriforge.optiml.operators.vectorize import vectorize_edits

SIZES = (1, 3, 4, 5, 1000, 1023)

SAXPY = """
#include <cuda_runtime.h>

__global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];  // y is read and written
    }
}

__global__ void axpby(const float* x, const float* y, float* out, float a, float b, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= n) return;
    out[i] = a * x[i] + b * y[i];  // out is only stored: no load
}

extern "C" void solve(float a, const float* x, float* y, float* out, int n) {
    int threads = 128;
    saxpy<<<(n + threads - 1) / threads, threads>>>(a, x, y, n);
    axpby<<<(n + 255) / 256, 256>>>(x, y, out, a, 0.5f, n);
}

// The same kernels on views one element in: 4-byte aligned only, so the scalar path must run.
extern "C" void solve_offset(float a, const float* x, float* y, float* out, int n) {
    if (n < 2) return;
    int threads = 128;
    saxpy<<<(n - 1 + threads - 1) / threads, threads>>>(a, x + 1, y + 1, n - 1);
    axpby<<<(n + 255) / 256, 256>>>(x + 1, y + 1, out + 1, a, 0.5f, n - 1);
}
"""

IN_PLACE_INT = """
__global__ void halve_negatives(int* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (x[i] < 0) {
            x[i] = -x[i] / 2;  // written only under a condition: the vector is loaded and stored back
        }
    }
}

extern "C" void solve(int* x, int n) {
    const int threads = 256;
    halve_negatives<<<(n + threads - 1) / threads, threads>>>(x, n);
}
"""

INDEX_AS_VALUE = """
__global__ void mix(const float* x, const unsigned int* keys, float* y, unsigned int* flags, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] * (float)(i % 7);
        y[i] = v + (float)i;
        flags[i] = keys[i] ^ (unsigned int)i;
    }
}

extern "C" void solve(const float* x, const unsigned int* keys, float* y, unsigned int* flags, int n) {
    int threads = 64;
    int blocks = (n + threads - 1) / threads;
    mix<<<blocks, threads>>>(x, keys, y, flags, n);
}
"""

GATHER = """
__global__ void gather(const float* src, const int* idx, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * src[idx[i]];
}

extern "C" void solve(const float* src, const int* idx, float* out, int m, int n) {
    (void)m;
    gather<<<(n + 255) / 256, 256>>>(src, idx, out, n);
}
"""

# A kernel the operator accepts, and one-line changes that it must refuse.
BASE = """
__global__ void k(const float* x, const int* idx, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = a * x[i];
        y[i] = v;
    }
}

extern "C" void solve(const float* x, const int* idx, float* y, int n) {
    k<<<(n + 255) / 256, 256>>>(x, idx, y, 2.0f, n);
}
"""
REFUSED = {
    "scatter store": ("y[i] = v;", "y[idx[i]] = v;"),
    "neighbour store": ("y[i] = v;", "y[i] = v; if (i + 1 < n) y[i + 1] = 0.0f;"),
    "shared memory": ("float v = a * x[i];", "__shared__ float s[256]; s[0] = x[i]; float v = s[0];"),
    "barrier": ("y[i] = v;", "y[i] = v; __syncthreads();"),
    "atomic": ("y[i] = v;", "atomicAdd(&y[i], v);"),
    "2-D index": ("int i = blockIdx.x * blockDim.x + threadIdx.x;",
                  "int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;"),
    "thread index in the body": ("y[i] = v;", "y[i] = v + (float)threadIdx.x;"),
    "grid-stride loop": ("int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {",
                         "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {"),
    "parameter updated": ("float v = a * x[i];", "a *= 2.0f; float v = a * x[i];"),
    "index modified": ("y[i] = v;", "y[i] = v; i += 1;"),
    "return in the body": ("y[i] = v;", "if (v < 0.0f) return; y[i] = v;"),
    "row per thread": ("float v = a * x[i];", "float v = 0.0f; for (int j = 0; j < n; ++j) v += x[i * n + j];"),
    "pointer passed on": ("float v = a * x[i];", "const float* p = x + i; float v = a * p[0];"),
    "aliased launch": ("(x, idx, y, 2.0f, n)", "(y, idx, y, 2.0f, n)"),
    "2-D block": ("<<<(n + 255) / 256, 256>>>", "<<<(n + 255) / 256, dim3(16, 16)>>>"),
}


def _run(source: str, function: str, args: list) -> cpu.Module:
    mod = cpu.compile(source)
    mod.call(function, args)
    return mod


def _edit(source: str, vec: int):
    [edit] = [e for e in vectorize_edits(source) if e.evidence["vec"] == vec]
    return edit


def _marked(source: str) -> str:
    """The edit with a printf at the top of its vector path (to see which path ran)."""
    out, count = [], 0
    for line in source.split("\n"):
        out.append(line)
        if line.strip().startswith("if (vf_aligned"):
            out.append('        printf("V\\n");')
            count += 1
    assert count == source.count("__global__"), "every kernel has a vector path"
    return "\n".join(out)


@pytest.mark.parametrize("vec", [4, 2])
def test_saxpy_like_kernels_are_correct_with_tails_and_misaligned_views(vec: int) -> None:
    edit = _edit(SAXPY, vec)
    assert edit.operator == "vectorize" and edit.evidence["kernels"] == ["saxpy", "axpby"]
    assert edit.evidence["pointers"] == {"saxpy": {"x": "ro", "y": "rw"}, "axpby": {"x": "ro", "y": "ro", "out": "wo"}}
    vt = f"float{vec}"
    assert f"{vt} vf_out;" in edit.source and f"const {vt} vf_x = *reinterpret_cast<const {vt}*>(x + vf_base)" \
        in edit.source
    assert f"(n + {vec - 1}) / {vec} + threads - 1) / threads" in edit.source  # the block stays `threads`
    assert f"((n + {vec - 1}) / {vec} + 255) / 256" in edit.source
    mod = cpu.compile(_marked(edit.source))
    rng = np.random.default_rng(vec)
    for n in SIZES:
        x, y0 = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        y, out = y0.copy(), np.full(n, 7.0, np.float32)
        mod.call("solve", [1.5, x, y, out, n])
        want = np.float32(1.5) * x + y0
        np.testing.assert_array_equal(y, want)
        np.testing.assert_array_equal(out, np.float32(1.5) * x + np.float32(0.5) * want)
        # both kernels take the vector path for every whole vector, and only there
        assert mod.last_call.stdout.count("V") == 2 * (n // vec)
        y, out = y0.copy(), np.full(n, 7.0, np.float32)
        mod.call("solve_offset", [1.5, x, y, out, n])
        want = np.concatenate([y0[:1], np.float32(1.5) * x[1:] + y0[1:]])
        np.testing.assert_array_equal(y, want)
        np.testing.assert_array_equal(out[1:], np.float32(1.5) * x[1:] + np.float32(0.5) * want[1:])
        assert out[0] == 7.0
        assert mod.last_call.stdout.count("V") == 0  # misaligned: element by element


@pytest.mark.parametrize("vec", [4, 2])
def test_in_place_int_kernel(vec: int) -> None:
    edit = _edit(IN_PLACE_INT, vec)
    assert edit.evidence["pointers"] == {"halve_negatives": {"x": "rw"}}
    assert f"int{vec} vf_x = *reinterpret_cast<const int{vec}*>(x + vf_base)" in edit.source
    mod = cpu.compile(edit.source)
    rng = np.random.default_rng(3)
    for n in SIZES:
        x0 = rng.integers(-1000, 1000, n).astype(np.int32)
        x = x0.copy()
        mod.call("solve", [x, n])
        np.testing.assert_array_equal(x, np.where(x0 < 0, -x0 // 2, x0))


def test_index_used_as_value_and_unsigned_elements() -> None:
    edit = _edit(INDEX_AS_VALUE, 4)
    assert "uint4 vf_flags" in edit.source and "int i = vf_base + 3;" in edit.source
    mod = cpu.compile(edit.source)
    rng = np.random.default_rng(5)
    for n in SIZES:
        x = rng.standard_normal(n).astype(np.float32)
        keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        y, flags = np.zeros(n, np.float32), np.zeros(n, np.uint32)
        mod.call("solve", [x, keys, y, flags, n])
        idx = np.arange(n)
        np.testing.assert_array_equal(y, x * (idx % 7).astype(np.float32) + idx.astype(np.float32))
        np.testing.assert_array_equal(flags, keys ^ idx.astype(np.uint32))


def test_scalar_gather_stays_scalar() -> None:
    edit = _edit(GATHER, 4)
    assert edit.evidence["pointers"] == {"gather": {"idx": "ro", "out": "wo"}}  # src[idx[i]] is not vectorised
    assert "src[vf_idx.w]" in edit.source
    mod = cpu.compile(edit.source)
    rng = np.random.default_rng(7)
    m = 777
    src = rng.standard_normal(m).astype(np.float32)
    for n in SIZES:
        idx = rng.integers(0, m, n).astype(np.int32)
        out = np.zeros(n, np.float32)
        mod.call("solve", [src, idx, out, m, n])
        np.testing.assert_array_equal(out, np.float32(2.0) * src[idx])


@pytest.mark.parametrize("block", [32, 1024])
def test_tune_after_vectorize_stays_correct(block: int) -> None:
    edit = _edit(SAXPY, 4)
    tunables = find_tunables(edit.source)
    threads = next(t for t in tunables if t.name == "threads")
    literal = min((t for t in tunables if t.kind == "launch"), key=lambda t: t.line)  # the one in solve()
    tuned = apply_tunables(edit.source, [(threads, block), (literal, block)])
    assert "saxpy<<<((n + 3) / 4 + threads - 1) / threads, threads>>>" in tuned and f"threads = {block};" in tuned
    assert f"axpby<<<((n + 3) / 4 + {block - 1}) / {block}, {block}>>>" in tuned
    mod = cpu.compile(tuned)
    rng = np.random.default_rng(block)
    for n in (5, 1023, 4099):
        x, y0 = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        y, out = y0.copy(), np.zeros(n, np.float32)
        mod.call("solve", [1.5, x, y, out, n])
        np.testing.assert_array_equal(y, np.float32(1.5) * x + y0)


def test_base_kernel_is_accepted() -> None:
    assert [e.evidence["vec"] for e in vectorize_edits(BASE)] == [4, 2]


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused(case: str) -> None:
    old, new = REFUSED[case]
    assert old in BASE
    assert vectorize_edits(BASE.replace(old, new)) == []


def test_applying_twice_gives_nothing_and_findings_raise_the_prior() -> None:
    plain = _edit(SAXPY, 4)
    assert vectorize_edits(plain.source) == []
    finding = {"kind": "memory_bound", "severity": 0.8, "line": 5, "message": "DRAM bound"}
    motivated = next(e for e in vectorize_edits(SAXPY, [finding]) if e.evidence["vec"] == 4)
    assert motivated.prior > plain.prior and motivated.prior >= 2.0
    assert motivated.evidence["findings"][0]["kind"] == "memory_bound"
    gather = _edit(GATHER, 4)
    stencil_like = BASE.replace("float v = a * x[i];", "float v = a * x[i] + (i > 0 ? x[i - 1] : 0.0f);")
    strided = _edit(stencil_like, 4)
    assert strided.evidence["scalar_reads"] == ["x[i - 1]"] and strided.prior < gather.prior


@pytest.mark.nvcc
def test_edits_compile_with_nvcc() -> None:
    from veriforge.cuda.toolchain.compiler import compile as nvcc_compile

    for source in (SAXPY, IN_PLACE_INT, INDEX_AS_VALUE, GATHER):
        for edit in vectorize_edits(source):
            nvcc_compile(edit.source, arch="sm_90")  # raises when it does not compile


def test_bundled_vector_add_through_the_evaluator() -> None:
    from veriforge.core.types import Candidate
    from veriforge.cuda.evaluate import evaluate
    from veriforge.cuda.tasks import bundled_tasks, load_task
    from veriforge.optiml.objective import time_of

    spec = next(s for s in map(load_task, bundled_tasks("c2cuda")) if s.id == "vector_add")
    naive = (spec.folder / spec.implementations[0].file).read_text()
    base, _ = time_of(evaluate(spec, Candidate(source=naive, language="cuda"), backend="cpu").measurements,
                      "estimated")
    result = evaluate(spec, Candidate(source=_edit(naive, 4).source, language="cuda"), backend="cpu")
    assert result.correct, result.verdict.reason
    t, _ = time_of(result.measurements, "estimated")
    assert base and t and t < 1.05 * base  # already at DRAM bandwidth in the model: no loss either
