"""The ``coarsen`` operator: grid-stride and COARSEN_FACTOR-per-thread element-wise kernels, correct on
ragged sizes for every factor, refusals of dependent or unreadable kernels, nvcc."""

from __future__ import annotations

import re

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators.coarsen import coarsen_edits

# Three independent element-wise kernels: a guard with the grid in a host local, a double in-place
# update after an early return (vectorize refuses 8-byte stores; coarsen does not), and a single
# statement calling a pure device function.
KERNELS = """\
#include <cuda_runtime.h>

__device__ int clip(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float t = a[i] + b[i];
        c[i] = t * 2.0f;
    }
}

__global__ void axpy_double(double a, const double* x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = a * x[i] + y[i];
}

__global__ void clip_kernel(const int* in, int* out, int n, int hi) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) out[i] = clip(in[i], hi);
}

extern "C" void run_add(const float* a, const float* b, float* c, int n) {
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    add_kernel<<<blocks, threads>>>(a, b, c, n);
}
extern "C" void run_axpy(double a, const double* x, double* y, int n) {
    axpy_double<<<(n + 127) / 128, 128>>>(a, x, y, n);
}
extern "C" void run_clip(const int* in, int* out, int n, int hi) {
    clip_kernel<<<(n + 63) / 64, 64>>>(in, out, n, hi);
}
"""
KERNEL_NAMES = ("add_kernel", "axpy_double", "clip_kernel")
ENTRIES = ("run_add", "run_axpy", "run_clip")


def _variant(form: str, factor: int | None) -> str:
    """KERNELS with every kernel coarsened one way (the operator applied kernel by kernel)."""
    source = KERNELS
    for name in KERNEL_NAMES:
        edits = [e for e in coarsen_edits(source) if e.evidence["kernel"] == name and e.evidence["form"] == form
                 and (factor is None or e.evidence["factor"] in (factor, 4))]
        assert edits, (name, form)
        source = edits[0].source
        if factor is not None:  # every value of the tunable: the #define moved as `tune` would move it
            source = re.sub(r"(#define COARSEN_FACTOR\w*) 4\b", rf"\1 {factor}", source)
    return source


VARIANTS = {"gs": ("grid_stride", None), "f1": ("factor", 1), "f2": ("factor", 2), "f4": ("factor", 4),
            "f8": ("factor", 8)}


def _combined() -> str:
    """All variants in one translation unit (one compile): names suffixed per variant."""
    parts = []
    for tag, (form, factor) in VARIANTS.items():
        src = _variant(form, factor).replace("#include <cuda_runtime.h>\n", "")
        names = [*KERNEL_NAMES, *ENTRIES, "clip", "COARSEN_FACTOR", "COARSEN_FACTOR_", "COARSEN_GRID_BLOCKS"]
        src = re.sub(r"\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\b", rf"\1_{tag}", src)
        parts.append(src)
    return "#include <cuda_runtime.h>\n" + "\n".join(parts)


def test_forms_and_text() -> None:
    edits = coarsen_edits(KERNELS)
    assert [(e.evidence["kernel"], e.evidence["form"], e.evidence.get("factor")) for e in edits] == [
        (k, f, x) for k in KERNEL_NAMES for f, x in (("factor", 2), ("grid_stride", None), ("factor", 4))]
    gs = _variant("grid_stride", None)
    assert "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {" in gs
    assert "return" not in gs.split("axpy_double")[1].split("__global__")[0]  # the early return became the bound
    assert "add_kernel<<<((blocks) < COARSEN_GRID_BLOCKS ? (blocks) : COARSEN_GRID_BLOCKS), threads>>>" in gs
    f4 = _variant("factor", 4)
    assert "add_kernel<<<((n + COARSEN_FACTOR - 1) / COARSEN_FACTOR + threads - 1) / threads, threads>>>" in f4
    from veriforge.optiml.operators import find_tunables

    assert "COARSEN_FACTOR" in {t.name for t in find_tunables(f4)}


@pytest.fixture(scope="module")
def module():
    return cpu.compile(_combined(), sanitize=True)


