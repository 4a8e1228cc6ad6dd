// veriforge CPU runtime: textures and surfaces, device side (included by vf_cuda.h).
//
// Texture and surface objects (cudaTextureObject_t / cudaSurfaceObject_t) are handles to runtime
// objects (textures.cpp) that describe the memory (a CUDA array, linear or pitched memory) and,
// for textures, the sampler (address modes, filtering, read mode, normalized coordinates). The
// device functions below - tex1Dfetch, tex1D, tex2D, tex3D, the layered and cubemap forms,
// tex2Dgather, tex*Lod, surf*read/write - call one out-of-line sampler in the runtime, which
// returns the four 32-bit "registers" a GPU's texture unit returns; the template type T then
// takes them apart as the PTX `tex` instruction's destination type does (float components as
// float bits, integer components truncated). Keeping the sampler out of line keeps a kernel's
// compile time independent of how many fetches it has.
//
// Legacy texture references (`texture<T, dim, readMode> t;` at file scope, cudaBindTexture*,
// removed in CUDA 12) are accepted too: the reference is a host object the kernel reads directly.
#pragma once

#if defined(VF_HAVE_CUDA_HEADERS)

#include <bit>
#include <climits>
#include <cstdint>
#include <type_traits>

namespace vf {
namespace tex {

// What a fetch returns: the texture unit's four 32-bit result registers.
struct Regs {
    uint32_t r[4];
};

// The kind of fetch: which function, so the sampler knows how to read the coordinates.
enum Op : int {
    kFetch1D = 0,   // tex1Dfetch: integer index, no filtering
    k1D, k2D, k3D, k1DLayered, k2DLayered, kCubemap, kCubemapLayered,
    kGather2D,      // tex2Dgather: component `comp` of the four bilinear texels
};

struct Coords {
    float x = 0, y = 0, z = 0;
    int ix = 0;       // tex1Dfetch's index
    int layer = 0;    // layered fetches
    int comp = 0;     // tex2Dgather's component
    float lod = 0;    // tex*Lod's level
    bool has_lod = false;
};

// A fetch through a texture object; faults (KernelFault naming `line`) on an invalid object.
Regs texture_fetch(unsigned long long object, int op, const Coords& c, int line);
// The same for tex1D / tex2D / tex3D / texCubemap, with the coordinates in registers.
Regs texture_fetch_xyz(unsigned long long object, int op, float x, float y, float z, int line);
// A fetch through a legacy texture reference; `normalized_float`: its readMode template argument.
Regs reference_fetch(const void* ref, bool normalized_float, int op, const Coords& c, int line);
// A surface load (write = false) or store of `size` bytes at byte offset x, row y, slice z
// (depth, layer or cube face) with a cudaSurfaceBoundaryMode; faults on trap-mode overruns.
void surface_access(unsigned long long object, int op, bool write, void* data, unsigned size, int x, int y, int z,
                    int mode, int line);

// ---- result registers -> T, as the PTX destination type does --------------------------------
template <class T> constexpr int components() {
    if constexpr (std::is_arithmetic_v<T>) return 0;
    else if constexpr (requires(T v) { v.w; }) return 4;
    else if constexpr (requires(T v) { v.z; }) return 3;
    else if constexpr (requires(T v) { v.y; }) return 2;
    else if constexpr (requires(T v) { v.x; }) return 1;
    else return -1;
}
template <class S> inline S from_reg(uint32_t r) {
    static_assert(std::is_arithmetic_v<S> && sizeof(S) <= 4 && !std::is_same_v<S, bool>,
                  "texture fetches return 8/16/32-bit integer or float (vector) types");
    if constexpr (std::is_same_v<S, float>)
        return std::bit_cast<float>(r);
    else
        return static_cast<S>(r);
}
template <class T> inline T regs_to(const Regs& g) {
    constexpr int n = components<T>();
    static_assert(n == 0 || n == 1 || n == 2 || n == 4,
                  "texture fetch type: a scalar or a 1-, 2- or 4-component vector type (CUDA has no 3-channel textures)");
    if constexpr (n == 0) {
        return from_reg<T>(g.r[0]);
    } else {
        T v{};
        using S = std::remove_cv_t<std::remove_reference_t<decltype(v.x)>>;
        v.x = from_reg<S>(g.r[0]);
        if constexpr (n >= 2) v.y = from_reg<S>(g.r[1]);
        if constexpr (n == 4) {
            v.z = from_reg<S>(g.r[2]);
            v.w = from_reg<S>(g.r[3]);
        }
        return v;
    }
}
inline Coords at(float x, float y = 0, float z = 0) {
    Coords c;
    c.x = x;
    c.y = y;
    c.z = z;
    return c;
}
// The float type with T's number of components: what a cudaReadModeNormalizedFloat reference returns.
template <class T> struct float_of { using type = float; };
#define VF_TEX_FLOAT_OF(T)                                  \
    template <> struct float_of<T##1> { using type = float1; }; \
    template <> struct float_of<T##2> { using type = float2; }; \
    template <> struct float_of<T##4> { using type = float4; };
VF_TEX_FLOAT_OF(char)
VF_TEX_FLOAT_OF(uchar)
VF_TEX_FLOAT_OF(short)
VF_TEX_FLOAT_OF(ushort)
VF_TEX_FLOAT_OF(int)
VF_TEX_FLOAT_OF(uint)
VF_TEX_FLOAT_OF(float)
#undef VF_TEX_FLOAT_OF
// The 4-vector of T's component type: what tex2Dgather on a legacy reference returns.
template <class T> struct vec4_of;
#define VF_TEX_VEC4_OF(S, V)                                                  \
    template <> struct vec4_of<S> { using type = V##4; };                       \
    template <> struct vec4_of<V##1> { using type = V##4; };                    \
    template <> struct vec4_of<V##2> { using type = V##4; };                    \
    template <> struct vec4_of<V##4> { using type = V##4; };
VF_TEX_VEC4_OF(signed char, char)
VF_TEX_VEC4_OF(unsigned char, uchar)
VF_TEX_VEC4_OF(short, short)
VF_TEX_VEC4_OF(unsigned short, ushort)
VF_TEX_VEC4_OF(int, int)
VF_TEX_VEC4_OF(unsigned int, uint)
VF_TEX_VEC4_OF(float, float)
#undef VF_TEX_VEC4_OF
template <> struct vec4_of<char> { using type = char4; };

}  // namespace tex
}  // namespace vf

// ---- texture objects -----------------------------------------------------------------------
// Each function has CUDA's two forms: `T f<T>(object, ...)` and `void f(T* out, object, ...)`.
#define VF_TEX_FN(NAME, OP, PARAMS, FILL)                                                                  \
    template <class T>                                                                                     \
    inline T NAME(cudaTextureObject_t obj, PARAMS, int vf_line = __builtin_LINE()) {                       \
        ::vf::tex::Coords c;                                                                                \
        FILL;                                                                                              \
        return ::vf::tex::regs_to<T>(::vf::tex::texture_fetch(obj, ::vf::tex::OP, c, vf_line));            \
    }                                                                                                      \
    template <class T>                                                                                     \
    inline void NAME(T* ptr, cudaTextureObject_t obj, PARAMS, int vf_line = __builtin_LINE()) {            \
        ::vf::tex::Coords c;                                                                                \
        FILL;                                                                                              \
        *ptr = ::vf::tex::regs_to<T>(::vf::tex::texture_fetch(obj, ::vf::tex::OP, c, vf_line));            \
    }
#define VF_COMMA ,
#define VF_TEX_XYZ(NAME, OP, PARAMS, X, Y, Z)                                                               \
    template <class T>                                                                                     \
    inline T NAME(cudaTextureObject_t obj, PARAMS, int vf_line = __builtin_LINE()) {                       \
        return ::vf::tex::regs_to<T>(::vf::tex::texture_fetch_xyz(obj, ::vf::tex::OP, X, Y, Z, vf_line));  \
    }                                                                                                      \
    template <class T>                                                                                     \
    inline void NAME(T* ptr, cudaTextureObject_t obj, PARAMS, int vf_line = __builtin_LINE()) {            \
        *ptr = ::vf::tex::regs_to<T>(::vf::tex::texture_fetch_xyz(obj, ::vf::tex::OP, X, Y, Z, vf_line));  \
    }
VF_TEX_FN(tex1Dfetch, kFetch1D, int x, c.ix = x)
VF_TEX_XYZ(tex1D, k1D, float x, x, 0.0f, 0.0f)
VF_TEX_XYZ(tex2D, k2D, float x VF_COMMA float y, x, y, 0.0f)
VF_TEX_XYZ(tex3D, k3D, float x VF_COMMA float y VF_COMMA float z, x, y, z)
VF_TEX_XYZ(texCubemap, kCubemap, float x VF_COMMA float y VF_COMMA float z, x, y, z)
#undef VF_TEX_XYZ
VF_TEX_FN(tex1DLayered, k1DLayered, float x VF_COMMA int layer, (c.x = x, c.layer = layer))
VF_TEX_FN(tex2DLayered, k2DLayered, float x VF_COMMA float y VF_COMMA int layer, (c.x = x, c.y = y, c.layer = layer))
VF_TEX_FN(texCubemapLayered, kCubemapLayered, float x VF_COMMA float y VF_COMMA float z VF_COMMA int layer,
          (c.x = x, c.y = y, c.z = z, c.layer = layer))
VF_TEX_FN(tex1DLod, k1D, float x VF_COMMA float level, (c.x = x, c.lod = level, c.has_lod = true))
VF_TEX_FN(tex2DLod, k2D, float x VF_COMMA float y VF_COMMA float level,
          (c.x = x, c.y = y, c.lod = level, c.has_lod = true))
VF_TEX_FN(tex3DLod, k3D, float x VF_COMMA float y VF_COMMA float z VF_COMMA float level,
          (c.x = x, c.y = y, c.z = z, c.lod = level, c.has_lod = true))
VF_TEX_FN(tex1DLayeredLod, k1DLayered, float x VF_COMMA int layer VF_COMMA float level,
          (c.x = x, c.layer = layer, c.lod = level, c.has_lod = true))
VF_TEX_FN(tex2DLayeredLod, k2DLayered, float x VF_COMMA float y VF_COMMA int layer VF_COMMA float level,
          (c.x = x, c.y = y, c.layer = layer, c.lod = level, c.has_lod = true))
VF_TEX_FN(texCubemapLod, kCubemap, float x VF_COMMA float y VF_COMMA float z VF_COMMA float level,
          (c.x = x, c.y = y, c.z = z, c.lod = level, c.has_lod = true))
VF_TEX_FN(texCubemapLayeredLod, kCubemapLayered,
          float x VF_COMMA float y VF_COMMA float z VF_COMMA int layer VF_COMMA float level,
          (c.x = x, c.y = y, c.z = z, c.layer = layer, c.lod = level, c.has_lod = true))
#undef VF_TEX_FN

// tex2Dgather: component `comp` of the four texels a bilinear fetch would use.
template <class T>
inline T tex2Dgather(cudaTextureObject_t obj, float x, float y, int comp = 0, int vf_line = __builtin_LINE()) {
    ::vf::tex::Coords c = ::vf::tex::at(x, y);
    c.comp = comp;
    return ::vf::tex::regs_to<T>(::vf::tex::texture_fetch(obj, ::vf::tex::kGather2D, c, vf_line));
}
template <class T>
inline void tex2Dgather(T* ptr, cudaTextureObject_t obj, float x, float y, int comp = 0,
                        int vf_line = __builtin_LINE()) {
    *ptr = tex2Dgather<T>(obj, x, y, comp, vf_line);
}
// The sparse-residency forms: every texel is resident here.
template <class T> inline T tex2D(cudaTextureObject_t obj, float x, float y, bool* isResident,
                                  int vf_line = __builtin_LINE()) {
    *isResident = true;
    return tex2D<T>(obj, x, y, vf_line);
}
template <class T> inline T tex3D(cudaTextureObject_t obj, float x, float y, float z, bool* isResident,
                                  int vf_line = __builtin_LINE()) {
    *isResident = true;
    return tex3D<T>(obj, x, y, z, vf_line);
}
template <class T> inline T tex2DLayered(cudaTextureObject_t obj, float x, float y, int layer, bool* isResident,
                                         int vf_line = __builtin_LINE()) {
    *isResident = true;
    return tex2DLayered<T>(obj, x, y, layer, vf_line);
}
template <class T> inline T tex2DLod(cudaTextureObject_t obj, float x, float y, float level, bool* isResident,
                                     int vf_line = __builtin_LINE()) {
    *isResident = true;
    return tex2DLod<T>(obj, x, y, level, vf_line);
}

// ---- surface objects ----------------------------------------------------------------------
// x is a byte offset, as in CUDA; the boundary mode decides what an access outside the surface
// does: cudaBoundaryModeTrap faults the kernel, Clamp moves it to the nearest element, Zero
// reads zeros and drops the store.
#define VF_SURF_FN(NAME, OP, PARAMS, Y, Z)                                                                        \
    template <class T>                                                                                            \
    inline void NAME##read(T* ptr, cudaSurfaceObject_t obj, PARAMS,                                               \
                           cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap, int vf_line = __builtin_LINE()) { \
        ::vf::tex::surface_access(obj, ::vf::tex::OP, false, ptr, sizeof(T), x, Y, Z, mode, vf_line);             \
    }                                                                                                             \
    template <class T>                                                                                            \
    inline T NAME##read(cudaSurfaceObject_t obj, PARAMS, cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap,     \
                        int vf_line = __builtin_LINE()) {                                                         \
        T v{};                                                                                                    \
        ::vf::tex::surface_access(obj, ::vf::tex::OP, false, &v, sizeof(T), x, Y, Z, mode, vf_line);             \
        return v;                                                                                                 \
    }                                                                                                             \
    template <class T>                                                                                            \
    inline void NAME##write(T val, cudaSurfaceObject_t obj, PARAMS,                                               \
                            cudaSurfaceBoundaryMode mode = cudaBoundaryModeTrap, int vf_line = __builtin_LINE()) { \
        ::vf::tex::surface_access(obj, ::vf::tex::OP, true, &val, sizeof(T), x, Y, Z, mode, vf_line);            \
    }
