"""restrict: ``const`` only on pointers nothing writes through — atomics, escaping element addresses and
aliases count as writes (a ``const`` there does not compile and wastes an evaluation)."""

from __future__ import annotations

from veriforge.cuda import cpu
from veriforge.optiml.operators import propose_edits

HISTOGRAM = """
__global__ void hist(int* data, int* bins, float* out, float* x, float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&bins[data[i] % 16], 1);       // written by an atomic
    float* row = out + (i / 4) * 4;          // a non-const alias, written through
    row[i % 4] = __ldg(&x[i]);               // __ldg reads: x stays const
    const float* xr = x + i;                 // a const alias: still only reads
    if (y) y[i] = *xr;
    float* zz = z;
    zz[i] = 0.0f;
}
extern "C" void solve(int* d, int* b, float* o, float* x, float* y, float* z, int n) {
    hist<<<(n + 255) / 256, 256>>>(d, b, o, x, y, z, n);
}
"""


def test_atomics_and_aliases_are_writes() -> None:
    [edit] = propose_edits(HISTOGRAM, operators=["restrict"])
    assert edit.evidence["const"] == ["data", "x"]
    assert "const int* __restrict__ data" in edit.source and "int* __restrict__ bins" in edit.source
    assert "const int* __restrict__ bins" not in edit.source  # the atomic's target (was made const)
    cpu.compile(edit.source)  # compiles: no const on anything written


def test_a_scatter_through_a_nested_index_is_a_write() -> None:
    """The bundled scatter_permutation naive kernel: ``out[idx[i]] = src[i]`` (the old pattern stopped at
    the first ``]`` and made ``out`` const)."""
    source = """
__global__ void scatter_naive(float* src, int* idx, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[idx[i]] = src[i];
}
"""
    [edit] = propose_edits(source, operators=["restrict"])
    assert edit.evidence["const"] == ["src", "idx"]


def test_atomic_through_pointer_arithmetic_and_member_writes() -> None:
    source = """
struct P { float v; };
__global__ void k(float* acc, P* p, unsigned* u, int n) {
    int i = threadIdx.x;
    atomicAdd(acc + i % 4, 1.0f);
    p[i].v = 2.0f;
    atomicMax(u, (unsigned)i);
}
"""
    [edit] = propose_edits(source, operators=["restrict"])
    assert edit.evidence["const"] == []
