// veriforge CPU runtime: CUDA arrays, textures and surfaces (host API and the sampler).
//
// The model is the CUDA Programming Guide's "Texture and Surface Memory" section and its appendix
// on texture fetching:
//   - a CUDA array is device memory (cudaMalloc'd, so the device-memory guard, cudaMemGetInfo and
//     the race check's memory hashes see it) holding width x height x depth (or layers, or cube
//     faces) texels row by row, without padding;
//   - a texture fetch maps its coordinates to texel space (x * N for normalized coordinates),
//     applies the address mode (wrap / mirror only with normalized coordinates, otherwise clamp,
//     as cudaCreateTextureObject documents), and either takes the nearest texel (i = floor(x)) or
//     filters linearly between the texels around x - 0.5 with the weight frac(x - 0.5) held in
//     9-bit fixed point with 8 fraction bits: alpha = round(frac * 256) / 256, so 1.0 is
//     representable (the 9th bit) and a fetch within 1/512 of a texel centre returns the texel;
//     the weighted sum is exact, rounded once to fp32 (closest to GPU output: docs/cpu-runtime.md);
//   - cudaReadModeNormalizedFloat turns 8- and 16-bit integers into [0, 1] (unsigned, v / (2^n - 1))
//     or [-1, 1] (signed, max(v / (2^(n-1) - 1), -1)) before filtering; 32-bit integers are returned
//     as they are, half floats as floats;
//   - the result is four 32-bit registers (missing channels read 0, a missing 4th channel 1, as
//     graphics APIs define it); vf_texture.h converts them to the fetch's type.
// Textures read the memory as it is now: a GPU's texture cache is not coherent with stores of the
// same launch (such a kernel reads stale or new values there); here it always reads new values.
#include <errno.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "vf_core.h"

#if defined(VF_HAVE_CUDA_HEADERS)
#include "vf_texture.h"

namespace vf {
// host_api.cpp: the runtime's error state and allocation table.
cudaError_t api_error(cudaError_t e);
cudaError_t api_sticky();
bool allocation_range(const void* p, const void** base, size_t* size);
}  // namespace vf

namespace vf {
namespace tex {
namespace {

// Small loops over dimensions, corners and channels: unrolled, so their arrays live in registers.
#define VF_UNROLL _Pragma("GCC unroll 8")

constexpr size_t kTextureAlignment = 512;     // cudaDeviceProp::textureAlignment
constexpr size_t kTexturePitchAlignment = 32; // cudaDeviceProp::texturePitchAlignment

enum Kind : uint8_t { kSigned = 0, kUnsigned = 1, kFloat = 2 };
struct Format {
    uint8_t kind = kFloat;
    uint8_t channels = 1;   // 1, 2 or 4
    uint8_t bits = 32;      // per channel: 8, 16 or 32
    uint8_t bytes = 4;      // per texel
    bool unorm = false;     // cudaChannelFormatKind(Un)signedNormalized*: always read as normalized float
};

enum Geometry : uint8_t { kG1D, kG2D, kG3D, kG1DLayered, kG2DLayered, kGCubemap, kGCubemapLayered, kGLinear };

// Memory of one image (an array, one mipmap level, linear or pitched memory).
struct Image {
    char* base = nullptr;
    size_t pitch = 0;   // bytes per row
    size_t slice = 0;   // bytes per 2D slice (a depth slice, a layer, a cube face)
    int width = 0, height = 1, depth = 1;  // texels (depth: 3D depth, or layers / faces)
};

struct Sampler {
    uint8_t address[3] = {cudaAddressModeClamp, cudaAddressModeClamp, cudaAddressModeClamp};
    bool linear = false;
    bool norm_coords = false;
    bool read_float = false;   // cudaReadModeNormalizedFloat
    bool srgb = false;
    float border[4] = {0, 0, 0, 0};
    // mipmaps
    bool mip_linear = false;
    float mip_bias = 0, min_level = 0, max_level = 0;
};

constexpr uint32_t kArrayMagic = 0x56464152u, kMipMagic = 0x5646414du, kTexMagic = 0x56465458u,
                   kSurfMagic = 0x56465346u, kDead = 0xdeadu;

}  // namespace
}  // namespace tex
}  // namespace vf

struct cudaArray {
    uint32_t magic = vf::tex::kArrayMagic;
    cudaChannelFormatDesc desc{};
    vf::tex::Format fmt;
    cudaExtent extent{};       // as allocated (0 for an unused dimension)
    unsigned flags = 0;
    vf::tex::Geometry geometry = vf::tex::kG1D;
    vf::tex::Image img;
    size_t bytes = 0;
    bool level_of_mipmap = false;  // owned by a cudaMipmappedArray
};
struct cudaMipmappedArray {
    uint32_t magic = vf::tex::kMipMagic;
    std::vector<cudaArray*> levels;
    cudaExtent extent{};
    unsigned flags = 0;
};

