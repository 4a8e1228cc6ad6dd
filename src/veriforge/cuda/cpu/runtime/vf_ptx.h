// veriforge CPU runtime: the supported subset of inline PTX.
//
// The front end (veriforge/cuda/cpu/ptx.py) translates each device-side `asm(...)` statement into
// C++ at build time: every operand and every `.reg` of the statement becomes a 64-bit register
// variable holding raw bits (a constraint says how the C++ value becomes bits: "r" 32-bit integer,
// "l" 64-bit, "h" 16-bit, "f" float bits, "d" double bits, "n" a constant), each instruction reads
// and writes registers as its PTX type (get<T> / put<T>), and outputs are converted back at the
// end. This header holds what the generated code calls: special registers, the bit-field and
// byte-permute instructions, conversions, comparisons, memory and atomic operations, and the warp
// collectives (shfl.sync / vote.sync / match / redux) on top of the runtime's own.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace vf {
namespace ptx {

// ---- registers: raw bits -----------------------------------------------------------------------
template <class T> inline T get(uint64_t r) {
    if constexpr (std::is_same_v<T, bool>) {
        return r != 0;
    } else {
        T v;
        std::memcpy(&v, &r, sizeof(T));
        return v;
    }
}
template <class T> inline uint64_t put(T v) {
    if constexpr (std::is_same_v<T, bool>) {
        return v ? 1 : 0;
    } else {
        uint64_t r = 0;
        std::memcpy(&r, &v, sizeof(T));
        return r;
    }
}

// ---- operand constraints: a C++ value as register bits, and back ----------------------------------
template <class U, class X> inline uint64_t in_int(const X& x) {
    if constexpr (std::is_pointer_v<X>) {
        return (uint64_t)(U)(uintptr_t)x;
    } else if constexpr (std::is_floating_point_v<X>) {
        return (uint64_t)(U)(int64_t)x;
    } else if constexpr (std::is_arithmetic_v<X> || std::is_enum_v<X>) {
        return (uint64_t)(U)x;
    } else {
        static_assert(sizeof(X) == sizeof(U) && std::is_trivially_copyable_v<X>,
                      "inline PTX: the operand's size does not match its constraint");
        U u;
        std::memcpy(&u, &x, sizeof u);
        return (uint64_t)u;
    }
}
template <class X> inline uint64_t in_r(const X& x) { return in_int<uint32_t>(x); }
template <class X> inline uint64_t in_l(const X& x) { return in_int<uint64_t>(x); }
template <class X> inline uint64_t in_h(const X& x) { return in_int<uint16_t>(x); }
template <class X> inline uint64_t in_c(const X& x) { return in_int<uint8_t>(x); }
template <class X> inline uint64_t in_f(const X& x) { return put<float>((float)x); }
template <class X> inline uint64_t in_d(const X& x) { return put<double>((double)x); }
template <class X> inline uint64_t in_n(const X& x) { return (uint64_t)(long long)x; }

template <class U, class X> inline void out_int(X& x, uint64_t r) {
    U u = (U)r;
    if constexpr (std::is_pointer_v<X>) {
        x = reinterpret_cast<X>((uintptr_t)u);
    } else if constexpr (std::is_arithmetic_v<X> || std::is_enum_v<X>) {
        x = (X)u;
    } else {
        static_assert(sizeof(X) == sizeof(U) && std::is_trivially_copyable_v<X>,
                      "inline PTX: the operand's size does not match its constraint");
        std::memcpy(&x, &u, sizeof u);
    }
}
template <class X> inline void out_r(X&& x, uint64_t r) { out_int<uint32_t>(x, r); }
template <class X> inline void out_l(X&& x, uint64_t r) { out_int<uint64_t>(x, r); }
template <class X> inline void out_h(X&& x, uint64_t r) { out_int<uint16_t>(x, r); }
template <class X> inline void out_c(X&& x, uint64_t r) { out_int<uint8_t>(x, r); }
template <class X> inline void out_f(X&& x, uint64_t r) { x = (std::remove_reference_t<X>)get<float>(r); }
template <class X> inline void out_d(X&& x, uint64_t r) { x = (std::remove_reference_t<X>)get<double>(r); }

inline void compiler_barrier() { std::atomic_signal_fence(std::memory_order_seq_cst); }

// ---- special registers ------------------------------------------------------------------------
inline uint32_t linear_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline uint32_t laneid() { return linear_tid() % 32; }
inline uint32_t warpid() { return linear_tid() / 32; }
inline uint32_t nwarpid() { return 64; }  // 2048 threads per SM
inline uint32_t smid() {  // the block's SM: blocks spread over the 16 reported SMs
    return (uint32_t)((blockIdx.x + (uint64_t)gridDim.x * (blockIdx.y + (uint64_t)gridDim.y * blockIdx.z)) % 16);
}
inline uint32_t nsmid() { return 16; }
inline uint64_t gridid() { return (uint64_t)(uintptr_t)::vf::current_grid(); }
inline uint32_t lanemask_eq() { return 1u << laneid(); }
inline uint32_t lanemask_lt() { return (uint32_t)((1ull << laneid()) - 1); }
inline uint32_t lanemask_le() { return (uint32_t)((2ull << laneid()) - 1); }
inline uint32_t lanemask_gt() { return ~lanemask_le(); }
inline uint32_t lanemask_ge() { return ~lanemask_lt(); }
inline uint64_t clock64() { return (uint64_t)::vf::device_clock64(); }
inline uint64_t globaltimer() { return (uint64_t)::vf::device_globaltimer(); }

// ---- integer arithmetic -----------------------------------------------------------------------
template <class T> using U = std::make_unsigned_t<T>;
template <class T> inline T add(T a, T b) {
    if constexpr (std::is_integral_v<T>) return (T)((U<T>)a + (U<T>)b);
    else return a + b;
}
template <class T> inline T sub(T a, T b) {
    if constexpr (std::is_integral_v<T>) return (T)((U<T>)a - (U<T>)b);
    else return a - b;
}
template <class T> inline T mul(T a, T b) {
    if constexpr (std::is_integral_v<T>) return (T)((U<T>)a * (U<T>)b);
    else return a * b;
}
template <class T> inline T neg(T a) {
    if constexpr (std::is_integral_v<T>) return (T)(0 - (U<T>)a);
    else return -a;
}
template <class T> inline T abs_(T a) {
    if constexpr (std::is_integral_v<T>) return a < 0 ? neg(a) : a;
    else return std::fabs(a);
}
template <class T> inline T add_sat(T a, T b) {  // .sat of s32: clamps to the type's range
    int64_t r = (int64_t)a + (int64_t)b;
    return (T)std::min<int64_t>(std::max<int64_t>(r, INT32_MIN), INT32_MAX);
}
template <class T> inline T sub_sat(T a, T b) {
    int64_t r = (int64_t)a - (int64_t)b;
    return (T)std::min<int64_t>(std::max<int64_t>(r, INT32_MIN), INT32_MAX);
}
template <class T> inline T mulhi(T a, T b) {
    if constexpr (sizeof(T) == 8) {
        using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
        return (T)(((W)a * (W)b) >> 64);
    } else {
        using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
        return (T)(((W)a * (W)b) >> (8 * sizeof(T)));
    }
}
template <class T> using Wide = std::conditional_t<
    sizeof(T) == 2, std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>,
    std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
template <class T> inline Wide<T> mulwide(T a, T b) { return (Wide<T>)((Wide<T>)a * (Wide<T>)b); }
template <class T> inline T div(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
        if (b == 0) return (T)~(U<T>)0;  // what the hardware returns; C++ would be undefined
        if constexpr (std::is_signed_v<T>)
            if (b == -1) return neg(a);
        return a / b;
    } else {
        return a / b;
    }
}
template <class T> inline T rem(T a, T b) {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<T>)
        if (b == -1) return 0;
    return a % b;
}
template <class T> inline T min_(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return std::fmin(a, b);
    else return a < b ? a : b;
}
template <class T> inline T max_(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return std::fmax(a, b);
    else return a > b ? a : b;
}
template <class T> inline T sat01(T a) { return a > T(1) ? T(1) : a > T(0) ? a : T(0); }  // NaN -> 0
template <class T> inline T shl(T a, uint32_t n) { return n >= 8 * sizeof(T) ? T(0) : (T)((U<T>)a << n); }
template <class T> inline T shr(T a, uint32_t n) {
    if constexpr (std::is_signed_v<T>) return n >= 8 * sizeof(T) ? (a < 0 ? T(-1) : T(0)) : (T)(a >> n);
    else return n >= 8 * sizeof(T) ? T(0) : (T)(a >> n);
}
template <class T> inline T brev(T a) {
    if constexpr (sizeof(T) == 8) return (T)__brevll((unsigned long long)a);
    else return (T)__brev((unsigned)a);
}
template <class T> inline uint32_t popc(T a) { return (uint32_t)__builtin_popcountll((unsigned long long)(U<T>)a); }
template <class T> inline uint32_t clz(T a) {
    U<T> u = (U<T>)a;
    return u == 0 ? 8 * sizeof(T) : (uint32_t)(__builtin_clzll((unsigned long long)u) - (64 - 8 * sizeof(T)));
}
// bfind: the position of the most significant non-sign bit (0xffffffff if none); `shiftamt`: as a
// left shift amount.
template <class T> inline uint32_t bfind(T a, bool shiftamt) {
    U<T> u = (U<T>)a;
    if constexpr (std::is_signed_v<T>)
        if (a < 0) u = ~u;
    if (u == 0) return 0xffffffffu;
    uint32_t pos = 63 - (uint32_t)__builtin_clzll((unsigned long long)u);
    return shiftamt ? (uint32_t)(8 * sizeof(T) - 1 - pos) : pos;
}
// bfe / bfi as the PTX ISA defines them (positions and lengths of 0..255, sign replication).
template <class T> inline T bfe(T a, uint32_t b, uint32_t c) {
    const uint32_t msb = 8 * sizeof(T) - 1, pos = b & 0xff, len = c & 0xff;
    U<T> ua = (U<T>)a, d = 0;
    U<T> sbit = 0;
    if (std::is_signed_v<T> && len != 0) sbit = (ua >> std::min(pos + len - 1, msb)) & 1;
    for (uint32_t i = 0; i <= msb; ++i) {
        U<T> bit = (i < len && pos + i <= msb) ? ((ua >> (pos + i)) & 1) : sbit;
        d |= bit << i;
    }
    return (T)d;
}
template <class T> inline T bfi(T a, T b, uint32_t c, uint32_t d) {
    const uint32_t msb = 8 * sizeof(T) - 1, pos = c & 0xff, len = d & 0xff;
    U<T> f = (U<T>)b, ua = (U<T>)a;
    for (uint32_t i = 0; i < len && pos + i <= msb; ++i) {
        U<T> bit = (ua >> i) & 1;
        f = (f & ~((U<T>)1 << (pos + i))) | (bit << (pos + i));
    }
    return (T)f;
}
// prmt: the default mode (a selector nibble per byte, bit 3 replicates the sign) and the f4e, b4e,
// rc8, ecl, ecr, rc16 modes.
inline uint32_t prmt(uint32_t a, uint32_t b, uint32_t c, int mode) {
    uint64_t bytes = ((uint64_t)b << 32) | a;
    auto byte = [&](unsigned i) { return (uint32_t)((bytes >> (8 * (i & 7))) & 0xff); };
    uint32_t d = 0;
    if (mode == 0) {
        for (unsigned i = 0; i < 4; ++i) {
            unsigned s = (c >> (4 * i)) & 0xf;
            uint32_t v = byte(s & 7);
            if (s & 8) v = (v & 0x80) ? 0xff : 0;
            d |= v << (8 * i);
        }
        return d;
    }
    static const unsigned char tables[6][4][4] = {
        // d.b0, d.b1, d.b2, d.b3 for c[1:0] = 0..3
        {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},  // f4e
        {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},  // b4e
        {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},  // rc8
        {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},  // ecl
        {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},  // ecr
        {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},  // rc16
    };
    const unsigned char* t = tables[mode - 1][c & 3];
    for (unsigned i = 0; i < 4; ++i) d |= byte(t[i]) << (8 * i);
    return d;
}
template <class T> inline T lop3(T a, T b, T c, uint32_t lut) {
    T r = 0;
    if (lut & 0x01) r |= ~a & ~b & ~c;
    if (lut & 0x02) r |= ~a & ~b & c;
    if (lut & 0x04) r |= ~a & b & ~c;
    if (lut & 0x08) r |= ~a & b & c;
    if (lut & 0x10) r |= a & ~b & ~c;
    if (lut & 0x20) r |= a & ~b & c;
    if (lut & 0x40) r |= a & b & ~c;
    if (lut & 0x80) r |= a & b & c;
    return r;
}
// add.cc / addc / sub.cc / subc: the carry (borrow for subtraction) flag of the statement.
template <class T> inline T addc(T a, T b, uint32_t& cc, bool carry_in, bool carry_out) {
    using V = U<T>;
    V ua = (V)a, ub = (V)b, cin = carry_in ? (V)cc : 0;
    V r = ua + ub;
    bool c1 = r < ua;
    V r2 = r + cin;
    bool c2 = r2 < r;
    if (carry_out) cc = (c1 || c2) ? 1 : 0;
    return (T)r2;
}
template <class T> inline T subc(T a, T b, uint32_t& cc, bool borrow_in, bool borrow_out) {
    using V = U<T>;
    V ua = (V)a, ub = (V)b, bin = borrow_in ? (V)cc : 0;
    V r = ua - ub;
    bool b1 = ua < ub;
    V r2 = r - bin;
    bool b2 = r < bin;
    if (borrow_out) cc = (b1 || b2) ? 1 : 0;
    return (T)r2;
}

