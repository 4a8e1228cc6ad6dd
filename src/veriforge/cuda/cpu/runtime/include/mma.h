// veriforge CPU runtime: <mma.h> - nvcuda::wmma, the warp-level matrix multiply-accumulate API of the
// tensor cores, emulated on the CPU.
//
// A fragment is warp-collective on a GPU: each lane holds an unspecified share of the tile. Here each
// lane owns a fixed block of the M x N result (rows x cols = 2 x 4 for the 256-element shapes, 1 x 2
// for m8n8k4) and its fragments hold exactly what that block needs: an accumulator its own elements,
// a matrix_a fragment the A rows of the block (all K columns), a matrix_b fragment the B columns (all
// K rows). So load_matrix_sync, mma_sync, store_matrix_sync and fill_fragment are lane-local - no
// lane waits for another, and the warp's lanes together compute each product exactly once - while
// element-wise code over `frag.x[i]` for i < num_elements (which CUDA leaves unmapped) works as on a
// GPU. num_elements therefore differs from the hardware's (a matrix_a fragment of m16n16k16 holds 32
// elements per lane here, 8 on sm_80). As on a GPU, a lane that reads what other lanes stored with
// store_matrix_sync must synchronise with them first (__syncwarp / __syncthreads).
//
// Arithmetic, as the tensor cores do it: products of half, bf16, tf32 and int8 inputs are exact in
// the accumulator type; float accumulation is in float, in k order (the hardware's order inside one
// mma is unspecified, so the last bits of a float result may differ from a GPU's); a half accumulator
// is computed in float and rounded to half once per mma_sync; tf32 inputs are truncated to tf32's
// 10-bit mantissa (what the hardware reads of an fp32 register); int8 products accumulate exactly in
// int32 (wrapping, or saturating with satf); double (m8n8k4) is computed in double with fused
// multiply-adds. Sub-byte types (experimental::precision::u4/s4/b1) are not supported (static_assert).
#pragma once
#include "../vf_macro_guard_begin.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_fp16.h"