namespace vf {
namespace tex {
namespace {

struct TextureObject;
// The sampler of a texture object, chosen when it is created (a specialised one for plain 1D/2D/3D
// textures, float32 ones especially; the general one for everything else).
using FetchFn = Regs (*)(const TextureObject& t, int op, const Coords& c, int line);
using XyzFn = Regs (*)(const TextureObject& t, int op, float x, float y, float z, int line);
Regs general_fetch(const TextureObject& t, int op, const Coords& c, int line);
Regs general_xyz(const TextureObject& t, int op, float x, float y, float z, int line);

struct TextureObject {
    uint32_t magic = kTexMagic;
    FetchFn fn = general_fetch;
    XyzFn xyz = general_xyz;
    Geometry geometry = kG2D;
    Format fmt;
    Sampler smp;
    std::vector<Image> levels;   // one unless mipmapped
    bool gather = false;         // the array allows tex2Dgather (cudaArrayTextureGather)
    cudaResourceDesc res{};
    cudaTextureDesc desc{};
    cudaResourceViewDesc view{};
};
struct SurfaceObject {
    uint32_t magic = kSurfMagic;
    Geometry geometry = kG2D;
    Format fmt;
    Image img;
    cudaResourceDesc res{};
};
// A legacy texture reference's binding (textureReference::vf_binding).
struct Binding {
    Format fmt;
    Image img;
    Geometry geometry = kGLinear;
    size_t offset = 0;
};

std::mutex g_tex_mutex;
std::vector<TextureObject*> g_free_textures;   // destroyed objects are reused, never freed, so a
std::vector<SurfaceObject*> g_free_surfaces;   // fetch through a stale handle faults cleanly

void note(const char* what) { fprintf(stderr, "veriforge: %s\n", what); }

// ---- formats -----------------------------------------------------------------------------------
bool format_of(const cudaChannelFormatDesc& d, Format* f, bool* unsupported) {
    *unsupported = false;
    int k = (int)d.f;
    if (k >= cudaChannelFormatKindUnsignedNormalized8X1 && k <= cudaChannelFormatKindSignedNormalized16X4) {
        static const uint8_t channels[3] = {1, 2, 4};
        int i = k - cudaChannelFormatKindUnsignedNormalized8X1;  // 0..11: U8 x3, U16 x3, S8 x3, S16 x3
        f->kind = i < 6 ? kUnsigned : kSigned;
        f->bits = (i % 6) < 3 ? 8 : 16;
        f->channels = channels[i % 3];
        f->unorm = true;
        f->bytes = (uint8_t)(f->bits / 8 * f->channels);
        return true;
    }
    if (k != cudaChannelFormatKindSigned && k != cudaChannelFormatKindUnsigned && k != cudaChannelFormatKindFloat) {
        *unsupported = k != cudaChannelFormatKindNone;  // block-compressed, NV12, 10-10-10-2
        return false;
    }
    int bits[4] = {d.x, d.y, d.z, d.w};
    int n = 0;
    while (n < 4 && bits[n] != 0) ++n;
    for (int i = n; i < 4; ++i)
        if (bits[i] != 0) return false;
    if (n != 1 && n != 2 && n != 4) return false;  // CUDA has no 3-channel formats
    for (int i = 1; i < n; ++i)
        if (bits[i] != bits[0]) return false;
    if (k == cudaChannelFormatKindFloat ? (bits[0] != 16 && bits[0] != 32)
                                        : (bits[0] != 8 && bits[0] != 16 && bits[0] != 32))
        return false;
    f->kind = k == cudaChannelFormatKindSigned ? kSigned : k == cudaChannelFormatKindUnsigned ? kUnsigned : kFloat;
    f->channels = (uint8_t)n;
    f->bits = (uint8_t)bits[0];
    f->bytes = (uint8_t)(bits[0] / 8 * n);
    f->unorm = false;
    return true;
}

cudaError_t check_format(const cudaChannelFormatDesc* d, Format* f) {
    if (!d) return cudaErrorInvalidValue;
    bool unsupported = false;
    if (format_of(*d, f, &unsupported)) return cudaSuccess;
    if (unsupported) {
        note("block-compressed, NV12 and 10-10-10-2 channel formats are not supported by the CPU runtime");
        return cudaErrorNotSupported;
    }
    return cudaErrorInvalidChannelDescriptor;
}

// The fetch returns floats (filtering allowed) rather than the element's integer bits.
inline bool float_result(const Format& f, const Sampler& s) {
    return f.kind == kFloat || f.unorm || (s.read_float && f.bits <= 16);
}

float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while (!(mant & 0x400));
            bits = sign | (uint32_t)(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | mant << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | mant << 13;
    }
    return std::bit_cast<float>(bits);
}

inline float srgb_to_linear(float c) {
    return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);
}

// One channel's raw value: sign- or zero-extended integer bits, or float bits.
inline uint32_t channel_bits(const Format& f, const char* p, int c) {
    switch (f.bits) {
        case 8: {
            uint8_t v = reinterpret_cast<const uint8_t*>(p)[c];
            return f.kind == kSigned ? (uint32_t)(int32_t)(int8_t)v : v;
        }
        case 16: {
            uint16_t v;
            memcpy(&v, p + 2 * c, 2);
            if (f.kind == kFloat) return std::bit_cast<uint32_t>(half_to_float(v));
            return f.kind == kSigned ? (uint32_t)(int32_t)(int16_t)v : v;
        }
        default: {
            uint32_t v;
            memcpy(&v, p + 4 * c, 4);
            return v;
        }
    }
}

// A texel in the element domain (what cudaReadModeElementType returns for integers).
inline void texel_bits(const Format& f, const char* p, uint32_t out[4]) {
    for (int c = 0; c < 4; ++c) out[c] = c < f.channels ? channel_bits(f, p, c) : (c == 3 ? 1u : 0u);
}

// A texel as floats: float formats as they are, 8/16-bit integers normalized (read_float or a
// normalized channel kind), 32-bit integers as their value.
inline void texel_floats(const Format& f, const Sampler& s, const char* p, float out[4]) {
    if (f.kind == kFloat && f.bits == 32) {
        out[1] = out[2] = 0.0f;
        out[3] = 1.0f;
        for (int c = 0; c < f.channels; ++c) memcpy(out + c, p + 4 * c, 4);
        return;
    }
    for (int c = 0; c < 4; ++c) {
        if (c >= f.channels) {
            out[c] = c == 3 ? 1.0f : 0.0f;
            continue;
        }
        uint32_t b = channel_bits(f, p, c);
        float v;
        if (f.kind == kFloat) {
            v = std::bit_cast<float>(b);
        } else if (f.bits == 32) {
            v = f.kind == kSigned ? (float)(int32_t)b : (float)b;
        } else if (f.kind == kUnsigned) {
            v = (float)b / (f.bits == 8 ? 255.0f : 65535.0f);
            if (s.srgb && f.bits == 8 && c < 3) v = srgb_to_linear(v);
        } else {
            v = std::max((float)(int32_t)b / (f.bits == 8 ? 127.0f : 32767.0f), -1.0f);
        }
        out[c] = v;
    }
}

// ---- addressing --------------------------------------------------------------------------------
// floor() without a libm call (x86-64's baseline SSE2 has no rounding instruction).
inline float ffloor(float v) {
    if (!(std::fabs(v) < 8388608.0f)) return v;  // |v| >= 2^23 is integral (or NaN / inf)
    float t = (float)(int)v;
    return t > v ? t - 1.0f : t;
}

// floor(v) as an int, saturated to +-2^30 (NaN: 0).
inline int floor_to_int(float v) {
    if (__builtin_expect(std::fabs(v) < 1073741824.0f, 1)) {
        int i = (int)v;
        return i - ((float)i > v);
    }
    return v != v ? 0 : v < 0 ? -1073741824 : 1073741824;
}

// A coordinate in texel space: normalized coordinates are wrapped / mirrored into [0, 1) first
// (the Guide's definition) and scaled by the size.
inline float to_texel(float x, int n, int mode, bool norm) {
    if (!norm) return x;
    if (mode == cudaAddressModeWrap) {
        x = x - ffloor(x);
    } else if (mode == cudaAddressModeMirror) {
        float f = ffloor(x), fr = x - f;
        long long fi = (long long)std::min(std::max(f, -4.0e18f), 4.0e18f);
        x = (fi & 1) ? 1.0f - fr : fr;
    }
    return x * (float)n;
}

// Applies the address mode to a texel index; false: outside the texture in border mode.
inline bool address(int& i, int n, int mode) {
    if ((unsigned)i < (unsigned)n) return true;
    switch (mode) {
        case cudaAddressModeWrap:
            i %= n;
            if (i < 0) i += n;
            return true;
        case cudaAddressModeMirror: {
            long long p = 2LL * n, m = i % p;
            if (m < 0) m += p;
            i = (int)(m < n ? m : p - 1 - m);
            return true;
        }
        case cudaAddressModeBorder:
            return false;
        default:
            i = i < 0 ? 0 : n - 1;
            return true;
    }
}

// The 9-bit fixed-point interpolation weight (8 fraction bits) of frac(xB).
inline float weight(float frac) { return ffloor(frac * 256.0f + 0.5f) * (1.0f / 256.0f); }

[[noreturn]] void fault(const char* what, int line) { ::vf::trap(what, line); }

// Samples image `img` at texel-space position `pos` (dims coordinates; slice = layer / face /
// unused) with the sampler, returning the four result registers.
// A texel as floats; FC > 0: the format is known to be FC channels of float32 (the fast path).
template <int FC> inline void read_floats(const Format& fmt, const Sampler& s, const char* p, float t[4]) {
    if constexpr (FC > 0) {
        t[1] = t[2] = 0.0f;
        t[3] = 1.0f;
        memcpy(t, p, FC * 4);
    } else {
        texel_floats(fmt, s, p, t);
    }
}

// The border colour as the result of a fetch (its bits: an integer texture's border colour is
// given as the float with those bits); channels the format lacks read 0 (alpha 1).
inline Regs border_regs(const Sampler& s, int channels, bool float_result) {
    Regs out;
    const uint32_t one = float_result ? std::bit_cast<uint32_t>(1.0f) : 1u;
    for (int c = 0; c < 4; ++c) out.r[c] = c < channels ? std::bit_cast<uint32_t>(s.border[c]) : c == 3 ? one : 0u;
    return out;
}

template <int dims, int FC>
__attribute__((always_inline)) inline Regs sample_image(const Image& img, const Format& fmt, const Sampler& s, const float* coord, int slice, int line) {
    const int size[3] = {img.width, img.height, img.depth};
    const size_t stride[3] = {fmt.bytes, img.pitch, img.slice};
    const char* base = img.base + (size_t)slice * img.slice;
    const bool fl = FC > 0 || float_result(fmt, s);
    Regs out;
    float u[3];
    VF_UNROLL
    for (int d = 0; d < dims; ++d) u[d] = to_texel(coord[d], size[d], s.address[d], s.norm_coords);
    if (!s.linear) {
        const char* p = base;
        VF_UNROLL
        for (int d = 0; d < dims; ++d) {
            int i = floor_to_int(u[d]);
            if (!address(i, size[d], s.address[d])) {
                return border_regs(s, FC > 0 ? FC : fmt.channels, fl);
            }
            p += (size_t)i * stride[d];
        }
        if (fl) {
            float f[4];
            read_floats<FC>(fmt, s, p, f);
            VF_UNROLL
            for (int c = 0; c < 4; ++c) out.r[c] = std::bit_cast<uint32_t>(f[c]);
        } else {
            texel_bits(fmt, p, out.r);
        }
        return out;
    }
    // Per dimension: the two texels around x - 0.5 (addressed; `in` false = border) and the
    // 9-bit weight of the upper one.
    size_t off[3][2];
    bool in[3][2];
    float w[3];
    bool all_zero = true;
    VF_UNROLL
    for (int d = 0; d < dims; ++d) {
        float xb = u[d] - 0.5f;
        int i0 = floor_to_int(xb);
        w[d] = weight(xb - ffloor(xb));
        if (w[d] == 1.0f) {  // rounded up to the next texel centre
            ++i0;
            w[d] = 0.0f;
        }
        all_zero = all_zero && w[d] == 0.0f;
        VF_UNROLL
        for (int h = 0; h < 2; ++h) {
            int i = i0 + h;
            in[d][h] = address(i, size[d], s.address[d]);
            off[d][h] = in[d][h] ? (size_t)i * stride[d] : 0;
        }
    }
    if (all_zero || !fl) {
        // Exactly at a texel centre: that texel. Linear filtering of integers (element read mode)
        // is undefined on a GPU (it returns garbage between texel centres): a fault here.
        if (!all_zero)
            fault("linear filtering of a texture read as integers (cudaReadModeElementType on an integer "
                  "format; a GPU returns undefined values between texel centres)", line);
        const char* p = base;
        VF_UNROLL
        for (int d = 0; d < dims; ++d) {
            if (!in[d][0]) {
                return border_regs(s, FC > 0 ? FC : fmt.channels, fl);
            }
            p += off[d][0];
        }
        if (fl) {
            float f[4];
            read_floats<FC>(fmt, s, p, f);
            VF_UNROLL
            for (int c = 0; c < 4; ++c) out.r[c] = std::bit_cast<uint32_t>(f[c]);
        } else {
            texel_bits(fmt, p, out.r);
        }
        return out;
    }
    // (1-a)(1-b)T[i,j] + a(1-b)T[i+1,j] + (1-a)bT[i,j+1] + abT[i+1,j+1] (and the 3D analogue),
    // summed exactly (the weights have at most 24 bits, the products fit a double) and rounded once
    // to fp32 - which matches GPU output better than fp32 arithmetic in this order (see the docs).
    double acc[4] = {0, 0, 0, 0};
    VF_UNROLL
    for (int corner = 0; corner < (1 << dims); ++corner) {
        const char* p = base;
        float wt = 1.0f;
        bool inside = true;
        VF_UNROLL
        for (int d = 0; d < dims; ++d) {
            int h = (corner >> d) & 1;
            wt *= h ? w[d] : 1.0f - w[d];
            inside = inside && in[d][h];
            p += off[d][h];
        }
        float t[4];
        if (inside)
            read_floats<FC>(fmt, s, p, t);
        else
            VF_UNROLL
            for (int c = 0; c < 4; ++c) t[c] = s.border[c];
        VF_UNROLL
        for (int c = 0; c < (FC > 0 ? FC : 4); ++c) acc[c] += (double)wt * t[c];
    }
    // Channels the format does not have read 0 (alpha 1), whatever the border colour.
    const int nch = FC > 0 ? FC : fmt.channels;
    VF_UNROLL
    for (int c = 0; c < 4; ++c) out.r[c] = std::bit_cast<uint32_t>(c < nch ? (float)acc[c] : c == 3 ? 1.0f : 0.0f);
    return out;
}

// The fast paths: float32 textures of 1, 2 or 4 channels.
template <int dims>
Regs sample_any(const Image& img, const Format& fmt, const Sampler& s, const float* coord, int slice, int line) {
    if (fmt.kind == kFloat && fmt.bits == 32) {
        if (fmt.channels == 1) return sample_image<dims, 1>(img, fmt, s, coord, slice, line);
        if (fmt.channels == 2) return sample_image<dims, 2>(img, fmt, s, coord, slice, line);
        return sample_image<dims, 4>(img, fmt, s, coord, slice, line);
    }
    return sample_image<dims, 0>(img, fmt, s, coord, slice, line);
}

// tex2Dgather: component `comp` of the four texels of a bilinear fetch, in the order
// (i, j+1), (i+1, j+1), (i+1, j), (i, j) - Direct3D's Gather order, which the texture unit uses.
Regs gather(const Image& img, const Format& fmt, const Sampler& s, const float* coord, int comp) {
    const int size[2] = {img.width, img.height};
    const bool fl = float_result(fmt, s);
    int i0[2];
    for (int d = 0; d < 2; ++d) i0[d] = floor_to_int(to_texel(coord[d], size[d], s.address[d], s.norm_coords) - 0.5f);
    static const int corners[4][2] = {{0, 1}, {1, 1}, {1, 0}, {0, 0}};
    Regs out;
    comp = comp < 0 ? 0 : comp > 3 ? 3 : comp;
    for (int k = 0; k < 4; ++k) {
        int idx[2] = {i0[0] + corners[k][0], i0[1] + corners[k][1]};
        bool inside = address(idx[0], size[0], s.address[0]);
        inside = address(idx[1], size[1], s.address[1]) && inside;
        if (!inside) {
            out.r[k] = std::bit_cast<uint32_t>(s.border[comp]);
            continue;
        }
        const char* p = img.base + (size_t)idx[1] * img.pitch + (size_t)idx[0] * fmt.bytes;
        if (fl) {
            float f[4];
            texel_floats(fmt, s, p, f);
            out.r[k] = std::bit_cast<uint32_t>(f[comp]);
        } else {
            uint32_t b[4];
            texel_bits(fmt, p, b);
            out.r[k] = b[comp];
        }
    }
    return out;
}

// The cube face and its normalized (u, v) for direction (x, y, z) - the Guide's cubemap table.
int cube_face(float x, float y, float z, float* u, float* v) {
    float ax = std::fabs(x), ay = std::fabs(y), az = std::fabs(z);
    int face;
    float m, sc, tc;
    if (ax >= ay && ax >= az) {
        face = x >= 0 ? 0 : 1;
        m = ax;
        sc = x >= 0 ? -z : z;
        tc = -y;
    } else if (ay >= az) {
        face = y >= 0 ? 2 : 3;
        m = ay;
        sc = x;
        tc = y >= 0 ? z : -z;
    } else {
        face = z >= 0 ? 4 : 5;
        m = az;
        sc = z >= 0 ? x : -x;
        tc = -y;
    }
    if (m == 0) m = 1;
    *u = (sc / m + 1.0f) * 0.5f;
    *v = (tc / m + 1.0f) * 0.5f;
    return face;
}

inline int clamp_layer(int layer, int n) { return layer < 0 ? 0 : layer >= n ? n - 1 : layer; }

// One fetch on an image with a geometry: maps the call's coordinates to the sampler's.
Regs fetch(Geometry g, const Image& img, const Format& fmt, const Sampler& s, int op, const Coords& c, bool gather_ok,
           int line) {
    float coord[3] = {c.x, c.y, c.z};
    if (op == kFetch1D || g == kGLinear) {
        // tex1Dfetch: an integer index, no filtering, zero outside the resource.
        int i = op == kFetch1D ? c.ix : floor_to_int(c.x);
        Regs out{};
        if (i < 0 || i >= img.width) return out;
        const char* p = img.base + (size_t)i * fmt.bytes;
        if (float_result(fmt, s)) {
            float f[4];
            texel_floats(fmt, s, p, f);
            for (int k = 0; k < 4; ++k) out.r[k] = std::bit_cast<uint32_t>(f[k]);
        } else {
            texel_bits(fmt, p, out.r);
        }
        return out;
    }
    switch (g) {
        case kG1D: return sample_any<1>(img, fmt, s, coord, 0, line);
        case kG2D:
            if (op == kGather2D) {
                if (!gather_ok)
                    fault("tex2Dgather on a texture whose CUDA array was not allocated with cudaArrayTextureGather",
                          line);
                return gather(img, fmt, s, coord, c.comp);
            }
            return sample_any<2>(img, fmt, s, coord, 0, line);
        case kG3D: return sample_any<3>(img, fmt, s, coord, 0, line);
        case kG1DLayered: return sample_any<1>(img, fmt, s, coord, clamp_layer(c.layer, img.depth), line);
        case kG2DLayered: return sample_any<2>(img, fmt, s, coord, clamp_layer(c.layer, img.depth), line);
        case kGCubemap:
        case kGCubemapLayered: {
            float uv[2];
            int face = cube_face(c.x, c.y, c.z, &uv[0], &uv[1]);
            Sampler cs = s;
            cs.norm_coords = true;  // cubemap coordinates are always normalized
            int layer = g == kGCubemapLayered ? clamp_layer(c.layer, img.depth / 6) : 0;
            return sample_any<2>(img, fmt, cs, uv, layer * 6 + face, line);
        }
        default: return sample_any<2>(img, fmt, s, coord, 0, line);
    }
}

// ---- arrays ------------------------------------------------------------------------------------
bool valid_array(const cudaArray* a) { return a && a->magic == kArrayMagic; }

cudaError_t make_array(cudaArray** out, const cudaChannelFormatDesc* desc, cudaExtent e, unsigned flags,
                       bool is3d) {
    if (!out) return cudaErrorInvalidValue;
    Format fmt;
    if (cudaError_t err = check_format(desc, &fmt)) return err;
    const unsigned known = cudaArrayLayered | cudaArraySurfaceLoadStore | cudaArrayCubemap | cudaArrayTextureGather;
    if (flags & ~known) {
        if (flags & (cudaArraySparse | cudaArrayDeferredMapping | cudaArrayColorAttachment))
            note("sparse, deferred-mapping and graphics-attachment CUDA arrays are not supported by the CPU runtime");
        return (flags & (cudaArraySparse | cudaArrayDeferredMapping)) ? cudaErrorNotSupported : cudaErrorInvalidValue;
    }
    if (!is3d && (flags & (cudaArrayLayered | cudaArrayCubemap))) return cudaErrorInvalidValue;
    if (e.width == 0) return cudaErrorInvalidValue;
    Geometry g;
    size_t w = e.width, h = e.height, d = e.depth;
    if (flags & cudaArrayCubemap) {
        bool layered = flags & cudaArrayLayered;
        if (w != h || d == 0 || d % 6 != 0 || (!layered && d != 6)) return cudaErrorInvalidValue;
        g = layered ? kGCubemapLayered : kGCubemap;
    } else if (flags & cudaArrayLayered) {
        if (d == 0) return cudaErrorInvalidValue;
        g = h == 0 ? kG1DLayered : kG2DLayered;
    } else if (d != 0) {
        if (h == 0) return cudaErrorInvalidValue;
        g = kG3D;
    } else {
        g = h == 0 ? kG1D : kG2D;
    }
    if ((flags & cudaArrayTextureGather) && g != kG2D) return cudaErrorInvalidValue;
    if (w > (1u << 17) || h > (1u << 17) || d > (1u << 16)) return cudaErrorInvalidValue;
    auto* a = new cudaArray();
    a->desc = *desc;
    a->fmt = fmt;
    a->extent = e;
    a->flags = flags;
    a->geometry = g;
    a->img.width = (int)w;
    a->img.height = (int)std::max<size_t>(h, 1);
    a->img.depth = (int)std::max<size_t>(d, 1);
    a->img.pitch = w * fmt.bytes;
    a->img.slice = a->img.pitch * (size_t)a->img.height;
    a->bytes = a->img.slice * (size_t)a->img.depth;
    void* mem = nullptr;
    cudaError_t err = cudaMalloc(&mem, a->bytes);
    if (err != cudaSuccess) {
        delete a;
        return err;
    }
    a->img.base = static_cast<char*>(mem);
    *out = a;
    return cudaSuccess;
}

void free_array_storage(cudaArray* a) {
    cudaFree(a->img.base);
    a->magic = kDead;
    delete a;
}

// Rows of `width` bytes between an array (at byte x, row y, slice z) and linear memory.
cudaError_t array_rows(cudaArray* a, size_t x, size_t y, size_t z, void* mem, size_t pitch, size_t width,
                       size_t height, size_t depth, size_t mem_slice, bool to_array, cudaMemcpyKind kind) {
    if (!width || !height || !depth) return cudaSuccess;
    if (x + width > a->img.pitch || y + height > (size_t)a->img.height || z + depth > (size_t)a->img.depth)
        return cudaErrorInvalidValue;
    if (!mem || (height > 1 && pitch < width)) return cudaErrorInvalidValue;
    for (size_t k = 0; k < depth; ++k) {
        char* arr = a->img.base + (z + k) * a->img.slice + y * a->img.pitch + x;
        char* lin = static_cast<char*>(mem) + k * mem_slice;
        cudaError_t err = to_array ? cudaMemcpy2D(arr, a->img.pitch, lin, pitch ? pitch : width, width, height, kind)
                                   : cudaMemcpy2D(lin, pitch ? pitch : width, arr, a->img.pitch, width, height, kind);
        if (err != cudaSuccess) return err;
    }
    return cudaSuccess;
}

// A linear run of `count` bytes from byte x of row y onwards (the deprecated cudaMemcpyToArray).
cudaError_t array_linear(cudaArray* a, size_t x, size_t y, void* mem, size_t count, bool to_array,
                         cudaMemcpyKind kind) {
    size_t start = y * a->img.pitch + x;
    if (x > a->img.pitch || start + count > a->bytes) return cudaErrorInvalidValue;
    if (!count) return cudaSuccess;
    if (!mem) return cudaErrorInvalidValue;
    char* arr = a->img.base + start;
    return to_array ? cudaMemcpy(arr, mem, count, kind) : cudaMemcpy(mem, arr, count, kind);
}

// ---- texture / surface objects -------------------------------------------------------------------
Image image_of(const cudaArray* a) { return a->img; }

TextureObject* new_texture() {
    std::lock_guard<std::mutex> lock(g_tex_mutex);
    if (!g_free_textures.empty()) {
        TextureObject* t = g_free_textures.back();
        g_free_textures.pop_back();
        *t = TextureObject();
        return t;
    }
    return new TextureObject();
}

const TextureObject* texture_at(unsigned long long handle) {
    auto* t = reinterpret_cast<const TextureObject*>(handle);
    return t && t->magic == kTexMagic ? t : nullptr;
}
const SurfaceObject* surface_at(unsigned long long handle) {
    auto* s = reinterpret_cast<const SurfaceObject*>(handle);
    return s && s->magic == kSurfMagic ? s : nullptr;
}

// A device pointer must sit at a multiple of textureAlignment from its allocation's start (a
// cudaMalloc'd pointer itself always does, as on a GPU); returns the misalignment.
size_t misalignment(const void* p) {
    const void* base = nullptr;
    size_t size = 0;
    if (!::vf::allocation_range(p, &base, &size)) return 0;
    return (size_t)(static_cast<const char*>(p) - static_cast<const char*>(base)) % kTextureAlignment;
}

Sampler make_sampler(const cudaTextureDesc& d, bool norm_allowed = true) {
    Sampler s;
    s.norm_coords = d.normalizedCoords != 0 && norm_allowed;
    for (int i = 0; i < 3; ++i) {
        int m = (int)d.addressMode[i];
        if (m < cudaAddressModeWrap || m > cudaAddressModeBorder) m = cudaAddressModeClamp;
        // Wrap and mirror need normalized coordinates; otherwise CUDA switches them to clamp.
        if (!s.norm_coords && (m == cudaAddressModeWrap || m == cudaAddressModeMirror)) m = cudaAddressModeClamp;
        s.address[i] = (uint8_t)m;
    }
    s.linear = d.filterMode == cudaFilterModeLinear;
    s.read_float = d.readMode == cudaReadModeNormalizedFloat;
    s.srgb = d.sRGB != 0;
    for (int c = 0; c < 4; ++c) s.border[c] = d.borderColor[c];
    s.mip_linear = d.mipmapFilterMode == cudaFilterModeLinear;
    s.mip_bias = d.mipmapLevelBias;
    s.min_level = d.minMipmapLevelClamp;
    s.max_level = d.maxMipmapLevelClamp;
    return s;
}

// The mipmap level(s) of an explicit-LOD fetch: the image and, for linear mipmap filtering, the
// next level and the blend weight (8 fraction bits, like the texel weights).
Regs fetch_lod(const TextureObject* t, int op, const Coords& c, int line) {
    const int n = (int)t->levels.size();
    float lod = c.has_lod ? c.lod + t->smp.mip_bias : 0.0f;
    float lo = std::max(t->smp.min_level, 0.0f), hi = std::min(t->smp.max_level, (float)(n - 1));
    if (hi < lo) hi = lo;
    if (!(lod == lod)) lod = 0;
    lod = std::min(std::max(lod, lo), hi);
    if (n == 1) return fetch(t->geometry, t->levels[0], t->fmt, t->smp, op, c, t->gather, line);
    if (!t->smp.mip_linear) {
        int level = std::min(n - 1, floor_to_int(lod + 0.5f));
        return fetch(t->geometry, t->levels[(size_t)level], t->fmt, t->smp, op, c, t->gather, line);
    }
    int l0 = std::min(n - 1, floor_to_int(lod));
    float f = weight(lod - (float)l0);
    Regs a = fetch(t->geometry, t->levels[(size_t)l0], t->fmt, t->smp, op, c, t->gather, line);
    if (f == 0.0f || l0 + 1 >= n) return a;
    Regs b = fetch(t->geometry, t->levels[(size_t)l0 + 1], t->fmt, t->smp, op, c, t->gather, line);
    if (!float_result(t->fmt, t->smp)) return f < 0.5f ? a : b;
    Regs out;
    for (int k = 0; k < 4; ++k)
        out.r[k] = std::bit_cast<uint32_t>((float)((1.0 - f) * std::bit_cast<float>(a.r[k]) +
                                                   (double)f * std::bit_cast<float>(b.r[k])));
    return out;
}

Regs general_fetch(const TextureObject& t, int op, const Coords& c, int line) {
    if (t.levels.size() == 1) return fetch(t.geometry, t.levels[0], t.fmt, t.smp, op, c, t.gather, line);
    return fetch_lod(&t, op, c, line);
}

Regs general_xyz(const TextureObject& t, int op, float x, float y, float z, int line) {
    Coords c;
    c.x = x;
    c.y = y;
    c.z = z;
    return general_fetch(t, op, c, line);
}

// A plain 1D / 2D / 3D texture fetched by its own function (tex1D / tex2D / tex3D).
template <int dims, int FC>
Regs direct_xyz(const TextureObject& t, int op, float x, float y, float z, int line) {
    if (op != (dims == 1 ? k1D : dims == 2 ? k2D : k3D)) return general_xyz(t, op, x, y, z, line);
    const float coord[3] = {x, y, z};
    return sample_image<dims, FC>(t.levels[0], t.fmt, t.smp, coord, 0, line);
}
template <int dims> XyzFn direct_for(const Format& f) {
    if (f.kind == kFloat && f.bits == 32) {
        if (f.channels == 1) return direct_xyz<dims, 1>;
        if (f.channels == 2) return direct_xyz<dims, 2>;
        return direct_xyz<dims, 4>;
    }
    return direct_xyz<dims, 0>;
}
XyzFn choose_xyz(const TextureObject& t) {
    if (t.levels.size() != 1) return general_xyz;
    switch (t.geometry) {
        case kG1D: return direct_for<1>(t.fmt);
        case kG2D: return direct_for<2>(t.fmt);
        case kG3D: return direct_for<3>(t.fmt);
        default: return general_xyz;
    }
}

}  // namespace

