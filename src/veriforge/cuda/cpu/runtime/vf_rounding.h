// CUDA's arithmetic and conversion intrinsics with an explicit rounding mode (`__fadd_rd`,
// `__fmul_ru`, `__fsqrt_rz`, `__double2float_rd`, `__float2int_ru`, ...), as the CUDA Math API
// defines them: the operation is performed in the named IEEE-754 mode, not in round-to-nearest.
// Interval arithmetic (NVIDIA's `interval` sample) depends on it: a bound rounded the wrong way is
// no longer a bound. Float->integer conversions saturate and map NaN to 0, as the `cvt` instruction
// does (a plain C++ cast is undefined there).
#pragma once
#include <cfenv>

namespace vf::rounding {
// The operation runs between two fesetround calls. g++ does not model the FP environment (no
// -frounding-math), so empty asm statements pin the operands after the first switch and the result
// before the second: each one "changes" its value and clobbers memory, which orders it against the
// opaque fesetround calls; the operation depends on the first and feeds the second.
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
        return ::vf::rounding::in_mode<MODE, float>([](float x, float y) { return x + y; }, a, b);      \
    }                                                                                                     \
    inline float __fsub_##sfx(float a, float b) {                                                       \
        return ::vf::rounding::in_mode<MODE, float>([](float x, float y) { return x - y; }, a, b);      \
    }                                                                                                     \
    inline float __fmul_##sfx(float a, float b) {                                                       \
        return ::vf::rounding::in_mode<MODE, float>([](float x, float y) { return x * y; }, a, b);      \
    }                                                                                                     \
    inline float __fdiv_##sfx(float a, float b) {                                                       \
        return ::vf::rounding::in_mode<MODE, float>([](float x, float y) { return x / y; }, a, b);      \
    }                                                                                                     \
    inline float __frcp_##sfx(float a) {                                                                \
        return ::vf::rounding::in_mode<MODE, float>([](float x) { return 1.0f / x; }, a);               \
    }                                                                                                     \
    inline float __fsqrt_##sfx(float a) {                                                               \
        return ::vf::rounding::in_mode<MODE, float>([](float x) { return std::sqrt(x); }, a);           \
    }                                                                                                     \
    inline float __fmaf_##sfx(float a, float b, float c) {                                              \
        return ::vf::rounding::in_mode<MODE, float>([](float x, float y, float z) { return std::fma(x, y, z); }, \
                                                     a, b, c);                                           \
    }                                                                                                     \
    inline float __fmaf_ieee_##sfx(float a, float b, float c) { return __fmaf_##sfx(a, b, c); }         \
    inline double __dadd_##sfx(double a, double b) {                                                    \
        return ::vf::rounding::in_mode<MODE, double>([](double x, double y) { return x + y; }, a, b);   \
    }                                                                                                     \
    inline double __dsub_##sfx(double a, double b) {                                                    \
        return ::vf::rounding::in_mode<MODE, double>([](double x, double y) { return x - y; }, a, b);   \
    }                                                                                                     \
    inline double __dmul_##sfx(double a, double b) {                                                    \
        return ::vf::rounding::in_mode<MODE, double>([](double x, double y) { return x * y; }, a, b);   \
    }                                                                                                     \
    inline double __ddiv_##sfx(double a, double b) {                                                    \
        return ::vf::rounding::in_mode<MODE, double>([](double x, double y) { return x / y; }, a, b);   \
    }                                                                                                     \
    inline double __drcp_##sfx(double a) {                                                              \
        return ::vf::rounding::in_mode<MODE, double>([](double x) { return 1.0 / x; }, a);              \
    }                                                                                                     \
    inline double __dsqrt_##sfx(double a) {                                                             \
        return ::vf::rounding::in_mode<MODE, double>([](double x) { return std::sqrt(x); }, a);         \
    }                                                                                                     \
    inline double __fma_##sfx(double a, double b, double c) {                                           \
        return ::vf::rounding::in_mode<MODE, double>(                                                   \
            [](double x, double y, double z) { return std::fma(x, y, z); }, a, b, c);                   \
    }                                                                                                     \
    inline float __double2float_##sfx(double a) {                                                       \
        return ::vf::rounding::in_mode<MODE, float>([](double x) { return (float)x; }, a);              \
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
