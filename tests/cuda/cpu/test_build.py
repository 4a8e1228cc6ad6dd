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


@pytest.mark.parametrize("sanitize", [False, True], ids=["fast", "asan"])
def test_every_variant_compiles_kernels_against_its_precompiled_header(sanitize, tmp_path):
    """g++ silently re-parses vf_cuda.h when the .gch is missing or was built with other flags
    (~1.8 s more CPU per sanitized compile): every variant must ship one that the exact command of
    build_executable (its flags, -include vf_cuda.h) accepts."""
    import subprocess

    rt = build.runtime(sanitize=sanitize)
    assert (rt.root / "vf_cuda.h.gch").is_file()
    (tmp_path / "k.cpp").write_text(SIMPLE)
    # -H lists the headers used; a valid PCH is marked "!", an invalid one "x" (-Winvalid-pch says why)
    res = subprocess.run([rt.compiler.path, *rt.flags, "-Winvalid-pch", "-H", "-fsyntax-only", "-x", "c++",
                          "-include", str(rt.root / "vf_cuda.h"), "k.cpp"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"! {rt.root / 'vf_cuda.h.gch'}" in res.stderr.splitlines(), res.stderr[-2000:]


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