@pytest.mark.parametrize("n", [1, 7, 64, 255, 1001, 4099, 70001])
def test_every_variant_is_correct_on_ragged_sizes(module, n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    x, y0 = rng.random(n), rng.random(n)
    ints = rng.integers(-50, 150, n).astype(np.int32)
    for tag in VARIANTS:
        c = np.zeros(n, np.float32)
        module.call(f"run_add_{tag}", [a, b, c, n])
        assert np.array_equal(c, (a + b) * np.float32(2)), tag
        y = y0.copy()
        module.call(f"run_axpy_{tag}", [1.5, x, y, n])
        assert np.allclose(y, 1.5 * x + y0, rtol=1e-15, atol=0), tag
        out = np.full(n, -7, np.int32)
        module.call(f"run_clip_{tag}", [ints, out, n, 100])
        assert np.array_equal(out, np.clip(ints, 0, 100)), tag


NEAR_MISSES = {
    "neighbour read of a written array": ("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + y[i + 1];"),
    "scatter": ("y[i] = a * x[i] + y[i];", "y[n - 1 - i] = a * x[i];"),
    "atomic": ("y[i] = a * x[i] + y[i];", "atomicAdd(&y[0], x[i]);"),
    "barrier": ("y[i] = a * x[i] + y[i];", "y[i] = a * x[i]; __syncthreads();"),
    "thread index in the body": ("y[i] = a * x[i] + y[i];", "y[i] = a * x[threadIdx.x];"),
    "return in the body": ("y[i] = a * x[i] + y[i];", "if (x[i] < 0) return; y[i] = a * x[i];"),
    "parameter assigned": ("y[i] = a * x[i] + y[i];", "a = a * 2; y[i] = a * x[i];"),
    "grid does not cover": ("<<<(n + 127) / 128, 128>>>", "<<<(n / 2 + 127) / 128, 128>>>"),
    "grid variable changed": ("<<<(n + 127) / 128, 128>>>(a, x, y, n);",
                              "<<<g, 128>>>(a, x, y, n);", "int g = (n + 127) / 128; if (g > 8) g = 8;"),
    "not a global index": ("blockIdx.x * blockDim.x + threadIdx.x;", "threadIdx.x;"),
}

AXPY = """\
__global__ void axpy_double(double a, const double* x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = a * x[i] + y[i];
}

extern "C" void run_axpy(double a, const double* x, double* y, int n) {
    axpy_double<<<(n + 127) / 128, 128>>>(a, x, y, n);
}
"""


def test_axpy_alone_is_edited() -> None:
    assert len(coarsen_edits(AXPY)) == 3


@pytest.mark.parametrize("case", sorted(NEAR_MISSES))
def test_refusals(case: str) -> None:
    old, new, *pre = NEAR_MISSES[case]
    assert old in AXPY
    source = AXPY.replace(old, new)
    if pre:
        source = source.replace("    axpy_double<<<", f"    {pre[0]}\n    axpy_double<<<")
    assert coarsen_edits(source) == []


def test_in_place_alias_is_kept_element_wise() -> None:
    """``axpy(a, y, y, n)``: x[i] and y[i] are one element, still touched by one thread only."""
    assert len(coarsen_edits(AXPY.replace("(a, x, y, n);", "(a, y, y, n);"))) == 3


def test_atomic_kernels_are_left_to_aggregate() -> None:
    """The grid-stride loop of a reduction is aggregate's (with the aggregation), not coarsen's."""
    reduce_src = AXPY.replace("y[i] = a * x[i] + y[i];", "atomicAdd(y, a * x[i]);")
    assert coarsen_edits(reduce_src) == []


@pytest.mark.nvcc
def test_edits_compile_with_nvcc() -> None:
    from veriforge.cuda.toolchain.compiler import compile as nvcc_compile

    nvcc_compile(_combined(), arch="sm_90")  # raises when it does not compile


def test_search_keeps_a_coarsened_vector_add(tmp_path) -> None:
    """The bundled vector_add: the search keeps a coarsened kernel, faster by the estimate (slightly: a
    streaming kernel is bound by DRAM bandwidth either way; fewer, fuller threads on the large sizes)."""
    from veriforge.core.store import RunStore
    from veriforge.optiml.operators import BuiltinProposer
    from veriforge.optiml.xsearch import XSearchSettings, optimize

    result = optimize("c2cuda/vector_add", settings=XSearchSettings(max_evaluations=2, final_top_k=0, heldout=False),
                      proposers=[BuiltinProposer(["coarsen"])], store=RunStore(tmp_path / "runs.sqlite"))
    assert "// coarsen:" in result.best.state.source
    assert result.speedup > 1.0, (result.start_time, result.best_time)
