// veriforge CPU runtime: __half / __nv_bfloat16 intrinsics that CUDA's headers only define for
// device code (fma, transcendental functions, rounding). Each is computed in float and rounded
// once to the 16-bit type, like the hardware's float-accumulating units. They are templates
// constrained on the half types, so wherever a CUDA version does provide a host version, that
// (non-template) function wins overload resolution instead of clashing.
#pragma once
#include <cmath>
#include <type_traits>

namespace vf {
template <class H> struct half_traits {
    static constexpr bool scalar = false, pair = false;
};
template <class H> concept half_scalar = half_traits<H>::scalar;
template <class H> concept half_pair = half_traits<H>::pair;

template <class H, class F> inline H hmap(H a, F f) {
    return half_traits<H>::from(f(half_traits<H>::to(a)));
}
template <class H2, class F> inline H2 hmap2(H2 a, F f) {
    float2 v = half_traits<H2>::to(a);
    return half_traits<H2>::from(make_float2(f(v.x), f(v.y)));
}
inline float relu(float x) { return x > 0.0f ? x : 0.0f; }
inline float sat(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
}  // namespace vf

template <vf::half_scalar H> inline H __hfma(H a, H b, H c) {
    using T = vf::half_traits<H>;
    return T::from(fmaf(T::to(a), T::to(b), T::to(c)));
}
template <vf::half_scalar H> inline H __hfma_relu(H a, H b, H c) {
    using T = vf::half_traits<H>;
    return T::from(vf::relu(fmaf(T::to(a), T::to(b), T::to(c))));
}
template <vf::half_scalar H> inline H __hfma_sat(H a, H b, H c) {
    using T = vf::half_traits<H>;
    return T::from(vf::sat(fmaf(T::to(a), T::to(b), T::to(c))));
}
template <vf::half_pair H2> inline H2 __hfma2(H2 a, H2 b, H2 c) {
    using T = vf::half_traits<H2>;
    float2 x = T::to(a), y = T::to(b), z = T::to(c);
    return T::from(make_float2(fmaf(x.x, y.x, z.x), fmaf(x.y, y.y, z.y)));
}
template <vf::half_pair H2> inline H2 __hfma2_relu(H2 a, H2 b, H2 c) {
    using T = vf::half_traits<H2>;
    float2 x = T::to(a), y = T::to(b), z = T::to(c);
    return T::from(make_float2(vf::relu(fmaf(x.x, y.x, z.x)), vf::relu(fmaf(x.y, y.y, z.y))));
}
template <vf::half_pair H2> inline H2 __hfma2_sat(H2 a, H2 b, H2 c) {
    using T = vf::half_traits<H2>;
    float2 x = T::to(a), y = T::to(b), z = T::to(c);
    return T::from(make_float2(vf::sat(fmaf(x.x, y.x, z.x)), vf::sat(fmaf(x.y, y.y, z.y))));
}
// complex multiply-add: (a.x + i a.y) * (b.x + i b.y) + c
template <vf::half_pair H2> inline H2 __hcmadd(H2 a, H2 b, H2 c) {
    using T = vf::half_traits<H2>;
    float2 x = T::to(a), y = T::to(b), z = T::to(c);
    return T::from(make_float2(fmaf(x.x, y.x, fmaf(-x.y, y.y, z.x)), fmaf(x.x, y.y, fmaf(x.y, y.x, z.y))));
}

#define VF_HALF_UNARY(name, name2, expr)                                                       \
    template <vf::half_scalar H> inline H name(H a) {                                           \
        return vf::hmap(a, [](float x) { return expr; });                                        \
    }                                                                                           \
    template <vf::half_pair H2> inline H2 name2(H2 a) {                                         \
        return vf::hmap2(a, [](float x) { return expr; });                                       \
    }
VF_HALF_UNARY(hexp, h2exp, expf(x))
VF_HALF_UNARY(hexp2, h2exp2, exp2f(x))
VF_HALF_UNARY(hexp10, h2exp10, exp10f(x))
VF_HALF_UNARY(hlog, h2log, logf(x))
VF_HALF_UNARY(hlog2, h2log2, log2f(x))
VF_HALF_UNARY(hlog10, h2log10, log10f(x))
VF_HALF_UNARY(hsqrt, h2sqrt, sqrtf(x))
VF_HALF_UNARY(hrsqrt, h2rsqrt, 1.0f / sqrtf(x))
VF_HALF_UNARY(hrcp, h2rcp, 1.0f / x)
VF_HALF_UNARY(hsin, h2sin, sinf(x))
VF_HALF_UNARY(hcos, h2cos, cosf(x))
VF_HALF_UNARY(htanh, h2tanh, tanhf(x))
VF_HALF_UNARY(hfloor, h2floor, floorf(x))
VF_HALF_UNARY(hceil, h2ceil, ceilf(x))
VF_HALF_UNARY(htrunc, h2trunc, truncf(x))
VF_HALF_UNARY(hrint, h2rint, nearbyintf(x))
#undef VF_HALF_UNARY
