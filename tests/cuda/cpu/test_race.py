"""The race probe: a missing __syncthreads() makes outputs depend on thread order."""

from __future__ import annotations

import numpy as np
import pytest

SOURCE = r"""
// Each block rotates its slice left by one through shared memory.
__global__ void rotate_racy(const float* in, float* out) {
    __shared__ float s[128];
    int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    s[t] = in[base + t];
    // missing __syncthreads(): s[t + 1] may not be written yet
    out[base + t] = s[(t + 1) % blockDim.x];
}
__global__ void rotate_fixed(const float* in, float* out) {
    __shared__ float s[128];
    int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    s[t] = in[base + t];
    __syncthreads();
    out[base + t] = s[(t + 1) % blockDim.x];
}
__global__ void sum_atomic(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, in[i]);
}
"""


@pytest.fixture(scope="module")
def mod(compile_cu):
    return compile_cu(SOURCE)


def test_race_probe_catches_missing_syncthreads(mod):
    x = np.random.default_rng(7).standard_normal(4 * 128).astype(np.float32)
    out = np.zeros_like(x)
    report = mod.race_check("rotate_racy", 4, 128, [x, out])
    assert not report.ok
    (diff,) = report.differences
    assert diff.arg_index == 1 and diff.param_type == "float*" and diff.count > 0
    assert "missing __syncthreads" in str(report)
    assert np.all(out == 0)  # the caller's arrays are untouched


def test_race_probe_passes_the_fixed_kernel_and_its_results_are_right(mod):
    x = np.random.default_rng(8).standard_normal(4 * 128).astype(np.float32)
    out = np.zeros_like(x)
    report = mod.race_check("rotate_fixed", 4, 128, [x, out])
    assert report.ok, str(report)
    assert "identical" in str(report)
    mod.launch("rotate_fixed", 4, 128, [x, out])
    np.testing.assert_array_equal(out, np.roll(x.reshape(4, 128), -1, axis=1).reshape(-1))


def test_race_probe_tolerates_atomic_summation_order(mod):
    x = np.random.default_rng(9).standard_normal(5000).astype(np.float32)
    out = np.zeros(1, np.float32)
    assert mod.race_check("sum_atomic", 20, 256, [x, out, 5000], rtol=1e-4, atol=1e-4).ok
