"""Intrinsics with an explicit IEEE rounding mode (runtime/vf_rounding.h): the operation happens in the named
mode (``__fdiv_ru`` rounds up, ``__fadd_rd`` down), conversions saturate and map NaN to 0 as ``cvt`` does.
Each expected value is the correctly rounded result, written as a C99 hex float."""

from __future__ import annotations

import pytest

from veriforge.cuda import cpu

PROGRAM = r"""
#include <cstdio>
__global__ void k(float* f, double* d, long long* i) {
    float a = 1.0f, b = 3.0f;
    f[0] = __fdiv_rd(a, b); f[1] = __fdiv_ru(a, b); f[2] = __fdiv_rz(-a, b); f[3] = __fdiv_rn(a, b);
    f[4] = __fadd_rd(1.0f, 1e-10f); f[5] = __fadd_ru(1.0f, 1e-10f); f[6] = __fsqrt_rd(2.0f); f[7] = __fsqrt_ru(2.0f);
    f[8] = __fmul_rz(-1.1f, 1.1f); f[9] = __fmaf_ru(1.0f, 1.0f, 1e-10f);
    f[10] = __double2float_rd(0.1); f[11] = __double2float_ru(0.1);
    f[12] = __int2float_rd(16777217); f[13] = __int2float_ru(16777217);
    d[0] = __ddiv_rd(1.0, 3.0); d[1] = __ddiv_ru(1.0, 3.0); d[2] = __dadd_ru(1.0, 1e-30);
    i[0] = __float2int_rn(2.5f); i[1] = __float2int_ru(2.1f); i[2] = __float2int_rd(-2.1f); i[3] = __float2int_rz(3e9f);
    i[4] = __float2int_rn(__int_as_float(0x7fc00000)); i[5] = __float2uint_rn(-5.0f); i[6] = __double2ll_ru(-0.5);
}
int main() {
    float* f; double* d; long long* i;
    cudaMallocManaged(&f, 16 * 4); cudaMallocManaged(&d, 4 * 8); cudaMallocManaged(&i, 8 * 8);
    k<<<1, 1>>>(f, d, i); cudaDeviceSynchronize();
    for (int j = 0; j < 14; ++j) printf("f%d %a\n", j, f[j]);
    for (int j = 0; j < 3; ++j) printf("d%d %a\n", j, d[j]);
    for (int j = 0; j < 7; ++j) printf("i%d %lld\n", j, i[j]);
}
"""


@pytest.fixture(scope="module")
def values(cpu_session_home):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERIFORGE_HOME", cpu_session_home)
        res = cpu.run_program(PROGRAM, filename="rounding.cu", timeout=120)
    assert res.returncode == 0, res.stderr
    return dict(line.split() for line in res.stdout.splitlines())


def test_float_arithmetic_in_each_mode(values):
    v = {k: float.fromhex(x) for k, x in values.items() if k[0] in "fd"}
    third = float.fromhex("0x1.555554p-2")          # 1/3 rounded down to float
    assert v["f0"] == third and v["f1"] == float.fromhex("0x1.555556p-2") and v["f2"] == -third
    assert v["f3"] == float.fromhex("0x1.555556p-2")   # round to nearest
    assert v["f4"] == 1.0 and v["f5"] == float.fromhex("0x1.000002p+0")   # 1 + 1e-10 down / up
    assert (v["f6"], v["f7"]) == (float.fromhex("0x1.6a09e6p+0"), float.fromhex("0x1.6a09e8p+0"))   # sqrt(2)
    assert v["f8"] == float.fromhex("-0x1.35c29p+0")    # -1.1f * 1.1f toward zero
    assert v["f9"] == float.fromhex("0x1.000002p+0")    # fma rounded up
    assert (v["f10"], v["f11"]) == (float.fromhex("0x1.999998p-4"), float.fromhex("0x1.99999ap-4"))   # 0.1
    assert (v["f12"], v["f13"]) == (2.0**24, float.fromhex("0x1.000002p+24"))   # 2^24 + 1 to float
    assert v["d0"] == float.fromhex("0x1.5555555555555p-2") and v["d1"] == float.fromhex("0x1.5555555555556p-2")
    assert v["d2"] == float.fromhex("0x1.0000000000001p+0")