// ---- the device-side entry points (vf_texture.h) ----------------------------------------------------
Regs texture_fetch(unsigned long long object, int op, const Coords& c, int line) {
    const TextureObject* t = texture_at(object);
    if (!t) {
        char msg[160];
        snprintf(msg, sizeof msg, "texture fetch through an invalid or destroyed texture object (0x%llx)", object);
        fault(msg, line);
    }
    return t->fn(*t, op, c, line);
}

Regs texture_fetch_xyz(unsigned long long object, int op, float x, float y, float z, int line) {
    const TextureObject* t = texture_at(object);
    if (!t) {
        char msg[160];
        snprintf(msg, sizeof msg, "texture fetch through an invalid or destroyed texture object (0x%llx)", object);
        fault(msg, line);
    }
    return t->xyz(*t, op, x, y, z, line);
}

Regs reference_fetch(const void* ref, bool normalized_float, int op, const Coords& c, int line) {
    const auto* r = static_cast<const textureReference*>(ref);
    const auto* b = static_cast<const Binding*>(r->vf_binding);
    if (!b) fault("texture fetch through a texture reference that is not bound (cudaBindTexture*)", line);
    cudaTextureDesc d{};
    for (int i = 0; i < 3; ++i) d.addressMode[i] = r->addressMode[i];
    d.filterMode = r->filterMode;
    d.readMode = normalized_float ? cudaReadModeNormalizedFloat : cudaReadModeElementType;
    d.sRGB = r->sRGB;
    d.normalizedCoords = r->normalized;
    Sampler s = make_sampler(d);
    if (b->geometry == kGLinear) s.linear = false;
    return fetch(b->geometry, b->img, b->fmt, s, op, c, true, line);
}

