"""cpu.Project: several translation units, include directories, macros, compile_commands.json;
user headers rewritten in a staged tree and part of the build-cache key; refusals naming the
real file:line; host-side asm accepted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from veriforge.cuda import cpu

HEADER = """\
#pragma once
#include <cstdio>
__global__ void scale(float* x, int n, float f);   // defined in kern.cu
template <typename T>
__global__ void fill(T* x, int n, T v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v + OFFSET;
}
inline void launch_fill(float* x, int n) {   // a launch inside a header
    fill<float> << < (n + 31) / 32,
                     32 >> > (x, n, VALUE);
}
"""

KERN = """\
#include "common.cuh"
__global__ void scale(float* x, int n, float f) {
    extern __shared__ float pad[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    pad[threadIdx.x] = f;
    if (i < n) x[i] *= pad[threadIdx.x];
}
void run_scale(float* x, int n) { scale<<<(n + 31) / 32, 32, 32 * sizeof(float)>>>(x, n, 2.0f); }
"""

MAIN = """\
#include <common.cuh>
#include <cuda_runtime.h>
void run_scale(float* x, int n);   // in the other translation unit
static unsigned long long ticks() {
    unsigned lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));   // host-side x86 asm
    return ((unsigned long long)hi << 32) | lo;
}
int main(int argc, char** argv) {
    int n = 100;
    float* d;
    cudaMalloc(&d, n * sizeof(float));
    launch_fill(d, n);
    scale<<<(n + 31) / 32, 32, 32 * sizeof(float)>>>(d, n, 3.0f);   // kernel of kern.cu
    run_scale(d, n);
    float h[100];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    asm volatile("" ::: "memory");
#if 0
    asm("mov.u32 %0, %%laneid;" : "=r"(n));   // PTX, but never compiled
#endif
    printf("%g %g %d %s\\n", h[0], h[99], ticks() > 0, argc > 1 ? argv[1] : "-");
    return 0;
}
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "common.cuh").write_text(HEADER)
    (tmp_path / "kern.cu").write_text(KERN)
    (tmp_path / "main.cpp").write_text(MAIN)
    return tmp_path


def _project(tree: Path, **kw) -> cpu.Project:
    defines = kw.pop("defines", {"VALUE": "1.5f", "OFFSET": 0})
    return cpu.Project.from_args(["main.cpp", "kern.cu"], include_dirs=["inc"], defines=defines, root=tree, **kw)


def test_two_translation_units_header_launches_and_host_asm(tree):
    res = cpu.run_program(_project(tree), argv=("hi",))
    assert res.ok, res.stderr
    assert res.stdout == "9 9 1 hi\n"   # 1.5 * 3 * 2


def test_a_changed_header_rebuilds(tree):
    proj = _project(tree)
    assert cpu.run_program(proj).stdout.startswith("9 9 ")
    header = tree / "inc" / "common.cuh"
    header.write_text(HEADER.replace("x[i] = v + OFFSET;", "x[i] = v + OFFSET + 1;"))
    assert cpu.run_program(proj).stdout.startswith("15 15 ")   # (1.5 + 1) * 6: not the cached binary


def test_errors_and_refusals_name_the_header(tree):
    header = tree / "inc" / "common.cuh"
    header.write_text(HEADER.replace("x[i] = v + OFFSET;", "x[i] = v + undefined_thing;"))
    with pytest.raises(cpu.CompileError) as err:
        cpu.run_program(_project(tree))
    assert str(err.value).startswith("inc/common.cuh:7:")
    assert err.value.diagnostics[0].file == "inc/common.cuh" and err.value.diagnostics[0].line == 7
    assert len(err.value.diagnostics) == 1   # not repeated for each translation unit including it
    header.write_text(HEADER + '__device__ int lane() { int x; asm("pmevent 1;"); return x; }\n')  # not in the subset
    with pytest.raises(cpu.UnsupportedFeatureError) as refused:
        cpu.run_program(_project(tree))
    assert "inline PTX" in str(refused.value) and "inc/common.cuh:13" in str(refused.value)


def test_device_asm_in_an_unused_branch_of_a_header_is_accepted(tree):
    header = tree / "inc" / "common.cuh"
    header.write_text(HEADER + "#if __CUDA_ARCH__ < 700\n__device__ int lane() { int x; "
                      'asm("mov.u32 %0, %%laneid;" : "=r"(x)); return x; }\n#endif\n')
    assert cpu.run_program(_project(tree)).stdout.startswith("9 9 ")


def test_compile_a_project_into_a_module(tree, monkeypatch):
    mod = cpu.compile(_project(tree))
    try:
        assert "scale" in mod.kernels and mod.template_kernels == ["fill"]
        x = np.ones(40, np.float32)
        mod.launch("fill<float>", 2, 32, [x, 40, np.float32(7)])
        mod.launch("scale", 2, 32, [x, 40, np.float32(2)], shared_mem=32 * 4)
        assert (x == 14).all()
    finally:
        mod.close()