def test_conversions_round_and_saturate(values):
    i = [int(values[f"i{k}"]) for k in range(7)]
    assert i[:3] == [2, 3, -3]            # ties to even, up, down
    assert i[3] == 2**31 - 1              # 3e9 saturates
    assert i[4] == 0 and i[5] == 0        # NaN -> 0; negative -> unsigned 0
    assert i[6] == 0                      # -0.5 rounded up


# The fast path (error-free transformations, no FP-environment switch) against the slow one (the
# operation between fesetround calls) on edge operands (zeros, subnormals, the limits of the safe
# range, infinities, NaN), random bit patterns and random values of nearby exponents, bit for bit.
FAST_VS_SLOW = r"""
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>
#include "vf_rounding.h"
using namespace vf::rounding;
template <class F> bool same(F a, F b) { return (a != a && b != b) || std::memcmp(&a, &b, sizeof a) == 0; }
template <class F, class U> std::vector<F> operands(unsigned seed) {
    using L = std::numeric_limits<F>;
    std::vector<F> v = {0, (F)-0.0, 1, -1, 3, (F)0.1, (F)-0.1, L::min(), L::denorm_min(), L::max(), -L::max(),
                        L::infinity(), -L::infinity(), L::quiet_NaN(), safe_range<F>::lo, safe_range<F>::hi,
                        safe_range<F>::lo * 2, safe_range<F>::hi / 2, 1 + L::epsilon()};
    std::mt19937_64 g(seed);
    for (int i = 0; i < 2000; ++i) { U u = (U)g(); F f; std::memcpy(&f, &u, sizeof f); v.push_back(f); }
    std::uniform_real_distribution<double> d(-4, 4);
    for (int i = 0; i < 2000; ++i) v.push_back((F)d(g));
    return v;
}
template <int M, class F, class U> void check(const char* name, unsigned seed) {
    auto v = operands<F, U>(seed);
    long bad = 0, fast = 0, n = 0;
    std::mt19937 g(seed);
    for (size_t i = 0; i < v.size(); ++i) for (int k = 0; k < 20; ++k) {
        F a = v[i], b = v[g() % v.size()];
        n += 4;
        fast += in_range(a + b) + in_range(a * b) + (in_range(a / b) && in_range(a) && in_range(b)) + in_range(a - b);
        bad += !same(add<M>(a, b), in_mode<M, F>([](F x, F y) { return x + y; }, a, b));
        bad += !same(add<M>(a, -b), in_mode<M, F>([](F x, F y) { return x - y; }, a, b));
        bad += !same(mul<M>(a, b), in_mode<M, F>([](F x, F y) { return x * y; }, a, b));
        bad += !same(div<M>(a, b), in_mode<M, F>([](F x, F y) { return x / y; }, a, b));
        if (k == 0) {
            n += 1;
            bad += !same(sqrt<M>(a), in_mode<M, F>([](F x) { return std::sqrt(x); }, a));
            if constexpr (sizeof(F) == 8) {
                n += 1;
                bad += !same(narrow<M>(a), in_mode<M, float>([](double x) { return (float)x; }, a));
            }
        }
    }
    printf("%s %ld %ld %ld\n", name, bad, fast, n);
}
int main() {
    check<FE_UPWARD, float, uint32_t>("f_ru", 1); check<FE_DOWNWARD, float, uint32_t>("f_rd", 2);
    check<FE_TOWARDZERO, float, uint32_t>("f_rz", 3); check<FE_UPWARD, double, uint64_t>("d_ru", 4);
    check<FE_DOWNWARD, double, uint64_t>("d_rd", 5); check<FE_TOWARDZERO, double, uint64_t>("d_rz", 6);
}
"""


@pytest.mark.parametrize("flags", [["-O2"], ["-O3", "-march=native"]])
def test_fast_path_equals_fesetround(tmp_path, flags):
    import subprocess

    from veriforge.cuda.cpu.build import RUNTIME_SRC

    src = tmp_path / "fast.cpp"
    src.write_text(FAST_VS_SLOW)
    exe = tmp_path / "fast"
    subprocess.run(["g++", *flags, "-std=c++17", f"-I{RUNTIME_SRC}", str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=60).stdout
    rows = [line.split() for line in out.splitlines()]
    assert len(rows) == 6
    for name, bad, fast, n in rows:
        assert int(bad) == 0, f"{name}: {bad} of {n} results differ from the fesetround ones"
        assert int(fast) > int(n) // 3, f"{name}: the fast path was taken too rarely to be tested"
