"""Launch arguments convert to the kernel's parameter types as a direct call would, when the kernel is
known (not a template, or a template instantiation naming all its template arguments): a literal 0 or
NULL for a pointer is a null pointer, a braced list builds a struct (Rodinia huffman: ``k<<<g, b>>>(out,
in, 0, n, 0, 0)``)."""

from __future__ import annotations

from veriforge.cuda import cpu
from veriforge.cuda.cpu.regions import strip_region_code
from veriforge.cuda.cpu.source import launch_targets, rewrite, scan

SRC = r"""
#include <cstdio>
struct Pair { int a, b; };
__global__ void plain(int* out, const int* maybe, Pair p, int n) {
    out[0] = (maybe == nullptr) + 10 * p.a + 100 * p.b + 1000 * n;
}
template <bool Store, bool Np2>
__global__ void prescan(int* out, const unsigned* in, unsigned* sums, int n, int block, int base) {
    out[1] = (in == nullptr) + 10 * (sums == nullptr) + 100 * n + 1000 * Store + 10000 * Np2;
}
template <class T> __global__ void deduced(int* out, T v) { out[2] = (int)sizeof(T) * 10 + (int)v; }
__global__ void defaulted(int* out, int* p, int n = 7) { out[3] = (p == 0) + 10 * n; }
__global__ void twice(int* out, int v) { out[4] = v; }
__global__ void twice(int* out, float v) { out[4] = (int)(v * 2); }
int main() {
    int* o;
    cudaMallocManaged(&o, 8 * sizeof(int));
    plain<<<1, 1>>>(o, 0, {3, 4}, 5);
    prescan<true, false><<<1, 1>>>(o, NULL, 0, 6, 0, 0);
    deduced<<<1, 1>>>(o, 0);          // a deduced parameter: 0 stays an int, as with nvcc
    defaulted<<<1, 1>>>(o, 0, 2);
    twice<<<1, 1>>>(o, 1.5f);         // overloaded: the arguments choose
    cudaDeviceSynchronize();
    printf("%d %d %d %d %d\n", o[0], o[1], o[2], o[3], o[4]);
    defaulted<<<1, 1>>>(o, nullptr);  // a default argument still applies
    cudaDeviceSynchronize();
    printf("%d\n", o[3]);
    return 0;
}
"""


def test_launch_targets_and_typed_rewrite():
    s = scan(SRC)
    targets = launch_targets([s])
    assert targets["plain"] == -1 and targets["prescan"] == 2 and "twice" not in targets
    assert targets["deduced"] == 1
    text = rewrite(s)
    assert "::vf::kernel_ptr(&plain)" in text and "::vf::kernel_ptr(&prescan<true, false>)" in text
    assert "kernel_ptr(&deduced" not in text and "kernel_ptr(&twice" not in text   # deduction kept
    assert strip_region_code(text).count("\n") == SRC.count("\n")   # lines kept (region code aside)


def test_literal_zero_and_braced_arguments_convert_to_the_parameter_types():
    res = cpu.run_program(SRC)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["5431 1611 40 21 3", "71"]


def test_a_kernel_defined_in_another_file_of_a_project_is_known(tmp_path):
    (tmp_path / "scan_kernel.cuh").write_text(
        "template <bool S> __global__ void k(int* o, unsigned* sums, int n) { *o = (sums == 0) + 10 * n + 100 * S; }\n")
    (tmp_path / "main.cu").write_text('#include <cstdio>\n#include "scan_kernel.cuh"\n'
                                      "int main() { int* o; cudaMallocManaged(&o, 4); k<true><<<1, 1>>>(o, 0, 3);\n"
                                      '  cudaDeviceSynchronize(); printf("%d\\n", *o); return 0; }\n')
    res = cpu.run_program(cpu.Project(files=["main.cu"], root=tmp_path))
    assert res.returncode == 0, res.stderr
    assert res.stdout == "131\n"