def test_from_compile_commands(tree):
    entries = [
        {"directory": str(tree), "file": "kern.cu",
         "arguments": ["nvcc", "-arch=sm_80", "-gencode", "arch=compute_80,code=sm_80", "--use_fast_math",
                       "-Iinc", "-DVALUE=1.5f", "-D", "OFFSET=0", "-std=c++17", "-O3", "-c", "kern.cu", "-o",
                       "kern.o"]},
        {"directory": str(tree), "file": str(tree / "main.cpp"),
         "command": "g++ -I inc -DVALUE=1.5f -DOFFSET=0 -Wall -c main.cpp -o main.o"},
    ]
    (tree / "compile_commands.json").write_text(json.dumps(entries))
    proj = cpu.Project.from_compile_commands(tree / "compile_commands.json")
    assert [f.name for f in proj.files] == ["kern.cu", "main.cpp"]
    assert proj.include_dirs == [tree / "inc"]
    assert proj.defines == {"VALUE": "1.5f", "OFFSET": "0"}
    assert "-O3" in proj.flags and "-Wall" in proj.flags
    assert "-std=c++17" not in proj.cxx_flags   # the runtime needs C++20
    notes = "\n".join(proj.notes)
    assert "-arch=sm_80" in notes and "-gencode" in notes and "--use_fast_math" in notes
    assert cpu.run_program(proj).stdout.startswith("9 9 1")


def test_bad_projects_are_clear_value_errors(tree):
    with pytest.raises(ValueError, match="not allowed"):
        cpu.Project.from_args(["main.cpp"], flags=["-fplugin=evil.so"], root=tree)
    with pytest.raises(ValueError, match="does not exist"):
        cpu.Project.from_args(["nope.cu"], root=tree)
    with pytest.raises(ValueError, match="headers are found through include_dirs"):
        cpu.Project.from_args(["inc/common.cuh"], root=tree)
    with pytest.raises(ValueError, match="include directory"):
        cpu.Project.from_args(["main.cpp"], include_dirs=["missing"], root=tree)
    with pytest.raises(ValueError, match=r"main\.cpp is listed twice"):  # the file named, however spelled
        cpu.Project.from_args(["main.cpp", "kern.cu", "./main.cpp"], root=tree)


def test_the_projects_timeout_is_the_default_and_output_is_kept(tmp_path):
    (tmp_path / "spin.cu").write_text('#include <cstdio>\nint main() { printf("started\\n"); '
                                      "volatile int x = 0; for (;;) ++x; }\n")
    proj = cpu.Project.from_args(["spin.cu"], root=tmp_path, timeout=1.5)
    res = cpu.run_program(proj)
    assert res.timed_out and res.seconds < 10
    assert res.stdout == "started\n"


def test_host_only_cpp_files_are_compiled_as_plain_cpp(tmp_path):
    """As with nvcc, a .cpp without CUDA constructs is host code: CUDA's device functions
    (umin, __popc...) are not forced into it, so its own umin does not clash."""
    (tmp_path / "kern.cu").write_text(
        "__global__ void inc(int* p) { p[threadIdx.x] += umin(threadIdx.x, 2u); }\n"
        "void run_inc(int* p) { inc<<<1, 4>>>(p); }\n")
    (tmp_path / "host.cpp").write_text(
        "#include <cstdio>\n#include <cuda_runtime.h>\n"
        "static unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }\n"
        "void run_inc(int* p);\n"
        "int main() {\n  int h[4] = {0, 0, 0, 0}, *d;\n  cudaMalloc(&d, sizeof h);\n"
        "  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);\n  run_inc(d);\n"
        "  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);\n"
        '  printf("%d %d %u\\n", h[1], h[3], umin(7, 5));\n  return 0;\n}\n')
    res = cpu.run_program(cpu.Project.from_args(["host.cpp", "kern.cu"], root=tmp_path))
    assert res.ok and res.stdout == "1 2 5\n", res.stderr