void surface_access(unsigned long long object, int op, bool write, void* data, unsigned size, int x, int y, int z,
                    int mode, int line) {
    const SurfaceObject* s = surface_at(object);
    if (!s) {
        char msg[160];
        snprintf(msg, sizeof msg, "surface %s through an invalid or destroyed surface object (0x%llx)",
                 write ? "write" : "read", object);
        fault(msg, line);
    }
    (void)op;
    const Image& img = s->img;
    const long long row = (long long)img.width * s->fmt.bytes;
    int ny = (s->geometry == kG1D || s->geometry == kG1DLayered) ? 1 : img.height;
    if (s->geometry == kG1D || s->geometry == kG1DLayered) y = 0;
    if (s->geometry == kG1D || s->geometry == kG2D) z = 0;
    bool in = x >= 0 && (long long)x + size <= row && y >= 0 && y < ny && z >= 0 && z < img.depth;
    if (!in) {
        if (mode == cudaBoundaryModeZero) {
            if (!write) memset(data, 0, size);
            return;
        }
        if (mode == cudaBoundaryModeClamp) {
            long long max_x = std::max(0LL, row - (long long)size);
            x = (int)std::min(std::max((long long)x, 0LL), max_x);
            y = std::min(std::max(y, 0), ny - 1);
            z = std::min(std::max(z, 0), img.depth - 1);
        } else {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "surface %s out of bounds with cudaBoundaryModeTrap: byte x=%d (%u-byte access), y=%d, z/layer=%d "
                     "outside a surface of %d x %d x %d elements of %u bytes",
                     write ? "write" : "read", x, size, y, z, img.width, ny, img.depth, (unsigned)s->fmt.bytes);
            fault(msg, line);
        }
    }
    char* p = img.base + (size_t)z * img.slice + (size_t)y * img.pitch + (size_t)x;
    if (write)
        memcpy(p, data, size);
    else
        memcpy(data, p, size);
}

}  // namespace tex
}  // namespace vf

