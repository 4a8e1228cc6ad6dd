// CUDA's arithmetic and conversion intrinsics with an explicit rounding mode (`__fadd_rd`,
// `__fmul_ru`, `__fsqrt_rz`, `__double2float_rd`, `__float2int_ru`, ...), as the CUDA Math API
// defines them: the operation is performed in the named IEEE-754 mode, not in round-to-nearest.
// Interval arithmetic (NVIDIA's `interval` sample) depends on it: a bound rounded the wrong way is
// no longer a bound. Float->integer conversions saturate and map NaN to 0, as the `cvt` instruction
// does (a plain C++ cast is undefined there).
#pragma once
#include <cfenv>
#include <cmath>
#include <limits>
#include <type_traits>

namespace vf::rounding {
// The slow, always-right path: the operation runs between two fesetround calls. g++ does not model
// the FP environment (no -frounding-math), so empty asm statements pin the operands after the first
// switch and the result before the second: each one "changes" its value and clobbers memory, which
// orders it against the opaque fesetround calls; the operation depends on the first and feeds the second.
template <class V> inline void pin(V& v) { asm volatile("" : "+m"(v) : : "memory"); }
template <int Mode, class R, class F, class... T> inline R in_mode(F f, T... a) {
    if constexpr (Mode == FE_TONEAREST) {
        return f(a...);
    } else {
        const int old = std::fegetround();
        std::fesetround(Mode);
        (pin(a), ...);
        R r = f(a...);
        pin(r);
        std::fesetround(old);
        return r;
    }
}

// The fast path. Switching the FP environment costs ~80% of an interval-arithmetic kernel (three
// libm calls and an MXCSR write per operation: NVIDIA's `interval` sample ran 10x slower than its
// round-to-nearest work), so the common case computes the round-to-nearest result r and the exact
// error e of it (true value = r + e) with error-free transformations - TwoSum for +/-, fma(a, b, -r)
// for *, the remainder fma(-q, b, a) for / and fma(-s, s, a) for sqrt - and steps r one ulp in the
// mode's direction when e points that way. The transformations are exact only away from overflow,
// underflow and exact zeros (whose sign depends on the mode), so operands or results outside a safe
// exponent range take the slow path: every result equals the fesetround one (tests/cuda/cpu/
// test_rounding.py compares the two on edge cases and random operands).
template <class F> struct safe_range;
template <> struct safe_range<float> {
    static constexpr float lo = 0x1p-90f, hi = 0x1p+100f;
};
template <> struct safe_range<double> {
    static constexpr double lo = 0x1p-900, hi = 0x1p+900;
};
template <class F> inline bool in_range(F x) {
    const F m = x < 0 ? -x : x;  // false for NaN: NaN takes the slow path
    return m >= safe_range<F>::lo && m <= safe_range<F>::hi;
}
// The next representable value above r (finite, nonzero; the largest finite steps to infinity).
template <class F> inline F next_up(F r) {
    using U = std::conditional_t<sizeof(F) == 4, unsigned, unsigned long long>;
    U u;
    __builtin_memcpy(&u, &r, sizeof u);
    u = r > 0 ? u + 1 : u - 1;
    __builtin_memcpy(&r, &u, sizeof u);
    return r;
}
template <class F> inline F next_down(F r) { return -next_up(-r); }
// r rounded to nearest, e > 0 / e < 0 when the exact value lies above / below r.
template <int Mode, class F> inline F directed(F r, F e) {
    if constexpr (Mode == FE_UPWARD) return e > 0 ? next_up(r) : r;
    else if constexpr (Mode == FE_DOWNWARD) return e < 0 ? next_down(r) : r;
    else if constexpr (Mode == FE_TOWARDZERO) return (r > 0 && e < 0) ? next_down(r) : (r < 0 && e > 0) ? next_up(r) : r;
    else return r;
}
template <int Mode, class F> inline F add(F a, F b) {
    if constexpr (Mode == FE_TONEAREST) return a + b;
    const F s = a + b;
    if (!in_range(s)) return in_mode<Mode, F>([](F x, F y) { return x + y; }, a, b);
    const F bb = s - a;
    const F e = (a - (s - bb)) + (b - bb);  // TwoSum: exact while nothing overflows
    return directed<Mode>(s, e);
}
template <int Mode, class F> inline F mul(F a, F b) {
    if constexpr (Mode == FE_TONEAREST) return a * b;
    const F p = a * b;
    if (!in_range(p)) return in_mode<Mode, F>([](F x, F y) { return x * y; }, a, b);
    return directed<Mode>(p, std::fma(a, b, -p));
}
template <int Mode, class F> inline F div(F a, F b) {
    if constexpr (Mode == FE_TONEAREST) return a / b;
    const F q = a / b;
    if (!in_range(q) || !in_range(a) || !in_range(b)) return in_mode<Mode, F>([](F x, F y) { return x / y; }, a, b);
    const F r = std::fma(-q, b, a);  // a - q*b exactly; a/b - q has the sign of r/b
    return directed<Mode>(q, b > 0 ? r : -r);
}
template <int Mode, class F> inline F sqrt(F a) {
    if constexpr (Mode == FE_TONEAREST) return std::sqrt(a);
    if (!in_range(a) || a < 0) return in_mode<Mode, F>([](F x) { return std::sqrt(x); }, a);
    const F s = std::sqrt(a);
    return directed<Mode>(s, std::fma(-s, s, a));
}
template <int Mode> inline float narrow(double a) {
    const float f = (float)a;
    if (!(f != 0 && f - f == 0)) return in_mode<Mode, float>([](double x) { return (float)x; }, a);  // 0, inf, NaN
    return directed<Mode>(f, (float)(a > (double)f ? 1 : a < (double)f ? -1 : 0));
}
// Saturating float -> integer conversion after rounding with `round` (rint in the given mode).
template <class I, class F> inline I saturate(F x) {
    if (x != x) return 0;
    if (x <= (F)std::numeric_limits<I>::min()) return std::numeric_limits<I>::min();
    if (x >= (F)std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
    return (I)x;
}
template <int Mode, class F> inline F round_int(F x) {
    if constexpr (Mode == FE_TONEAREST) return std::nearbyint(x);  // ties to even
    else if constexpr (Mode == FE_TOWARDZERO) return std::trunc(x);
    else if constexpr (Mode == FE_UPWARD) return std::ceil(x);
    else return std::floor(x);
}
}  // namespace vf::rounding

#define VF_ROUNDED_OPS(sfx, MODE)                                                                          \
    inline float __fadd_##sfx(float a, float b) {                                                       \
        return ::vf::rounding::add<MODE>(a, b);      \
    }                                                                                                     \
    inline float __fsub_##sfx(float a, float b) {                                                       \
        return ::vf::rounding::add<MODE>(a, -b);      \
    }                                                                                                     \
    inline float __fmul_##sfx(float a, float b) {                                                       \
        return ::vf::rounding::mul<MODE>(a, b);      \
    }                                                                                                     \
    inline float __fdiv_##sfx(float a, float b) {                                                       \
        return ::vf::rounding::div<MODE>(a, b);      \
    }                                                                                                     \
    inline float __frcp_##sfx(float a) {                                                                \
        return ::vf::rounding::div<MODE>(1.0f, a);               \
    }                                                                                                     \
    inline float __fsqrt_##sfx(float a) {                                                               \
        return ::vf::rounding::sqrt<MODE>(a);           \
    }                                                                                                     \
    inline float __fmaf_##sfx(float a, float b, float c) {                                              \
        return ::vf::rounding::in_mode<MODE, float>([](float x, float y, float z) { return std::fma(x, y, z); }, \
                                                     a, b, c);                                           \
    }                                                                                                     \
    inline float __fmaf_ieee_##sfx(float a, float b, float c) { return __fmaf_##sfx(a, b, c); }         \
    inline double __dadd_##sfx(double a, double b) {                                                    \
        return ::vf::rounding::add<MODE>(a, b);   \
    }                                                                                                     \
    inline double __dsub_##sfx(double a, double b) {                                                    \
        return ::vf::rounding::add<MODE>(a, -b);   \
    }                                                                                                     \
    inline double __dmul_##sfx(double a, double b) {                                                    \
        return ::vf::rounding::mul<MODE>(a, b);   \
    }                                                                                                     \
    inline double __ddiv_##sfx(double a, double b) {                                                    \
        return ::vf::rounding::div<MODE>(a, b);   \
    }                                                                                                     \
    inline double __drcp_##sfx(double a) {                                                              \
        return ::vf::rounding::div<MODE>(1.0, a);              \
    }                                                                                                     \
    inline double __dsqrt_##sfx(double a) {                                                             \
        return ::vf::rounding::sqrt<MODE>(a);         \
    }                                                                                                     \
    inline double __fma_##sfx(double a, double b, double c) {                                           \
        return ::vf::rounding::in_mode<MODE, double>(                                                   \
            [](double x, double y, double z) { return std::fma(x, y, z); }, a, b, c);                   \
    }                                                                                                     \
    inline float __double2float_##sfx(double a) {                                                       \
        return ::vf::rounding::narrow<MODE>(a);              \
    }                                                                                                     \
    inline float __int2float_##sfx(int a) {                                                             \
        return ::vf::rounding::in_mode<MODE, float>([](int x) { return (float)x; }, a);                 \
    }                                                                                                     \
    inline float __uint2float_##sfx(unsigned a) {                                                       \
        return ::vf::rounding::in_mode<MODE, float>([](unsigned x) { return (float)x; }, a);            \
    }                                                                                                     \
    inline float __ll2float_##sfx(long long a) {                                                        \
        return ::vf::rounding::in_mode<MODE, float>([](long long x) { return (float)x; }, a);           \
    }                                                                                                     \
    inline float __ull2float_##sfx(unsigned long long a) {                                              \
        return ::vf::rounding::in_mode<MODE, float>([](unsigned long long x) { return (float)x; }, a);  \
    }                                                                                                     \
    inline double __ll2double_##sfx(long long a) {                                                      \
        return ::vf::rounding::in_mode<MODE, double>([](long long x) { return (double)x; }, a);         \
    }                                                                                                     \
    inline double __ull2double_##sfx(unsigned long long a) {                                            \
        return ::vf::rounding::in_mode<MODE, double>([](unsigned long long x) { return (double)x; }, a); \
    }                                                                                                     \
    inline int __float2int_##sfx(float x) {                                                             \
        return ::vf::rounding::saturate<int>(::vf::rounding::round_int<MODE>((double)x));                \
    }                                                                                                     \
    inline unsigned __float2uint_##sfx(float x) {                                                       \
        return ::vf::rounding::saturate<unsigned>(::vf::rounding::round_int<MODE>((double)x));           \
    }                                                                                                     \
    inline long long __float2ll_##sfx(float x) {                                                        \
        return ::vf::rounding::saturate<long long>(::vf::rounding::round_int<MODE>(x));                  \
    }                                                                                                     \
    inline unsigned long long __float2ull_##sfx(float x) {                                              \
        return ::vf::rounding::saturate<unsigned long long>(::vf::rounding::round_int<MODE>(x));         \
    }                                                                                                     \
    inline int __double2int_##sfx(double x) {                                                           \
        return ::vf::rounding::saturate<int>(::vf::rounding::round_int<MODE>(x));                        \
    }                                                                                                     \
    inline unsigned __double2uint_##sfx(double x) {                                                     \
        return ::vf::rounding::saturate<unsigned>(::vf::rounding::round_int<MODE>(x));                   \
    }                                                                                                     \
    inline long long __double2ll_##sfx(double x) {                                                      \
        return ::vf::rounding::saturate<long long>(::vf::rounding::round_int<MODE>(x));                  \
    }                                                                                                     \
    inline unsigned long long __double2ull_##sfx(double x) {                                            \
        return ::vf::rounding::saturate<unsigned long long>(::vf::rounding::round_int<MODE>(x));         \
    }

VF_ROUNDED_OPS(rn, FE_TONEAREST)
VF_ROUNDED_OPS(rz, FE_TOWARDZERO)
VF_ROUNDED_OPS(ru, FE_UPWARD)
VF_ROUNDED_OPS(rd, FE_DOWNWARD)
#undef VF_ROUNDED_OPS

inline float __frsqrt_rn(float a) { return 1.0f / std::sqrt(a); }
inline double __int2double_rn(int x) { return (double)x; }
inline double __uint2double_rn(unsigned x) { return (double)x; }
