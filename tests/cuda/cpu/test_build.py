"""Building: the runtime and compiled modules are cached, the cache survives concurrent builders,
and the fallback without CUDA headers works."""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.cuda.cpu import build

SIMPLE = "__global__ void twice(int* x) { x[threadIdx.x] *= 2; }\n"


def test_runtime_and_modules_are_cached_by_content(tmp_path):
    rt = build.runtime()
    ready = (rt.root / "READY").stat().st_mtime_ns
    assert (rt.root / "vf_cuda.h.gch").exists() and (rt.root / "scheduler.o").exists()
    m1 = cpu.compile(SIMPLE)
    m2 = cpu.compile(SIMPLE)
    m3 = cpu.compile(SIMPLE + "// different text\n")
    assert m1._exe == m2._exe and m1._exe != m3._exe
    assert build.runtime() is rt and (rt.root / "READY").stat().st_mtime_ns == ready
    x = np.arange(8, dtype=np.int32)
    m2.launch("twice", 1, 8, [x])
    np.testing.assert_array_equal(x, 2 * np.arange(8))
    for m in (m1, m2, m3):
        m.close()


def test_cuda_header_discovery_and_fallback_switch(monkeypatch):
    found = build.find_cuda_include()
    if found is not None:
        assert (found / "cuda_runtime.h").is_file()
    monkeypatch.setenv("VERIFORGE_CPU_CUDA_HEADERS", "0")
    assert build.find_cuda_include() is None


@pytest.mark.slow
def test_fallback_types_without_cuda_headers(monkeypatch):
    monkeypatch.setenv("VERIFORGE_CPU_CUDA_HEADERS", "0")
    src = """#include <cuda_runtime.h>
__global__ void k(float4* v, int* out) {
    dim3 b = blockDim;
    float4 f = v[threadIdx.x];
    out[threadIdx.x] = (int)(f.x + f.y + f.z + f.w) + (int)b.x;
}
"""
    mod = cpu.compile(src)
    v = np.arange(4 * 16, dtype=np.float32)
    out = np.zeros(16, np.int32)
    mod.launch("k", 1, 16, [v, out])
    np.testing.assert_array_equal(out, v.reshape(16, 4).sum(1).astype(np.int32) + 16)
    mod.close()
    with pytest.raises(cpu.UnsupportedFeatureError, match=r"cuda_fp16\.h needs CUDA's headers"):
        cpu.compile("#include <cuda_fp16.h>\n__global__ void h(__half* x) {}\n")
    prog = cpu.run_program("#include <cstdio>\n#include <cuda_runtime.h>\n__global__ void k(int* x) { x[0] = 5; }\n"
                           "int main() { int* d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); int h = 0;\n"
                           "cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost); printf(\"%d %s\\n\", h,\n"
                           "cudaGetErrorString(cudaGetLastError())); return 0; }\n")
    assert prog.returncode == 0 and prog.stdout.strip() == "5 no error"