namespace nvcuda {
namespace wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;
enum layout_t { mem_row_major, mem_col_major };

namespace precision {
struct tf32;
}
namespace experimental {
namespace precision {
struct u4;
struct s4;
struct b1;
}  // namespace precision
enum bmmaBitOp { bmmaBitOpXOR = 1, bmmaBitOpAND = 2 };
enum bmmaAccumulateOp { bmmaAccumulateOpPOPC = 1 };
}  // namespace experimental

// Rounds an fp32 value to tf32 (10 mantissa bits, to nearest, ties away from zero: cvt.rna.tf32.f32).
inline float __float_to_tf32(float in) {
    if (!std::isfinite(in)) return in;
    uint32_t bits;
    std::memcpy(&bits, &in, 4);
    bits = (bits + 0x1000u) & 0xffffe000u;
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

namespace vf_detail {
template <class T> struct storage {
    using type = T;
};
template <> struct storage<precision::tf32> {
    using type = float;
};
template <class T> inline constexpr bool supported_v =
    std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, precision::tf32> ||
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, signed char> ||
    std::is_same_v<T, unsigned char> || std::is_same_v<T, int>;

// The block of the M x N result each lane owns: rows x cols elements at (row0, col0).
template <int M, int N> struct lanes {
    static_assert(M * N == 256 || M * N == 64, "WMMA shape not supported by the CPU runtime");
    static constexpr int rows = M * N == 256 ? 2 : 1;
    static constexpr int cols = M * N == 256 ? 4 : 2;
    static constexpr int grid_cols = N / cols;  // lanes across
    static_assert((M / rows) * grid_cols == 32, "WMMA lane layout");
    static unsigned lane() {
        return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u;
    }
    static int row0() { return (int)(lane() / grid_cols) * rows; }
    static int col0() { return (int)(lane() % grid_cols) * cols; }
};

template <class Use, int M, int N, int K> struct extent;
template <int M, int N, int K> struct extent<matrix_a, M, N, K> {
    static constexpr int size = lanes<M, N>::rows * K;
};
template <int M, int N, int K> struct extent<matrix_b, M, N, K> {
    static constexpr int size = K * lanes<M, N>::cols;
};
template <int M, int N, int K> struct extent<accumulator, M, N, K> {
    static constexpr int size = lanes<M, N>::rows * lanes<M, N>::cols;
};

// Input elements as the tensor core reads them.
inline const float* make_half_table() {
    float* t = new float[65536];
    for (uint32_t i = 0; i < 65536; ++i) {
        uint16_t bits = (uint16_t)i;
        __half v;
        std::memcpy(&v, &bits, 2);
        t[i] = __half2float(v);
    }
    return t;
}
inline const float* const half_table = make_half_table();
inline float half_to_float(__half h) {
    uint16_t bits;
    std::memcpy(&bits, &h, 2);
    return half_table[bits];
}
template <class T> inline auto input(const typename storage<T>::type& v) {
    if constexpr (std::is_same_v<T, __half>) return half_to_float(v);
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
    else if constexpr (std::is_same_v<T, precision::tf32>) {
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        bits &= 0xffffe000u;
        float out;
        std::memcpy(&out, &bits, 4);
        return out;
    } else if constexpr (std::is_same_v<T, signed char> || std::is_same_v<T, unsigned char>) return (int32_t)v;
    else return v;
}
template <class T> inline T from_float(float v) {
    if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
    else return (T)v;
}
}  // namespace vf_detail

template <class Use, int M, int N, int K, class T, class Layout = void> class fragment {
    static_assert(vf_detail::supported_v<T>,
                  "this WMMA element type (sub-byte u4/s4/b1) is not supported by the CPU runtime");

  public:
    using element_type = T;
    using storage_element_type = typename vf_detail::storage<T>::type;
    static constexpr int num_elements = vf_detail::extent<Use, M, N, K>::size;
    storage_element_type x[num_elements];
};

template <class Use, int M, int N, int K, class T, class L, class V>
inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, const V& value) {
    using S = typename fragment<Use, M, N, K, T, L>::storage_element_type;
    S v = (S)value;
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = v;
}

// ---- loads: each lane reads the elements its fragment holds ------------------------------------
template <int M, int N, int K, class T, class L, class P>
inline void load_matrix_sync(fragment<matrix_a, M, N, K, T, L>& a, const P* p, unsigned ldm) {
    static_assert(!std::is_void_v<L>, "a matrix_a fragment needs a layout (row_major / col_major)");
    using G = vf_detail::lanes<M, N>;
    const auto* src = reinterpret_cast<const typename vf_detail::storage<T>::type*>(p);
    const int r0 = G::row0();
    for (int i = 0; i < G::rows; ++i)
        for (int k = 0; k < K; ++k)
            a.x[i * K + k] = std::is_same_v<L, row_major> ? src[(size_t)(r0 + i) * ldm + k]
                                                          : src[(size_t)k * ldm + (r0 + i)];
}
template <int M, int N, int K, class T, class L, class P>
inline void load_matrix_sync(fragment<matrix_b, M, N, K, T, L>& b, const P* p, unsigned ldm) {
    static_assert(!std::is_void_v<L>, "a matrix_b fragment needs a layout (row_major / col_major)");
    using G = vf_detail::lanes<M, N>;
    const auto* src = reinterpret_cast<const typename vf_detail::storage<T>::type*>(p);
    const int c0 = G::col0();
    for (int k = 0; k < K; ++k)
        for (int j = 0; j < G::cols; ++j)
            b.x[k * G::cols + j] = std::is_same_v<L, row_major> ? src[(size_t)k * ldm + (c0 + j)]
                                                                : src[(size_t)(c0 + j) * ldm + k];
}
template <int M, int N, int K, class T, class P>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T, void>& c, const P* p, unsigned ldm, layout_t layout) {
    using G = vf_detail::lanes<M, N>;
    const T* src = reinterpret_cast<const T*>(p);
    const int r0 = G::row0(), c0 = G::col0();
    for (int i = 0; i < G::rows; ++i)
        for (int j = 0; j < G::cols; ++j)
            c.x[i * G::cols + j] = layout == mem_row_major ? src[(size_t)(r0 + i) * ldm + (c0 + j)]
                                                           : src[(size_t)(c0 + j) * ldm + (r0 + i)];
}

