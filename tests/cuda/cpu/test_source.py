"""The source front end: masking, kernel discovery, rewrites that keep line numbers, feature checks."""

from __future__ import annotations

import pytest

from veriforge.cuda.cpu.regions import strip_region_code
from veriforge.cuda.cpu.source import check_supported, mask_source, normalize_kernel_name, rewrite, scan
from veriforge.errors import UnsupportedFeatureError


def test_mask_blanks_comments_and_strings_but_keeps_layout():
    src = 'int a; // k<<<1,1>>>()\n/* asm( */ const char* s = "<<<x>>>"; char c = \'"\';\nint b;'
    masked = mask_source(src)
    assert len(masked) == len(src)
    assert masked.count("\n") == src.count("\n")
    assert "<<<" not in masked and "asm" not in masked
    assert "int a;" in masked and "int b;" in masked


def test_scan_finds_kernels_namespaces_templates_and_main():
    src = """
namespace ns {
template <int N> __global__ void red(float* x) {}
}
__global__ __launch_bounds__(256, 2) void add(const float* __restrict__ a, int n) {}
__global__ void decl_only(int);
static __global__ void twice(int) {}
static __global__ void twice(float) {}
int main() { return 0; }
"""
    s = scan(src)
    names = {k.name: k for k in s.kernels}
    assert names["ns::red"].is_template and names["ns::red"].line == 3
    assert not names["add"].is_template and names["add"].line == 5
    assert "decl_only" not in names  # declarations are not launchable
    assert "twice" in s.overloaded
    assert [k.name for k in s.plain_kernels] == ["add"]
    assert s.has_main


def test_launch_rewrite_is_bracket_aware_and_keeps_line_numbers():
    src = ("int main() {\n  ns::red<4><<<dim3(32, 8), 256,\n     0>>>(p);\n"
           "  add<<<(n + 255) / 256, 256, 0, stream>>>(a, n);\n  table[i]<<<1, (N>>1)>>>(q);\n}\n")
    out = rewrite(scan(src))
    assert out.count("\n") == src.count("\n")
    lines = out.splitlines()
    assert '::vf::LaunchConfig(dim3(32, 8), 256,' in lines[1] and '"ns::red<4>"' in lines[2]
    assert "ns::red<4>(vf_args_...)" in lines[2] and lines[2].endswith("(p);")
    assert '::vf::LaunchConfig((n + 255) / 256, 256, 0, stream), "add"' in lines[3]
    assert "table[i](vf_args_...)" in lines[4] and "LaunchConfig(1, (N>>1))" in lines[4]
    assert "<<<" not in out


def test_extern_shared_rewrite_inside_functions_and_at_namespace_scope():
    src = ("extern __shared__ float gsm[];\n__global__ void k() {\n"
           "  extern __shared__ __align__(16) unsigned char smem[];\n  gsm[0] = smem[0];\n}\n")
    out = strip_region_code(rewrite(scan(src)))  # block functions restore the numbering with #line
    assert out.count("\n") == src.count("\n")
    assert "static ::vf::DynamicShared<float> gsm;" in out
    assert "unsigned char* smem = reinterpret_cast<unsigned char*>(::vf::dynamic_shared());" in out


@pytest.mark.parametrize(
    ("code", "feature"),
    [
        ('__global__ void k(int* p) {\n  asm volatile("pmevent 1;");\n}', "inline PTX"),   # outside the subset
        ("#include <cub/cub.cuh>\n__global__ void k() {}", "CUB"),
        ("#include <stdio.h>\n#include <cublas_v2.h>\n__global__ void k() {}", "NVIDIA's cuBLAS library"),
        ('#include "curand_kernel.h"\n__global__ void k() {}', "cuRAND (device API)"),
        ("__global__ void k(float* s) {\n  wgmma::fence();\n}", "wgmma"),
        ("__global__ void __cluster_dims__(2, 1, 1) k() {}", "clusters"),
    ],
)
def test_unsupported_features_are_named_with_their_line(code, feature):
    with pytest.raises(UnsupportedFeatureError) as err:
        check_supported(scan(code), "k.cu")
    assert feature in str(err.value)
    expected_line = next(i for i, line in enumerate(code.splitlines(), 1)
                         if any(t in line for t in ("asm", "cub/", "wgmma", "__cluster", "cublas", "curand")))
    assert f"k.cu:{expected_line}" in str(err.value)


def test_features_in_comments_or_grid_rank_only_are_fine():
    check_supported(scan('// asm("x");\n__global__ void k() { const char* s = "wmma"; }'), "k.cu")
    check_supported(scan("__global__ void k(){ auto g = cooperative_groups::this_grid(); (void)g.thread_rank(); }"),
                    "k.cu")


def test_kernel_name_normalisation():
    assert normalize_kernel_name(" reduce< 256 , float > ") == "reduce<256,float>"
    assert normalize_kernel_name("ns :: k<unsigned int>") == "ns::k<unsigned int>"


def test_extern_shared_with_nested_parentheses_in_align():
    # F13: `__align__(sizeof(T))` (typed dynamic shared memory in templates, PyTorch / caffe2 style)
    src = ("template <typename T> __global__ void rev(T* d) {\n"
           "    extern __shared__ __align__(sizeof(T)) unsigned char my_smem[];\n"
           "    extern __shared__ alignas(alignof(float4)) float f4[];\n"
           "}\n")
    out = strip_region_code(rewrite(scan(src)))
    assert "unsigned char* my_smem = reinterpret_cast<unsigned char*>(::vf::dynamic_shared());" in out
    assert "float* f4 = reinterpret_cast<float*>(::vf::dynamic_shared());" in out
    assert "extern" not in out and out.count("\n") == src.count("\n")