using namespace vf::tex;

// ---- the host API ------------------------------------------------------------------------------
extern "C" {

struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, enum cudaChannelFormatKind f) {
    cudaChannelFormatDesc d;
    d.x = x;
    d.y = y;
    d.z = z;
    d.w = w;
    d.f = f;
    return d;
}

cudaError_t cudaMallocArray(cudaArray_t* array, const struct cudaChannelFormatDesc* desc, size_t width, size_t height,
                            unsigned int flags) {
    if (cudaError_t e = vf::api_sticky()) return e;
    return vf::api_error(make_array(array, desc, make_cudaExtent(width, height, 0), flags, false));
}

cudaError_t cudaMalloc3DArray(cudaArray_t* array, const struct cudaChannelFormatDesc* desc, struct cudaExtent extent,
                              unsigned int flags) {
    if (cudaError_t e = vf::api_sticky()) return e;
    return vf::api_error(make_array(array, desc, extent, flags, true));
}

cudaError_t cudaFreeArray(cudaArray_t array) {
    if (!array) return cudaSuccess;
    if (!valid_array(array) || array->level_of_mipmap) return vf::api_error(cudaErrorInvalidValue);
    free_array_storage(array);
    return vf::api_sticky();
}

cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc* desc, struct cudaExtent* extent, unsigned int* flags,
                             cudaArray_t array) {
    if (!valid_array(array)) return vf::api_error(cudaErrorInvalidResourceHandle);
    if (desc) *desc = array->desc;
    if (extent) *extent = array->extent;
    if (flags) *flags = array->flags;
    return vf::api_sticky();
}

cudaError_t cudaGetChannelDesc(struct cudaChannelFormatDesc* desc, cudaArray_const_t array) {
    if (!desc) return vf::api_error(cudaErrorInvalidValue);
    if (!valid_array(array)) return vf::api_error(cudaErrorInvalidResourceHandle);
    *desc = array->desc;
    return vf::api_sticky();
}

// Mipmapped arrays: level l has each used extent halved (at least 1), as CUDA allocates them.
cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t* mipmappedArray, const struct cudaChannelFormatDesc* desc,
                                     struct cudaExtent extent, unsigned int numLevels, unsigned int flags) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!mipmappedArray || extent.width == 0) return vf::api_error(cudaErrorInvalidValue);
    size_t largest = std::max({extent.width, extent.height, (flags & (cudaArrayLayered | cudaArrayCubemap))
                                                                 ? size_t(0) : extent.depth});
    unsigned max_levels = 1;
    while ((largest >> max_levels) > 0) ++max_levels;
    if (numLevels == 0 || numLevels > max_levels) return vf::api_error(cudaErrorInvalidValue);
    auto* m = new cudaMipmappedArray();
    m->extent = extent;
    m->flags = flags;
    for (unsigned l = 0; l < numLevels; ++l) {
        auto half = [l](size_t v) { return v == 0 ? size_t(0) : std::max<size_t>(v >> l, 1); };
        cudaExtent e = make_cudaExtent(half(extent.width), half(extent.height),
                                       (flags & (cudaArrayLayered | cudaArrayCubemap)) ? extent.depth
                                                                                       : half(extent.depth));
        if ((flags & cudaArrayCubemap) && e.height != e.width) e.height = e.width;
        cudaArray* a = nullptr;
        cudaError_t err = make_array(&a, desc, e, flags, true);
        if (err != cudaSuccess) {
            for (cudaArray* x : m->levels) free_array_storage(x);
            delete m;
            return vf::api_error(err);
        }
        a->level_of_mipmap = true;
        m->levels.push_back(a);
    }
    *mipmappedArray = m;
    return cudaSuccess;
}

cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t* levelArray, cudaMipmappedArray_const_t mipmappedArray,
                                       unsigned int level) {
    if (!levelArray || !mipmappedArray || mipmappedArray->magic != kMipMagic)
        return vf::api_error(cudaErrorInvalidResourceHandle);
    if (level >= mipmappedArray->levels.size()) return vf::api_error(cudaErrorInvalidValue);
    *levelArray = mipmappedArray->levels[level];
    return vf::api_sticky();
}

cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray) {
    if (!mipmappedArray) return cudaSuccess;
    if (mipmappedArray->magic != kMipMagic) return vf::api_error(cudaErrorInvalidValue);
    for (cudaArray* a : mipmappedArray->levels) free_array_storage(a);
    mipmappedArray->magic = kDead;
    delete mipmappedArray;
    return vf::api_sticky();
}

// ---- copies to and from arrays (byte offsets wOffset, row offsets hOffset, as CUDA) -----------------
cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!valid_array(dst)) return vf::api_error(cudaErrorInvalidResourceHandle);
    return vf::api_error(
        array_rows(dst, wOffset, hOffset, 0, const_cast<void*>(src), spitch, width, height, 1, 0, true, kind));
}
cudaError_t cudaMemcpy2DFromArray(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                  size_t width, size_t height, enum cudaMemcpyKind kind) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!valid_array(src)) return vf::api_error(cudaErrorInvalidResourceHandle);
    return vf::api_error(array_rows(const_cast<cudaArray*>(src), wOffset, hOffset, 0, dst, dpitch, width, height, 1,
                                    0, false, kind));
}
cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch,
                                     size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t) {
    return cudaMemcpy2DToArray(dst, wOffset, hOffset, src, spitch, width, height, kind);
}
cudaError_t cudaMemcpy2DFromArrayAsync(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                       size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind,
                                       cudaStream_t) {
    return cudaMemcpy2DFromArray(dst, dpitch, src, wOffset, hOffset, width, height, kind);
}
cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count,
                              enum cudaMemcpyKind kind) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!valid_array(dst)) return vf::api_error(cudaErrorInvalidResourceHandle);
    return vf::api_error(array_linear(dst, wOffset, hOffset, const_cast<void*>(src), count, true, kind));
}
cudaError_t cudaMemcpyFromArray(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
                                enum cudaMemcpyKind kind) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!valid_array(src)) return vf::api_error(cudaErrorInvalidResourceHandle);
    return vf::api_error(array_linear(const_cast<cudaArray*>(src), wOffset, hOffset, dst, count, false, kind));
}
cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count,
                                   enum cudaMemcpyKind kind, cudaStream_t) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!valid_array(dst)) return vf::api_error(cudaErrorInvalidResourceHandle);
    return vf::api_error(array_linear(dst, wOffset, hOffset, const_cast<void*>(src), count, true, kind));
}
cudaError_t cudaMemcpyFromArrayAsync(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
                                     enum cudaMemcpyKind kind, cudaStream_t) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!valid_array(src)) return vf::api_error(cudaErrorInvalidResourceHandle);
    return vf::api_error(array_linear(const_cast<cudaArray*>(src), wOffset, hOffset, dst, count, false, kind));
}
cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                     size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height,
                                     enum cudaMemcpyKind kind) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!valid_array(dst) || !valid_array(src)) return vf::api_error(cudaErrorInvalidResourceHandle);
    if (kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) return vf::api_error(cudaErrorInvalidValue);
    if (wOffsetSrc + width > src->img.pitch || hOffsetSrc + height > (size_t)src->img.height)
        return vf::api_error(cudaErrorInvalidValue);
    char* from = src->img.base + hOffsetSrc * src->img.pitch + wOffsetSrc;
    return vf::api_error(array_rows(dst, wOffsetDst, hOffsetDst, 0, from, src->img.pitch, width, height, 1, 0, true,
                                    cudaMemcpyDeviceToDevice));
}
cudaError_t cudaMemcpyArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                   size_t wOffsetSrc, size_t hOffsetSrc, size_t count, enum cudaMemcpyKind kind) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!valid_array(dst) || !valid_array(src)) return vf::api_error(cudaErrorInvalidResourceHandle);
    size_t from = hOffsetSrc * src->img.pitch + wOffsetSrc;
    if (from + count > src->bytes) return vf::api_error(cudaErrorInvalidValue);
    return vf::api_error(array_linear(dst, wOffsetDst, hOffsetDst, src->img.base + from, count, true,
                                      kind == cudaMemcpyDefault ? kind : cudaMemcpyDeviceToDevice));
}

// ---- texture objects ---------------------------------------------------------------------------------
cudaError_t cudaCreateTextureObject(cudaTextureObject_t* pTexObject, const struct cudaResourceDesc* pResDesc,
                                    const struct cudaTextureDesc* pTexDesc,
                                    const struct cudaResourceViewDesc* pResViewDesc) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!pTexObject || !pResDesc || !pTexDesc) return vf::api_error(cudaErrorInvalidValue);
    TextureObject t;
    t.res = *pResDesc;
    t.desc = *pTexDesc;
    if (pResViewDesc) t.view = *pResViewDesc;
    const cudaResourceDesc& r = *pResDesc;
    switch (r.resType) {
        case cudaResourceTypeArray: {
            const cudaArray* a = r.res.array.array;
            if (!valid_array(a)) return vf::api_error(cudaErrorInvalidResourceHandle);
            t.geometry = a->geometry;
            t.fmt = a->fmt;
            t.levels.push_back(image_of(a));
            t.gather = (a->flags & cudaArrayTextureGather) != 0;
            break;
        }
        case cudaResourceTypeMipmappedArray: {
            const cudaMipmappedArray* m = r.res.mipmap.mipmap;
            if (!m || m->magic != kMipMagic) return vf::api_error(cudaErrorInvalidResourceHandle);
            if (!pTexDesc->normalizedCoords) return vf::api_error(cudaErrorInvalidValue);
            t.geometry = m->levels[0]->geometry;
            t.fmt = m->levels[0]->fmt;
            for (const cudaArray* a : m->levels) t.levels.push_back(image_of(a));
            t.gather = (m->flags & cudaArrayTextureGather) != 0;
            break;
        }
        case cudaResourceTypeLinear: {
            if (cudaError_t err = check_format(&r.res.linear.desc, &t.fmt)) return vf::api_error(err);
            if (!r.res.linear.devPtr || misalignment(r.res.linear.devPtr) ||
                r.res.linear.sizeInBytes < t.fmt.bytes || r.res.linear.sizeInBytes / t.fmt.bytes > (size_t(1) << 28))
                return vf::api_error(cudaErrorInvalidValue);
            Image img;
            img.base = static_cast<char*>(r.res.linear.devPtr);
            img.width = (int)(r.res.linear.sizeInBytes / t.fmt.bytes);
            img.pitch = img.slice = r.res.linear.sizeInBytes;
            t.levels.push_back(img);
            t.geometry = kGLinear;
            break;
        }
        case cudaResourceTypePitch2D: {
            const auto& p = r.res.pitch2D;
            if (cudaError_t err = check_format(&p.desc, &t.fmt)) return vf::api_error(err);
            if (!p.devPtr || misalignment(p.devPtr) || p.width == 0 || p.height == 0 ||
                p.pitchInBytes % kTexturePitchAlignment || p.pitchInBytes < p.width * t.fmt.bytes ||
                p.width > (1u << 17) || p.height > (1u << 16))
                return vf::api_error(cudaErrorInvalidValue);
            Image img;
            img.base = static_cast<char*>(p.devPtr);
            img.width = (int)p.width;
            img.height = (int)p.height;
            img.pitch = p.pitchInBytes;
            img.slice = p.pitchInBytes * p.height;
            t.levels.push_back(img);
            t.geometry = kG2D;
            break;
        }
        default:
            return vf::api_error(cudaErrorInvalidValue);
    }
    if (pResViewDesc) {
        // Only the identity view (format none or the resource's own, all layers, all levels).
        const cudaResourceViewDesc& v = *pResViewDesc;
        const Image& l0 = t.levels[0];
        bool layered = t.geometry == kG1DLayered || t.geometry == kG2DLayered || t.geometry == kGCubemapLayered ||
                       t.geometry == kGCubemap;
        bool identity = v.firstMipmapLevel == 0 && v.lastMipmapLevel + 1 >= t.levels.size() && v.firstLayer == 0 &&
                        (!layered || v.lastLayer + 1 >= (unsigned)l0.depth) &&
                        (v.width == 0 || v.width == (size_t)l0.width);
        if (!identity || (int)v.format >= (int)cudaResViewFormatUnsignedBlockCompressed1) {
            note("resource views other than the whole resource in its own format are not supported by the CPU "
                 "runtime");
            return vf::api_error(cudaErrorNotSupported);
        }
    }
    bool linear_res = t.geometry == kGLinear;
    t.smp = make_sampler(*pTexDesc);
    if (linear_res) {
        t.smp.linear = false;  // cudaResourceTypeLinear: filtering and addressing do not apply (tex1Dfetch)
        t.smp.norm_coords = false;
    }
    if (t.levels.size() == 1) t.smp.max_level = t.smp.min_level = 0;
    t.xyz = choose_xyz(t);
    TextureObject* obj = new_texture();
    *obj = t;
    *pTexObject = reinterpret_cast<cudaTextureObject_t>(obj);
    return cudaSuccess;
}

cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject) {
    if (!texObject) return cudaSuccess;
    auto* t = const_cast<TextureObject*>(texture_at(texObject));
    if (!t) return vf::api_error(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(g_tex_mutex);
    t->magic = kDead;
    g_free_textures.push_back(t);
    return cudaSuccess;
}

cudaError_t cudaGetTextureObjectResourceDesc(struct cudaResourceDesc* pResDesc, cudaTextureObject_t texObject) {
    const TextureObject* t = texture_at(texObject);
    if (!pResDesc || !t) return vf::api_error(cudaErrorInvalidValue);
    *pResDesc = t->res;
    return vf::api_sticky();
}
cudaError_t cudaGetTextureObjectTextureDesc(struct cudaTextureDesc* pTexDesc, cudaTextureObject_t texObject) {
    const TextureObject* t = texture_at(texObject);
    if (!pTexDesc || !t) return vf::api_error(cudaErrorInvalidValue);
    *pTexDesc = t->desc;
    return vf::api_sticky();
}
cudaError_t cudaGetTextureObjectResourceViewDesc(struct cudaResourceViewDesc* pResViewDesc,
                                                 cudaTextureObject_t texObject) {
    const TextureObject* t = texture_at(texObject);
    if (!pResViewDesc || !t) return vf::api_error(cudaErrorInvalidValue);
    *pResViewDesc = t->view;
    return vf::api_sticky();
}

// ---- surface objects ---------------------------------------------------------------------------------
cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t* pSurfObject, const struct cudaResourceDesc* pResDesc) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!pSurfObject || !pResDesc || pResDesc->resType != cudaResourceTypeArray)
        return vf::api_error(cudaErrorInvalidValue);
    const cudaArray* a = pResDesc->res.array.array;
    if (!valid_array(a)) return vf::api_error(cudaErrorInvalidResourceHandle);
    if (!(a->flags & cudaArraySurfaceLoadStore)) return vf::api_error(cudaErrorInvalidValue);
    SurfaceObject* s;
    {
        std::lock_guard<std::mutex> lock(g_tex_mutex);
        if (!g_free_surfaces.empty()) {
            s = g_free_surfaces.back();
            g_free_surfaces.pop_back();
            *s = SurfaceObject();
        } else {
            s = new SurfaceObject();
        }
    }
    s->geometry = a->geometry;
    s->fmt = a->fmt;
    s->img = a->img;
    s->res = *pResDesc;
    *pSurfObject = reinterpret_cast<cudaSurfaceObject_t>(s);
    return cudaSuccess;
}

cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject) {
    if (!surfObject) return cudaSuccess;
    auto* s = const_cast<SurfaceObject*>(surface_at(surfObject));
    if (!s) return vf::api_error(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(g_tex_mutex);
    s->magic = kDead;
    g_free_surfaces.push_back(s);
    return cudaSuccess;
}

cudaError_t cudaGetSurfaceObjectResourceDesc(struct cudaResourceDesc* pResDesc, cudaSurfaceObject_t surfObject) {
    const SurfaceObject* s = surface_at(surfObject);
    if (!pResDesc || !s) return vf::api_error(cudaErrorInvalidValue);
    *pResDesc = s->res;
    return vf::api_sticky();
}

// ---- legacy texture references (removed in CUDA 12; Rodinia and older samples use them) ----------------
static cudaError_t bind(const textureReference* texref, const Binding& b) {
    auto* r = const_cast<textureReference*>(texref);
    auto* old = static_cast<Binding*>(r->vf_binding);
    r->vf_binding = new Binding(b);  // the previous binding stays readable (never freed) for racing readers
    (void)old;
    return cudaSuccess;
}

static cudaError_t bind_linear_memory(size_t* offset, const textureReference* texref, const void* devPtr,
                                      const cudaChannelFormatDesc* desc, Binding& b) {
    if (!texref || !devPtr) return cudaErrorInvalidValue;
    if (cudaError_t err = check_format(desc, &b.fmt)) return err;
    size_t off = misalignment(devPtr);
    if (off && !offset) return cudaErrorInvalidValue;
    if (offset) *offset = off;
    b.offset = off;
    b.img.base = const_cast<char*>(static_cast<const char*>(devPtr)) - off;
    return cudaSuccess;
}

cudaError_t cudaBindTexture(size_t* offset, const struct textureReference* texref, const void* devPtr,
                            const struct cudaChannelFormatDesc* desc, size_t size) {
    if (cudaError_t e = vf::api_sticky()) return e;
    Binding b;
    if (cudaError_t err = bind_linear_memory(offset, texref, devPtr, desc, b)) return vf::api_error(err);
    if (size == UINT_MAX) {  // the default: up to the end of the allocation
        const void* base = nullptr;
        size_t alloc = 0;
        size = vf::allocation_range(devPtr, &base, &alloc)
                   ? alloc - (size_t)(static_cast<const char*>(devPtr) - static_cast<const char*>(base))
                   : size_t(1) << 28;
    }
    size_t width = (size + b.offset) / b.fmt.bytes;
    if (width == 0 || width > (size_t(1) << 28)) return vf::api_error(cudaErrorInvalidValue);
    b.img.width = (int)width;
    b.img.pitch = b.img.slice = width * b.fmt.bytes;
    b.geometry = kGLinear;
    return vf::api_error(bind(texref, b));
}

cudaError_t cudaBindTexture2D(size_t* offset, const struct textureReference* texref, const void* devPtr,
                              const struct cudaChannelFormatDesc* desc, size_t width, size_t height, size_t pitch) {
    if (cudaError_t e = vf::api_sticky()) return e;
    Binding b;
    if (cudaError_t err = bind_linear_memory(offset, texref, devPtr, desc, b)) return vf::api_error(err);
    if (width == 0 || height == 0 || pitch % kTexturePitchAlignment || pitch < width * b.fmt.bytes)
        return vf::api_error(cudaErrorInvalidValue);
    b.img.width = (int)width;
    b.img.height = (int)height;
    b.img.pitch = pitch;
    b.img.slice = pitch * height;
    b.geometry = kG2D;
    return vf::api_error(bind(texref, b));
}

cudaError_t cudaBindTextureToArray(const struct textureReference* texref, cudaArray_const_t array,
                                   const struct cudaChannelFormatDesc* desc) {
    if (cudaError_t e = vf::api_sticky()) return e;
    if (!texref) return vf::api_error(cudaErrorInvalidValue);
    if (!valid_array(array)) return vf::api_error(cudaErrorInvalidResourceHandle);
    Binding b;
    if (desc) {
        Format f;
        if (cudaError_t err = check_format(desc, &f)) return vf::api_error(err);
        if (f.bytes != array->fmt.bytes) return vf::api_error(cudaErrorInvalidChannelDescriptor);
    }
    b.fmt = array->fmt;
    b.img = array->img;
    b.geometry = array->geometry;
    return vf::api_error(bind(texref, b));
}

cudaError_t cudaUnbindTexture(const struct textureReference* texref) {
    if (!texref) return vf::api_error(cudaErrorInvalidValue);
    const_cast<textureReference*>(texref)->vf_binding = nullptr;
    return vf::api_sticky();
}

cudaError_t cudaGetTextureAlignmentOffset(size_t* offset, const struct textureReference* texref) {
    if (!offset || !texref) return vf::api_error(cudaErrorInvalidValue);
    const auto* b = static_cast<const Binding*>(texref->vf_binding);
    if (!b) return vf::api_error(cudaErrorInvalidTextureBinding);
    *offset = b->offset;
    return vf::api_sticky();
}

// The "symbol" of a texture reference is the reference itself (host and device share it here).
cudaError_t cudaGetTextureReference(const struct textureReference** texref, const void* symbol) {
    if (!texref || !symbol) return vf::api_error(cudaErrorInvalidValue);
    *texref = static_cast<const textureReference*>(symbol);
    return vf::api_sticky();
}

}  // extern "C"

