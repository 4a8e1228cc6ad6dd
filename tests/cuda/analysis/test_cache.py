"""Analyses are memoised per process by their full inputs, and callers get their own copy."""

from __future__ import annotations

import importlib

from veriforge.cuda import analysis

analyze_mod = importlib.import_module("veriforge.cuda.analysis.analyze")  # the package exports the function

SRC = r"""
__global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
"""


def test_same_inputs_hit_the_cache_and_return_a_private_copy(monkeypatch) -> None:
    calls = []
    real = analyze_mod.analyze_uncached
    monkeypatch.setattr(analyze_mod, "analyze_uncached", lambda *a, **k: calls.append(a) or real(*a, **k))
    kw = dict(kernel="scale", grid=(64,), block=(256,), params={"n": 16384, "a": 2.0}, use_nvcc=False)
    first = analysis.analyze(SRC + "// cache test 1\n", **kw)
    first.flops = -1.0  # a caller changing its report must not change what others get
    second = analysis.analyze(SRC + "// cache test 1\n", **kw)
    assert len(calls) == 1 and second.flops == 16384
    analysis.analyze(SRC + "// cache test 1\n", **{**kw, "params": {"n": 8192, "a": 2.0}})
    analysis.analyze(SRC + "// cache test 2\n", **kw)
    assert len(calls) == 3  # other parameters or other source: analysed again
    analysis.analyze(SRC + "// cache test 2\n", **kw, include_dirs=["/opt/other"])
    assert len(calls) == 4  # other headers may give ptxas other resources
