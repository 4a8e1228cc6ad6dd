// veriforge CPU runtime shim: CUDA's own cuda_fp16.h works in host code and is used as is, plus
// host versions of the intrinsics it only defines for device code (vf_half_extras.h). Without
// a CUDA installation there is no faithful definition of __half: fail with a clear message.
#pragma once
#include "../vf_macro_guard_begin.h"
#if defined(VF_HAVE_CUDA_HEADERS) && __has_include_next(<cuda_fp16.h>)
#include "../vf_host_pass_begin.h"
#include_next <cuda_fp16.h>
#include "../vf_host_pass_end.h"
#include "../vf_half_extras.h"
namespace vf {
template <> struct half_traits<__half> {
    static constexpr bool scalar = true, pair = false;
    static float to(__half h) { return __half2float(h); }
    static __half from(float f) { return __float2half_rn(f); }
};
template <> struct half_traits<__half2> {
    static constexpr bool scalar = false, pair = true;
    static float2 to(__half2 h) { return __half22float2(h); }
    static __half2 from(float2 f) { return __float22half2_rn(f); }
};
}  // namespace vf
template <class H> requires std::is_same_v<H, __half> inline int __half2int_rn(H h) { return (int)nearbyintf(__half2float(h)); }
template <class H> requires std::is_same_v<H, __half> inline int __half2int_rz(H h) { return (int)__half2float(h); }
template <class H> requires std::is_same_v<H, __half> inline int __half2int_rd(H h) { return (int)floorf(__half2float(h)); }
template <class H> requires std::is_same_v<H, __half> inline int __half2int_ru(H h) { return (int)ceilf(__half2float(h)); }
#else
#error "veriforge CPU runtime: cuda_fp16.h needs CUDA's headers (set CUDA_HOME, install the CUDA toolkit or 'pip install nvidia-cuda-runtime'); __half is unavailable without them"
#endif
#include "../vf_macro_guard_end.h"
