"""nvcc's macros in a one-pass build: ``__CUDACC__``/``__NVCC__``/``__CUDACC_VER_*__`` in every CUDA unit,
``__CUDA_ARCH__`` where nvcc's device pass would see it (veriforge/cuda/cpu/arch.py)."""

from __future__ import annotations

import pytest

from veriforge.cuda import cpu
from veriforge.cuda.cpu.arch import DEVICE_MACRO, apply_arch


def _active(src: str) -> str:
    return apply_arch(src)


def test_device_bodies_see_the_device_view_host_and_host_device_bodies_the_host_view():
    src = """__global__ void k(int* p) {
#if __CUDA_ARCH__ >= 700
    p[0] = __CUDA_ARCH__;
#endif
    auto f = [&]() {
#ifdef __CUDA_ARCH__
        p[1] = 1;
#endif
    };
}
__device__ int d() {
#if defined(__CUDA_ARCH__)
    return __CUDA_ARCH__;
#endif
}
__host__ __device__ int hd() {
#ifdef __CUDA_ARCH__
    return 1;
#endif
    return 0;
}
int host() {
#ifdef __CUDA_ARCH__
    return __CUDA_ARCH__;
#endif
    return 0;
}
"""
    out = _active(src).split("\n")
    assert out[1] == f"#if {DEVICE_MACRO} >= 700" and out[2] == f"    p[0] = {DEVICE_MACRO};"
    assert out[5] == f"#ifdef {DEVICE_MACRO}"          # a lambda inside a kernel is device code
    assert out[11] == f"#if defined({DEVICE_MACRO})" and DEVICE_MACRO in out[12]
    assert out[16] == "#ifdef __CUDA_ARCH__"            # __host__ __device__: host view
    assert out[22] == "#ifdef __CUDA_ARCH__" and out[23] == "    return __CUDA_ARCH__;"
    assert len(out) == len(src.split("\n"))


def test_namespace_scope_conditionals_take_the_device_view_only_around_device_code():
    src = """#if __CUDA_ARCH__ >= 800
template <> __device__ int red<int>(unsigned m, int v) { return v; }
#endif
#if __CUDA_ARCH__ >= 700
#include <cuda/barrier>
#endif
#ifndef __CUDA_ARCH__
#include <vector>
#endif
#if __CUDA_ARCH__ >= 600
__device__ int a() { return 1; }
int host_too() { return 2; }
#endif
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 200)
const int SHM_SIZE = 48 * 1024;
#else
const int SHM_SIZE = 16 * 1024;
#endif
"""
    out = _active(src).split("\n")
    assert out[0] == f"#if {DEVICE_MACRO} >= 800"                       # device-only function
    assert out[3] == f"#if ({DEVICE_MACRO} >= 700) || (__CUDA_ARCH__ >= 700)"  # includes: either pass
    assert out[6] == "#if 1"                                              # #ifndef + includes: either pass
    assert out[9] == "#if __CUDA_ARCH__ >= 600"                           # a host function inside: host view
    assert out[13].startswith("#if defined(__CUDA_ARCH__)")                # constants: host view, as before


PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>
#ifndef __CUDACC__
inline int max(int a, int b) { return a > b ? a : b; }   // helper_math.h's host versions
#endif
inline float lerp(float a, float b, float t) { return a + t * (b - a); }   // helper_math.h's lerp
template <class T> __device__ T warp_sum(unsigned mask, T v) { return v + 1000; }
#if __CUDA_ARCH__ >= 800
template <> __device__ int warp_sum<int>(unsigned mask, int v) { return __reduce_add_sync(mask, v); }
#endif
__host__ __device__ int side() {
#ifdef __CUDA_ARCH__
    return 1;
#else
    return 2;
#endif
}
__global__ void k(int* out) {
    int s = warp_sum<int>(0xffffffffu, 1);
    if (threadIdx.x == 0) {
#ifdef __CUDA_ARCH__
        out[0] = __CUDA_ARCH__;
#else
        out[0] = -1;
#endif
        out[1] = s;
        out[2] = side();
        out[3] = max(3, 4);
    }
}
int main() {
    int* o;
    cudaMallocManaged(&o, 4 * sizeof(int));
    k<<<1, 32>>>(o);
    cudaDeviceSynchronize();
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    printf("arch %d cc %d sum %d side %d/%d max %d lerp %g\n", o[0], p.major * 100 + p.minor * 10, o[1], o[2],
           side(), o[3], lerp(0.f, 2.f, 0.25f));
    printf("cudacc %d nvcc %d ver %d.%d runtime %d\n", __CUDACC__, __NVCC__, __CUDACC_VER_MAJOR__,
           __CUDACC_VER_MINOR__, CUDART_VERSION);
    return 0;
}
"""


def test_a_program_sees_nvcc_macros_and_its_device_code_the_device_arch():
    res = cpu.run_program(PROGRAM)
    assert res.returncode == 0, res.stderr
    first, second = res.stdout.splitlines()
    # __CUDA_ARCH__ = the compute capability the device reports; the sm_80+ specialisation
    # (__reduce_add_sync over 32 lanes) is the one compiled; __host__ __device__ code: host branch
    assert first == "arch 900 cc 900 sum 32 side 2/2 max 4 lerp 0.5"
    words = second.split()
    major, minor = words[5].split(".")
    runtime = int(words[7])
    assert words[1] == "1" and words[3] == "1" and int(major) == runtime // 1000 and int(minor) == runtime % 1000 // 10


def test_host_units_of_a_project_do_not_see_cudacc(tmp_path):
    (tmp_path / "main.cu").write_text("""#include <cstdio>
int host_side();
__global__ void k(int* o) {
#ifdef __CUDACC__
    *o = 1;
#endif
}
int main() { int* o; cudaMallocManaged(&o, 4); *o = 0; k<<<1, 1>>>(o); cudaDeviceSynchronize();
             printf("%d %d\\n", *o, host_side()); return 0; }
""")
    (tmp_path / "host.cpp").write_text("""
#ifdef __CUDACC__
int host_side() { return 1; }
#else
int host_side() { return 2; }
#endif
""")
    res = cpu.run_program(cpu.Project(files=["main.cu", "host.cpp"], root=tmp_path))
    assert res.returncode == 0, res.stderr
    assert res.stdout == "1 2\n"


def test_refusals_follow_the_device_view():
    src = """__global__ void k(int* p) {
#if __CUDA_ARCH__ < 700
    asm volatile("pmevent 1;");   // outside the PTX subset: refused where compiled
#endif
#ifdef __CUDA_ARCH__
    p[1] = 1;
#endif
}
int main() { return 0; }
"""
    assert cpu.run_program(src).returncode == 0      # the pre-sm_70 branch is not compiled
    with pytest.raises(cpu.UnsupportedFeatureError, match=r"inline PTX.*\(a\.cu:3: "):
        cpu.run_program(src.replace("< 700", ">= 700"), filename="a.cu")