VF_SURF_FN(surf1D, k1D, int x, 0, 0)
VF_SURF_FN(surf2D, k2D, int x VF_COMMA int y, y, 0)
VF_SURF_FN(surf3D, k3D, int x VF_COMMA int y VF_COMMA int z, y, z)
VF_SURF_FN(surf1DLayered, k1DLayered, int x VF_COMMA int layer, 0, layer)
VF_SURF_FN(surf2DLayered, k2DLayered, int x VF_COMMA int y VF_COMMA int layer, y, layer)
VF_SURF_FN(surfCubemap, kCubemap, int x VF_COMMA int y VF_COMMA int face, y, face)
VF_SURF_FN(surfCubemapLayered, kCubemapLayered, int x VF_COMMA int y VF_COMMA int layerFace, y, layerFace)
#undef VF_SURF_FN
#undef VF_COMMA

// ---- legacy texture references (CUDA <= 11) -------------------------------------------------
// The layout of CUDA 11's textureReference; the reserved words hold what the reference is bound to.
struct textureReference {
    int normalized;
    enum cudaTextureFilterMode filterMode;
    enum cudaTextureAddressMode addressMode[3];
    struct cudaChannelFormatDesc channelDesc;
    int sRGB;
    unsigned int maxAnisotropy;
    enum cudaTextureFilterMode mipmapFilterMode;
    float mipmapLevelBias;
    float minMipmapLevelClamp;
    float maxMipmapLevelClamp;
    int disableTrilinearOptimization;
    void* vf_binding;  // runtime-owned (textures.cpp); null while unbound
    int __cudaReserved[12];
};