namespace vf {
// cudaMemcpy3D with a CUDA array on either side (host_api.cpp delegates here): positions and the
// extent are in the array's elements, a pitched pointer's x position in bytes.
cudaError_t memcpy3d_array(const struct cudaMemcpy3DParms* m) {
    cudaArray* sa = m->srcArray;
    cudaArray* da = m->dstArray;
    if ((sa && !valid_array(sa)) || (da && !valid_array(da))) return api_error(cudaErrorInvalidResourceHandle);
    size_t elem = da ? da->fmt.bytes : sa->fmt.bytes;
    if (sa && da && sa->fmt.bytes != da->fmt.bytes) return api_error(cudaErrorInvalidValue);
    size_t width = m->extent.width * elem;
    size_t height = std::max<size_t>(m->extent.height, 1), depth = std::max<size_t>(m->extent.depth, 1);
    if (m->extent.width == 0) return cudaSuccess;
    if (sa && da) {
        if (m->srcPos.x * elem + width > sa->img.pitch || m->srcPos.y + height > (size_t)sa->img.height ||
            m->srcPos.z + depth > (size_t)sa->img.depth)
            return api_error(cudaErrorInvalidValue);
        for (size_t k = 0; k < depth; ++k) {
            char* from = sa->img.base + (m->srcPos.z + k) * sa->img.slice + m->srcPos.y * sa->img.pitch +
                         m->srcPos.x * elem;
            cudaError_t err = array_rows(da, m->dstPos.x * elem, m->dstPos.y, m->dstPos.z + k, from, sa->img.pitch,
                                         width, height, 1, 0, true, cudaMemcpyDeviceToDevice);
            if (err != cudaSuccess) return api_error(err);
        }
        return cudaSuccess;
    }
    if (da) {
        const cudaPitchedPtr& s = m->srcPtr;
        if (!s.ptr) return api_error(cudaErrorInvalidValue);
        size_t spitch = s.pitch ? s.pitch : width;
        size_t rows = s.ysize ? s.ysize : height;
        char* from = static_cast<char*>(s.ptr) + (m->srcPos.z * rows + m->srcPos.y) * spitch + m->srcPos.x;
        return api_error(array_rows(da, m->dstPos.x * elem, m->dstPos.y, m->dstPos.z, from, spitch, width, height,
                                    depth, spitch * rows, true, m->kind));
    }
    const cudaPitchedPtr& d = m->dstPtr;
    if (!d.ptr) return api_error(cudaErrorInvalidValue);
    size_t dpitch = d.pitch ? d.pitch : width;
    size_t rows = d.ysize ? d.ysize : height;
    char* to = static_cast<char*>(d.ptr) + (m->dstPos.z * rows + m->dstPos.y) * dpitch + m->dstPos.x;
    return api_error(array_rows(sa, m->srcPos.x * elem, m->srcPos.y, m->srcPos.z, to, dpitch, width, height, depth,
                                dpitch * rows, false, m->kind));
}

// Texture and surface limits of an H100 (what deviceQuery prints), for cudaGetDeviceProperties.
void texture_limits(vf_cuda_device_prop_base* p) {
    p->maxTexture1D = 131072;
    p->maxTexture1DMipmap = 32768;
    p->maxTexture2D[0] = 131072;
    p->maxTexture2D[1] = 65536;
    p->maxTexture2DMipmap[0] = p->maxTexture2DMipmap[1] = 32768;
    p->maxTexture2DLinear[0] = 131072;
    p->maxTexture2DLinear[1] = 65000;
    p->maxTexture2DLinear[2] = 2097120;
    p->maxTexture2DGather[0] = p->maxTexture2DGather[1] = 32768;
    p->maxTexture3D[0] = p->maxTexture3D[1] = p->maxTexture3D[2] = 16384;
    p->maxTexture3DAlt[0] = p->maxTexture3DAlt[1] = 8192;
    p->maxTexture3DAlt[2] = 32768;
    p->maxTextureCubemap = 32768;
    p->maxTexture1DLayered[0] = 32768;
    p->maxTexture1DLayered[1] = 2048;
    p->maxTexture2DLayered[0] = p->maxTexture2DLayered[1] = 32768;
    p->maxTexture2DLayered[2] = 2048;
    p->maxTextureCubemapLayered[0] = 32768;
    p->maxTextureCubemapLayered[1] = 2046;
    p->maxSurface1D = 32768;
    p->maxSurface2D[0] = 131072;
    p->maxSurface2D[1] = 65536;
    p->maxSurface3D[0] = p->maxSurface3D[1] = p->maxSurface3D[2] = 16384;
    p->maxSurface1DLayered[0] = 32768;
    p->maxSurface1DLayered[1] = 2048;
    p->maxSurface2DLayered[0] = p->maxSurface2DLayered[1] = 32768;
    p->maxSurface2DLayered[2] = 2048;
    p->maxSurfaceCubemap = 32768;
    p->maxSurfaceCubemapLayered[0] = 32768;
    p->maxSurfaceCubemapLayered[1] = 2046;
    p->surfaceAlignment = 512;
}

// cudaDeviceGetAttribute for the texture and surface limits; false for other attributes.
bool texture_attribute(int attr, int* value) {
    vf_cuda_device_prop_base p{};
    texture_limits(&p);
    switch ((cudaDeviceAttr)attr) {
        case cudaDevAttrMaxTexture1DWidth: *value = p.maxTexture1D; return true;
        case cudaDevAttrMaxTexture2DWidth: *value = p.maxTexture2D[0]; return true;
        case cudaDevAttrMaxTexture2DHeight: *value = p.maxTexture2D[1]; return true;
        case cudaDevAttrMaxTexture3DWidth: case cudaDevAttrMaxTexture3DHeight: case cudaDevAttrMaxTexture3DDepth:
            *value = 16384; return true;
        case cudaDevAttrMaxTexture3DWidthAlt: case cudaDevAttrMaxTexture3DHeightAlt: *value = 8192; return true;
        case cudaDevAttrMaxTexture3DDepthAlt: *value = 32768; return true;
        case cudaDevAttrMaxTexture2DLayeredWidth: case cudaDevAttrMaxTexture2DLayeredHeight: *value = 32768; return true;
        case cudaDevAttrMaxTexture2DLayeredLayers: *value = 2048; return true;
        case cudaDevAttrMaxTexture1DLayeredWidth: *value = 32768; return true;
        case cudaDevAttrMaxTexture1DLayeredLayers: *value = 2048; return true;
        case cudaDevAttrMaxTextureCubemapWidth: *value = 32768; return true;
        case cudaDevAttrMaxTextureCubemapLayeredWidth: *value = 32768; return true;
        case cudaDevAttrMaxTextureCubemapLayeredLayers: *value = 2046; return true;
        case cudaDevAttrMaxTexture2DGatherWidth: case cudaDevAttrMaxTexture2DGatherHeight: *value = 32768; return true;
        case cudaDevAttrMaxTexture2DLinearWidth: *value = 131072; return true;
        case cudaDevAttrMaxTexture2DLinearHeight: *value = 65000; return true;
        case cudaDevAttrMaxTexture2DLinearPitch: *value = 2097120; return true;
        case cudaDevAttrMaxTexture2DMipmappedWidth: case cudaDevAttrMaxTexture2DMipmappedHeight:
        case cudaDevAttrMaxTexture1DMipmappedWidth: *value = 32768; return true;
        case cudaDevAttrMaxSurface1DWidth: *value = 32768; return true;
        case cudaDevAttrMaxSurface2DWidth: *value = 131072; return true;
        case cudaDevAttrMaxSurface2DHeight: *value = 65536; return true;
        case cudaDevAttrMaxSurface3DWidth: case cudaDevAttrMaxSurface3DHeight: case cudaDevAttrMaxSurface3DDepth:
            *value = 16384; return true;
        case cudaDevAttrMaxSurface1DLayeredWidth: *value = 32768; return true;
        case cudaDevAttrMaxSurface1DLayeredLayers: *value = 2048; return true;
        case cudaDevAttrMaxSurface2DLayeredWidth: case cudaDevAttrMaxSurface2DLayeredHeight: *value = 32768; return true;
        case cudaDevAttrMaxSurface2DLayeredLayers: *value = 2048; return true;
        case cudaDevAttrMaxSurfaceCubemapWidth: case cudaDevAttrMaxSurfaceCubemapLayeredWidth: *value = 32768; return true;
        case cudaDevAttrMaxSurfaceCubemapLayeredLayers: *value = 2046; return true;
        case cudaDevAttrSurfaceAlignment: *value = 512; return true;
        default: return false;
    }
}
}  // namespace vf

extern "C" cudaError_t cudaDeviceGetTexture1DLinearMaxWidth(size_t* maxWidthInElements, const struct cudaChannelFormatDesc*,
                                                 int device) {
    if (!maxWidthInElements) return vf::api_error(cudaErrorInvalidValue);
    if (device != 0) return vf::api_error(cudaErrorInvalidDevice);
    *maxWidthInElements = size_t(1) << 28;
    return vf::api_sticky();
}

#endif  // VF_HAVE_CUDA_HEADERS