// ---- conversions ----------------------------------------------------------------------------------
inline float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else {  // subnormal
            int e = -1;
            do {
                ++e;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}
inline uint16_t float_to_half(float f) {  // round to nearest even
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);  // overflow to infinity
    if (absx < 0x38800000u) {  // subnormal or zero
        if (absx < 0x33000000u) return (uint16_t)sign;
        uint32_t man = (absx & 0x7fffff) | 0x800000;
        int shift = 113 - (int)(absx >> 23) + 13;
        uint32_t half_man = man >> shift;
        uint32_t rest = man & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half_man & 1))) ++half_man;
        return (uint16_t)(sign | half_man);
    }
    uint32_t h = ((absx >> 13) - (112u << 10));
    uint32_t rest = absx & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
    return (uint16_t)(sign | h);
}
inline float bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}
inline uint16_t float_to_bf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}
// Rounding to an integer value: 0 nearest even (rni), 1 toward zero (rzi), 2 down (rmi), 3 up (rpi).
inline double round_int(double v, int mode) {
    switch (mode) {
        case 0: return std::nearbyint(v);
        case 1: return std::trunc(v);
        case 2: return std::floor(v);
        default: return std::ceil(v);
    }
}
// Float to integer: rounded, then clamped to the destination's range (NaN -> 0), as PTX's cvt does.
template <class D> inline D f2i(double v, int mode) {
    if (std::isnan(v)) return 0;
    double r = round_int(v, mode);
    if (r <= (double)std::numeric_limits<D>::min()) return std::numeric_limits<D>::min();
    if (r >= (double)std::numeric_limits<D>::max()) return std::numeric_limits<D>::max();
    return (D)r;
}
// Integer to integer with .sat: clamped to the destination's range.
template <class D, class S> inline D i2i_sat(S v) {
    if constexpr (std::is_signed_v<S>) {
        if (v < 0 && !std::is_signed_v<D>) return 0;
        if constexpr (std::is_signed_v<D>)
            if ((long double)v < (long double)std::numeric_limits<D>::min()) return std::numeric_limits<D>::min();
    }
    if ((long double)v > (long double)std::numeric_limits<D>::max()) return std::numeric_limits<D>::max();
    return (D)v;
}