template <class T, int texType = cudaTextureType1D, enum cudaTextureReadMode mode = cudaReadModeElementType>
struct texture : public textureReference {
    texture(int norm = 0, enum cudaTextureFilterMode fMode = cudaFilterModePoint,
            enum cudaTextureAddressMode aMode = cudaAddressModeClamp)
        : texture(norm, fMode, aMode, cudaCreateChannelDesc<T>()) {}
    texture(int norm, enum cudaTextureFilterMode fMode, enum cudaTextureAddressMode aMode,
            struct cudaChannelFormatDesc desc) {
        normalized = norm;
        filterMode = fMode;
        addressMode[0] = addressMode[1] = addressMode[2] = aMode;
        channelDesc = desc;
        sRGB = 0;
        maxAnisotropy = 0;
        mipmapFilterMode = cudaFilterModePoint;
        mipmapLevelBias = minMipmapLevelClamp = maxMipmapLevelClamp = 0;
        disableTrilinearOptimization = 0;
        vf_binding = nullptr;
        for (int& r : __cudaReserved) r = 0;
    }
};

extern "C" {
cudaError_t cudaBindTexture(size_t* offset, const struct textureReference* texref, const void* devPtr,
                            const struct cudaChannelFormatDesc* desc, size_t size = UINT_MAX);
cudaError_t cudaBindTexture2D(size_t* offset, const struct textureReference* texref, const void* devPtr,
                              const struct cudaChannelFormatDesc* desc, size_t width, size_t height, size_t pitch);
cudaError_t cudaBindTextureToArray(const struct textureReference* texref, cudaArray_const_t array,
                                   const struct cudaChannelFormatDesc* desc);
cudaError_t cudaUnbindTexture(const struct textureReference* texref);
cudaError_t cudaGetTextureAlignmentOffset(size_t* offset, const struct textureReference* texref);
cudaError_t cudaGetTextureReference(const struct textureReference** texref, const void* symbol);
}
template <class T, int dim, enum cudaTextureReadMode readMode>
inline cudaError_t cudaBindTexture(size_t* offset, const struct texture<T, dim, readMode>& tex, const void* devPtr,
                                   const struct cudaChannelFormatDesc& desc, size_t size = UINT_MAX) {
    return cudaBindTexture(offset, &tex, devPtr, &desc, size);
}
template <class T, int dim, enum cudaTextureReadMode readMode>
inline cudaError_t cudaBindTexture(size_t* offset, const struct texture<T, dim, readMode>& tex, const void* devPtr,
                                   size_t size = UINT_MAX) {
    return cudaBindTexture(offset, &tex, devPtr, &tex.channelDesc, size);
}
template <class T, int dim, enum cudaTextureReadMode readMode>
inline cudaError_t cudaBindTexture2D(size_t* offset, const struct texture<T, dim, readMode>& tex, const void* devPtr,
                                     const struct cudaChannelFormatDesc& desc, size_t width, size_t height,
                                     size_t pitch) {
    return cudaBindTexture2D(offset, &tex, devPtr, &desc, width, height, pitch);
}
template <class T, int dim, enum cudaTextureReadMode readMode>
inline cudaError_t cudaBindTexture2D(size_t* offset, const struct texture<T, dim, readMode>& tex, const void* devPtr,
                                     size_t width, size_t height, size_t pitch) {
    return cudaBindTexture2D(offset, &tex, devPtr, &tex.channelDesc, width, height, pitch);
}
template <class T, int dim, enum cudaTextureReadMode readMode>
inline cudaError_t cudaBindTextureToArray(const struct texture<T, dim, readMode>& tex, cudaArray_const_t array,
                                          const struct cudaChannelFormatDesc& desc) {
    return cudaBindTextureToArray(&tex, array, &desc);
}
template <class T, int dim, enum cudaTextureReadMode readMode>
inline cudaError_t cudaBindTextureToArray(const struct texture<T, dim, readMode>& tex, cudaArray_const_t array) {
    struct cudaChannelFormatDesc desc;
    cudaError_t err = cudaGetChannelDesc(&desc, array);
    return err == cudaSuccess ? cudaBindTextureToArray(&tex, array, &desc) : err;
}
template <class T, int dim, enum cudaTextureReadMode readMode>
inline cudaError_t cudaUnbindTexture(const struct texture<T, dim, readMode>& tex) {
    return cudaUnbindTexture(&tex);
}
template <class T, int dim, enum cudaTextureReadMode readMode>
inline cudaError_t cudaGetTextureAlignmentOffset(size_t* offset, const struct texture<T, dim, readMode>& tex) {
    return cudaGetTextureAlignmentOffset(offset, &tex);
}