def test_only_the_projects_own_folders_are_read_and_staged(tmp_path):
    """Headers are copied into the staged tree only from the sources' folders, the include dirs and
    the root: an #include of a file elsewhere is left to the sandboxed compiler."""
    from veriforge.cuda.cpu.build import collect_project

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.h").write_text("int secret = 1;\n")
    proj_dir = tmp_path / "proj"
    (proj_dir / "inc" / "sub").mkdir(parents=True)
    (proj_dir / "inc" / "a.cuh").write_text('#include "sub/b.cuh"\n#include "../../outside/secret.h"\n')
    (proj_dir / "inc" / "sub" / "b.cuh").write_text("#include <a.cuh>\n")
    (proj_dir / "main.cu").write_text(f'#include <a.cuh>\n#include "{outside / "secret.h"}"\nint main() {{}}\n')
    sources = collect_project(cpu.Project.from_args(["main.cu"], include_dirs=["inc"], root=proj_dir))
    assert sorted(h.display for h in sources.headers) == ["inc/a.cuh", "inc/sub/b.cuh"]
    texts = sources.staged_texts()
    assert all(not k.endswith("secret.h") for k in texts)
    assert texts[f"t{proj_dir}/inc/a.cuh"].startswith('#line 1 "inc/a.cuh"\n#include "sub/b.cuh"')


def test_device_properties_fit_a_plain_host_units_struct_and_nvcc_only_flags_are_noted(tmp_path):
    # found on NVIDIA's reduction sample: a plain .cpp unit has CUDA's own (smaller) cudaDeviceProp,
    # and the runtime wrote its extended struct into it (a stack overflow under ASan, wrong sums without)
    (tmp_path / "main.cpp").write_text("""\
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
int query();
int main() {
    struct { cudaDeviceProp prop; unsigned char canary[64]; } s;
    memset(s.canary, 0x5a, sizeof s.canary);
    if (cudaGetDeviceProperties(&s.prop, 0) != cudaSuccess) return 2;
    for (unsigned char c : s.canary) if (c != 0x5a) { printf("overrun\\n"); return 1; }
    printf("%d %d\\n", s.prop.multiProcessorCount, query());
    return 0;
}
""")
    (tmp_path / "kern.cu").write_text("""\
__global__ void k() {}
int query() { cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); k<<<1, 1>>>(); return p.clockRate; }
""")
    proj = cpu.Project.from_args(["main.cpp", "kern.cu"], flags=["-rdc=true", "-O2"], root=tmp_path)
    assert proj.flags == ["-O2"] and any("-rdc=true" in n and "ignored" in n for n in proj.notes)
    res = cpu.run_program(proj)
    assert res.ok and res.stdout == "16 1755000\n", res.stderr  # the CUDA unit still sees clockRate


def test_computed_includes_are_staged_like_any_other_header(tmp_path):
    """boost's idiom (the CUDA samples' interval): ``#define CFG <lib/config/user.hpp>`` then
    ``#include CFG``; the header it names must be in the staged tree the compiler reads."""
    (tmp_path / "lib" / "config").mkdir(parents=True)
    (tmp_path / "lib" / "config.hpp").write_text(
        "#pragma once\n#if !defined(LIB_USER_CONFIG)\n#define LIB_USER_CONFIG <lib/config/user.hpp>  // default\n"
        "#endif\n#include LIB_USER_CONFIG\n#include LIB_PLATFORM\n")
    (tmp_path / "lib" / "config" / "user.hpp").write_text("#define LIB_SCALE 3\n")
    (tmp_path / "lib" / "config" / "linux.hpp").write_text("#define LIB_OS 7\n")
    (tmp_path / "main.cu").write_text(
        '#include <cstdio>\n#include "lib/config.hpp"\n'
        "__global__ void k(int* o) { *o = LIB_SCALE * LIB_OS; }\n"
        "int main() { int* d; int h = 0; cudaMalloc(&d, sizeof(int)); k<<<1, 1>>>(d);\n"
        '  cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost); printf("%d\\n", h); return 0; }\n')
    # one macro defined in a header, one by -D, both naming a header under the include dir
    proj = cpu.Project.from_args(["main.cu"], include_dirs=["."], root=tmp_path,
                                 defines={"LIB_PLATFORM": '"lib/config/linux.hpp"'})
    res = cpu.run_program(proj)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "21\n"
    (tmp_path / "lib" / "config" / "user.hpp").write_text("#define LIB_SCALE 5\n")  # part of the cache key
    assert cpu.run_program(proj).stdout == "35\n"


def test_a_cuda_library_header_is_refused_naming_where_it_is_included(tmp_path):
    """llm.c's dev/cuda programs include cuBLAS in their shared header: the refusal names the
    library and the header's line, not g++'s "No such file or directory"."""
    (tmp_path / "common.h").write_text("#pragma once\n#include <cuda_runtime.h>\n#include <cublas_v2.h>\n")
    (tmp_path / "gelu.cu").write_text('#include "common.h"\n__global__ void k(float* x) { x[0] = 1.0f; }\n'
                                      "int main() { return 0; }\n")
    with pytest.raises(cpu.UnsupportedFeatureError, match=r"cuBLAS library .*\(common\.h:3: #include <cublas_v2\.h>\)"):
        cpu.run_program(cpu.Project.from_args(["gelu.cu"], root=tmp_path))