// ---- comparisons (setp) ------------------------------------------------------------------------
// ops: 0 eq 1 ne 2 lt 3 le 4 gt 5 ge; +6: the unordered forms equ neu ltu leu gtu geu; 12 num, 13 nan.
template <class T> inline bool cmp(T a, T b, int op) {
    if constexpr (std::is_floating_point_v<T>) {
        bool unordered = std::isnan(a) || std::isnan(b);
        if (op == 12) return !unordered;
        if (op == 13) return unordered;
        if (op >= 6) {
            if (unordered) return true;
            op -= 6;
        } else if (unordered) {
            return false;  // ordered comparisons (ne too) are false on NaN
        }
    }
    switch (op) {
        case 0: return a == b;
        case 1: return a != b;
        case 2: return a < b;
        case 3: return a <= b;
        case 4: return a > b;
        default: return a >= b;
    }
}
template <class T> inline bool testp(T a, int what) {
    switch (what) {
        case 0: return std::isfinite(a);
        case 1: return std::isinf(a);
        case 2: return !std::isnan(a);
        case 3: return std::isnan(a);
        case 4: return std::isnormal(a);
        default: return std::fpclassify(a) == FP_SUBNORMAL;
    }
}

// ---- memory -------------------------------------------------------------------------------------
template <class T> inline T* at(uint64_t addr) { return reinterpret_cast<T*>((uintptr_t)addr); }
template <class T> inline T load(uint64_t addr) {
    T v;
    std::memcpy(&v, at<T>(addr), sizeof(T));
    return v;
}
template <class T> inline T load_volatile(uint64_t addr) { return *reinterpret_cast<volatile T*>((uintptr_t)addr); }
template <class T> inline T load_acquire(uint64_t addr) {
    return std::atomic_ref<T>(*at<T>(addr)).load(std::memory_order_acquire);
}
template <class T> inline void store(uint64_t addr, T v) { std::memcpy(at<T>(addr), &v, sizeof(T)); }
template <class T> inline void store_volatile(uint64_t addr, T v) { *reinterpret_cast<volatile T*>((uintptr_t)addr) = v; }
template <class T> inline void store_release(uint64_t addr, T v) {
    std::atomic_ref<T>(*at<T>(addr)).store(v, std::memory_order_release);
}
inline void fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// atom / red: ops 0 add 1 min 2 max 3 inc 4 dec 5 and 6 or 7 xor 8 exch; returns the old value.
template <class T> inline T atom(uint64_t addr, int op, T b) {
    std::atomic_ref<T> ref(*at<T>(addr));
    if (op == 0) {
        if constexpr (std::is_integral_v<T>) return (T)std::atomic_ref<U<T>>(*at<U<T>>(addr)).fetch_add((U<T>)b);
        else return ref.fetch_add(b);
    }
    if constexpr (std::is_integral_v<T>) {
        if (op == 5) return ref.fetch_and(b);
        if (op == 6) return ref.fetch_or(b);
        if (op == 7) return ref.fetch_xor(b);
    }
    if (op == 8) return ref.exchange(b);
    T old = ref.load();
    for (;;) {
        T want;
        switch (op) {
            case 1: want = old < b ? old : b; break;
            case 2: want = old > b ? old : b; break;
            case 3: want = (old >= b) ? T(0) : (T)(old + 1); break;
            default: want = (old == T(0) || old > b) ? b : (T)(old - 1); break;
        }
        if (ref.compare_exchange_weak(old, want)) return old;
    }
}
template <class T> inline T atom_cas(uint64_t addr, T compare, T value) {
    std::atomic_ref<T>(*at<T>(addr)).compare_exchange_strong(compare, value);
    return compare;  // the old value either way
}