namespace vf {
namespace tex {
template <class T, enum cudaTextureReadMode mode>
using ref_result = std::conditional_t<mode == cudaReadModeNormalizedFloat, typename float_of<T>::type, T>;
template <class T, int dim, enum cudaTextureReadMode mode>
inline ref_result<T, mode> ref_fetch(const ::texture<T, dim, mode>& t, int op, const Coords& c, int line) {
    return regs_to<ref_result<T, mode>>(reference_fetch(&t, mode == cudaReadModeNormalizedFloat, op, c, line));
}
}  // namespace tex
}  // namespace vf

template <class T, enum cudaTextureReadMode mode>
inline auto tex1Dfetch(const texture<T, cudaTextureType1D, mode>& t, int x, int vf_line = __builtin_LINE()) {
    ::vf::tex::Coords c;
    c.ix = x;
    return ::vf::tex::ref_fetch(t, ::vf::tex::kFetch1D, c, vf_line);
}
template <class T, enum cudaTextureReadMode mode>
inline auto tex1D(const texture<T, cudaTextureType1D, mode>& t, float x, int vf_line = __builtin_LINE()) {
    return ::vf::tex::ref_fetch(t, ::vf::tex::k1D, ::vf::tex::at(x), vf_line);
}
template <class T, enum cudaTextureReadMode mode>
inline auto tex2D(const texture<T, cudaTextureType2D, mode>& t, float x, float y, int vf_line = __builtin_LINE()) {
    return ::vf::tex::ref_fetch(t, ::vf::tex::k2D, ::vf::tex::at(x, y), vf_line);
}
template <class T, enum cudaTextureReadMode mode>
inline auto tex3D(const texture<T, cudaTextureType3D, mode>& t, float x, float y, float z,
                  int vf_line = __builtin_LINE()) {
    return ::vf::tex::ref_fetch(t, ::vf::tex::k3D, ::vf::tex::at(x, y, z), vf_line);
}
template <class T, enum cudaTextureReadMode mode>
inline auto tex1DLayered(const texture<T, cudaTextureType1DLayered, mode>& t, float x, int layer,
                         int vf_line = __builtin_LINE()) {
    ::vf::tex::Coords c = ::vf::tex::at(x);
    c.layer = layer;
    return ::vf::tex::ref_fetch(t, ::vf::tex::k1DLayered, c, vf_line);
}
template <class T, enum cudaTextureReadMode mode>
inline auto tex2DLayered(const texture<T, cudaTextureType2DLayered, mode>& t, float x, float y, int layer,
                         int vf_line = __builtin_LINE()) {
    ::vf::tex::Coords c = ::vf::tex::at(x, y);
    c.layer = layer;
    return ::vf::tex::ref_fetch(t, ::vf::tex::k2DLayered, c, vf_line);
}
template <class T, enum cudaTextureReadMode mode>
inline auto texCubemap(const texture<T, cudaTextureTypeCubemap, mode>& t, float x, float y, float z,
                       int vf_line = __builtin_LINE()) {
    return ::vf::tex::ref_fetch(t, ::vf::tex::kCubemap, ::vf::tex::at(x, y, z), vf_line);
}
template <class T, enum cudaTextureReadMode mode>
inline auto tex2Dgather(const texture<T, cudaTextureType2D, mode>& t, float x, float y, int comp = 0,
                        int vf_line = __builtin_LINE()) {
    ::vf::tex::Coords c = ::vf::tex::at(x, y);
    c.comp = comp;
    using R = std::conditional_t<mode == cudaReadModeNormalizedFloat, float4, typename ::vf::tex::vec4_of<T>::type>;
    return ::vf::tex::regs_to<R>(
        ::vf::tex::reference_fetch(&t, mode == cudaReadModeNormalizedFloat, ::vf::tex::kGather2D, c, vf_line));
}

#endif  // VF_HAVE_CUDA_HEADERS