def test_launch_arguments_do_not_odr_use_uncaptured_constants():
    # F10: the rewrite keeps the user's argument list as a call on the launcher (by value in C++)
    src = "int main() {\n  const int n = 8;\n  auto f = [](int* d) { k<<<1, n>>>(d, n); };\n}\n"
    out = rewrite(scan(src))
    assert "(d, n);" in out and "LaunchConfig(1, n)" in out


def test_volatile_pointers_become_lockstep_pointers():
    # F9: warp-synchronous code over volatile pointers runs the warp's lanes in lockstep
    src = """__device__ void warpReduce(volatile int *sdata, int tid) {
    sdata[tid] += sdata[tid + 32];
}
template <class T> __device__ T scan(volatile T* __restrict__ s, unsigned int lane);
__global__ void k(float* x, volatile int* flag) {
    volatile float *vs = x;
    float volatile* w = x, *u = x;
    volatile unsigned int* q;
    volatile int counter = 0;
    ((volatile float*)x)[0] = 1.0f;
    volatile void* raw = x;
}
volatile int* g_ptr;
"""
    full = rewrite(scan(src))
    # the kernel's block function (regions.py) reads the LockstepPtr of `flag` declared before it
    assert full.index("::vf::LockstepPtr<int> flag(vf_volatile_flag);") < full.index("::vf::region_begin")
    assert "::vf::lockstep_raw(flag)" in full
    out = strip_region_code(full)  # block functions restore the numbering with #line
    lines = out.splitlines()
    assert len(lines) == len(src.splitlines())
    assert lines[0] == ("__device__ void warpReduce(volatile int *vf_volatile_sdata, int tid) { "
                        "::vf::LockstepPtr<int> sdata(vf_volatile_sdata);")
    assert lines[3] == src.splitlines()[3]  # a declaration without a body is left alone
    assert "volatile int* vf_volatile_flag) { ::vf::LockstepPtr<int> flag(vf_volatile_flag);" in lines[4]
    assert lines[5].strip() == "::vf::LockstepPtr<float> vs = x;"
    assert lines[6].strip() == "float volatile* w = x, *u = x;"  # two declarators: untouched
    assert lines[7].strip() == "::vf::LockstepPtr<unsigned int> q;"
    assert lines[8].strip() == "volatile int counter = 0;"  # not a pointer
    assert lines[9].strip() == "((::vf::LockstepPtr<float>)x)[0] = 1.0f;"
    assert lines[10].strip() == "volatile void* raw = x;"
    assert lines[12] == "volatile int* g_ptr;"  # namespace scope: untouched


def test_launches_spelled_with_spaces_and_newlines_are_rewritten():
    src = ("int main() {\n  k << < g, b >> > (p);\n  k <<<\n    g, b\n  >>> (p);\n  k<< <1, 2>>>(p);\n"
           "  int s = a << b, t = c >> d;\n}\n")
    out = rewrite(scan(src))
    assert out.count("\n") == src.count("\n")
    lines = out.splitlines()
    assert '::vf::LaunchConfig( g, b ), "k"' in lines[1] and lines[1].endswith("(p);")
    assert "::vf::LaunchConfig(" in lines[2] and lines[4].strip() == '), "k", [&](auto&&... vf_args_) ' \
        "{ k(vf_args_...); }) (p);"
    assert "LaunchConfig(1, 2)" in lines[5] and lines[6].strip() == "int s = a << b, t = c >> d;"
    assert "<<" not in out.replace("a << b", "")


@pytest.mark.parametrize(
    ("code", "refused"),
    [
        ('static unsigned long long t() { unsigned lo, hi;\n  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));\n'
         "  return lo; }\n__global__ void k() {}", False),
        ('void barrier() { asm volatile("" ::: "memory"); }\nstruct S { void f() { __asm__("pause"); } };', False),
        ('__host__ __device__ void f() { asm volatile("" ::: "memory"); }', False),
        ('int f() __asm__("g");', False),
        ('__device__ int lane() {\n  int x; asm("mov.u32 %0, %%laneid;" : "=r"(x)); return x; }', False),  # subset
        ('__device__ int lane() {\n  int x; asm("mov.u32 %0, %%envreg1;" : "=r"(x)); return x; }', True),
        ('struct S { __device__ void f() {\n  asm volatile("nop"); } };', True),
        ('__global__ void k() { auto l = [&]() {\n  asm("nop"); }; }', True),
        ('void host() {\n  asm volatile("membar.proxy.alias;"); }', True),   # PTX wherever it is
        ('void host() {\n  asm volatile("membar.gl;"); }', False),   # PTX in the subset: translated
    ],
)
def test_only_device_side_asm_is_refused(code, refused):
    from veriforge.cuda.cpu.source import find_unsupported

    found = find_unsupported(scan(code), "k.cu")
    assert bool(found) == refused
    if refused:
        assert found[0].feature.startswith("inline PTX") and found[0].line == 2 and found[0].file == "k.cu"


def test_features_on_lines_the_preprocessor_dropped_are_not_refused():
    from veriforge.cuda.cpu.source import find_unsupported

    code = ("#if 0\n__global__ void k() { asm(\"nop\"); }\n#endif\n#ifdef USE_CUB\n#include <cub/cub.cuh>\n#endif\n"
            "__global__ void j() {}\n")
    assert [r.line for r in find_unsupported(scan(code), "k.cu")] == [2, 5]
    assert find_unsupported(scan(code), "k.cu", active_lines={1, 3, 4, 6, 7}) == []