// ---- warp collectives ---------------------------------------------------------------------------
// shfl.sync as the PTX ISA defines it: c packs the clamp value (c[4:0]) and the segment mask
// (c[12:8]); the source lane is computed per lane, then fetched with an indexed shuffle.
inline uint32_t shfl(int mode, uint32_t a, uint32_t b, uint32_t c, uint32_t mask, bool* pred,
                     int line = __builtin_LINE()) {
    uint32_t lane = laneid(), bval = b & 31, cval = c & 31, segmask = (c >> 8) & 31;
    uint32_t max_lane = (lane & segmask) | (cval & ~segmask), min_lane = lane & segmask;
    int32_t j;
    bool p;
    switch (mode) {
        case 0: j = (int32_t)lane - (int32_t)bval; p = j >= (int32_t)max_lane; break;  // up
        case 1: j = (int32_t)(lane + bval); p = j <= (int32_t)max_lane; break;          // down
        case 2: j = (int32_t)(lane ^ bval); p = j <= (int32_t)max_lane; break;          // bfly
        default: j = (int32_t)(min_lane | (bval & ~segmask)); p = j <= (int32_t)max_lane; break;  // idx
    }
    if (!p) j = (int32_t)lane;
    if (pred) *pred = p;
    return __shfl_sync(mask, a, j, 32, line);
}