// ---- store: each lane writes the result elements it owns ---------------------------------------
template <int M, int N, int K, class T, class P>
inline void store_matrix_sync(P* p, const fragment<accumulator, M, N, K, T, void>& c, unsigned ldm, layout_t layout) {
    using G = vf_detail::lanes<M, N>;
    T* dst = reinterpret_cast<T*>(p);
    const int r0 = G::row0(), c0 = G::col0();
    for (int i = 0; i < G::rows; ++i)
        for (int j = 0; j < G::cols; ++j) {
            T v = c.x[i * G::cols + j];
            if (layout == mem_row_major) dst[(size_t)(r0 + i) * ldm + (c0 + j)] = v;
            else dst[(size_t)(c0 + j) * ldm + (r0 + i)] = v;
        }
}

// ---- d = a * b + c over the lane's own block ----------------------------------------------------
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC, class TD>
inline void mma_sync(fragment<accumulator, M, N, K, TD, void>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
                     const fragment<matrix_b, M, N, K, TB, LB>& b, const fragment<accumulator, M, N, K, TC, void>& c,
                     bool satf = false) {
    using G = vf_detail::lanes<M, N>;
    constexpr int R = G::rows, C = G::cols;
    if constexpr (std::is_same_v<TD, int>) {
        static_assert(std::is_same_v<TC, int>, "an integer mma accumulates in int");
        int32_t av[R][K], bv[K][C];
        for (int i = 0; i < R; ++i)
            for (int k = 0; k < K; ++k) av[i][k] = vf_detail::input<TA>(a.x[i * K + k]);
        for (int k = 0; k < K; ++k)
            for (int j = 0; j < C; ++j) bv[k][j] = vf_detail::input<TB>(b.x[k * C + j]);
        int out[R * C];
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < C; ++j) {
                int64_t acc = c.x[i * C + j];
                for (int k = 0; k < K; ++k) acc += (int64_t)av[i][k] * bv[k][j];
                if (satf) acc = acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : acc;
                out[i * C + j] = (int)(uint32_t)(uint64_t)acc;
            }
        for (int e = 0; e < R * C; ++e) d.x[e] = out[e];
    } else if constexpr (std::is_same_v<TD, double>) {
        double out[R * C];
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < C; ++j) {
                double acc = c.x[i * C + j];
                for (int k = 0; k < K; ++k) acc = std::fma(a.x[i * K + k], b.x[k * C + j], acc);
                out[i * C + j] = acc;
            }
        for (int e = 0; e < R * C; ++e) d.x[e] = out[e];
    } else {
        float av[R][K], bv[K][C];
        for (int i = 0; i < R; ++i)
            for (int k = 0; k < K; ++k) av[i][k] = vf_detail::input<TA>(a.x[i * K + k]);
        for (int k = 0; k < K; ++k)
            for (int j = 0; j < C; ++j) bv[k][j] = vf_detail::input<TB>(b.x[k * C + j]);
        // Each element sums its products in k order; the C elements of a row are independent
        // accumulators (the innermost loop, which the compiler vectorises).
        float out[R * C];
        for (int i = 0; i < R; ++i) {
            float acc[C];
            for (int j = 0; j < C; ++j) acc[j] = vf_detail::input<TC>(c.x[i * C + j]);
            for (int k = 0; k < K; ++k)
                for (int j = 0; j < C; ++j) acc[j] += av[i][k] * bv[k][j];
            for (int j = 0; j < C; ++j) out[i * C + j] = satf && std::isnan(acc[j]) ? 0.0f : acc[j];
        }
        for (int e = 0; e < R * C; ++e) {
            float v = out[e];
            if (satf && std::is_same_v<TD, __half>) v = v > 65504.0f ? 65504.0f : v < -65504.0f ? -65504.0f : v;
            d.x[e] = vf_detail::from_float<TD>(v);
        }
    }
}

}  // namespace wmma
}  // namespace nvcuda
#include "../vf_macro_guard_end.h"