// ---- SIMD video instructions (vadd2/4, vsub, vavrg, vabsdiff, vmin, vmax) ---------------------
// Lanes of 16 (N == 2) or 8 (N == 4) bits, sign- or zero-extended per the operand types; each lane's
// result is optionally saturated to the destination's lane range; `.add` sums the lanes into c,
// otherwise the lanes are packed (truncated) into the result. op: 0 add, 1 sub, 2 avrg, 3 absdiff,
// 4 min, 5 max. (PTX ISA, "SIMD video instructions"; lane masks and selectors are not supported.)
template <int N, bool AS, bool BS, bool DS>
inline uint32_t simd_video(uint32_t a, uint32_t b, uint32_t c, int op, bool sat, bool add) {
    constexpr int W = 32 / N;
    constexpr uint32_t M = (1u << W) - 1;
    auto lane = [](uint32_t v, int i, bool s) -> int64_t {
        uint32_t u = (v >> (i * W)) & M;
        return s && (u >> (W - 1)) ? (int64_t)u - (int64_t(1) << W) : (int64_t)u;
    };
    int64_t lo = DS ? -(int64_t(1) << (W - 1)) : 0, hi = DS ? (int64_t(1) << (W - 1)) - 1 : (int64_t)M;
    int64_t sum = 0;
    uint32_t packed = 0;
    for (int i = 0; i < N; ++i) {
        int64_t x = lane(a, i, AS), y = lane(b, i, BS), t;
        switch (op) {
            case 0: t = x + y; break;
            case 1: t = x - y; break;
            case 2: t = (x + y + 1) >> 1; break;
            case 3: t = x > y ? x - y : y - x; break;
            case 4: t = x < y ? x : y; break;
            default: t = x > y ? x : y; break;
        }
        if (sat) t = t < lo ? lo : t > hi ? hi : t;
        sum += t;
        packed |= ((uint32_t)t & M) << (i * W);
    }
    return add ? (uint32_t)((int64_t)(DS ? (int64_t)(int32_t)c : (int64_t)c) + sum) : packed;
}

}  // namespace ptx
}  // namespace vf
