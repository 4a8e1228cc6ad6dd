// veriforge CPU runtime shim: CUDA's own cuda_bf16.h works in host code and is used as is, plus
// host versions of the intrinsics it only defines for device code (vf_half_extras.h).
#pragma once
#if defined(VF_HAVE_CUDA_HEADERS) && __has_include_next(<cuda_bf16.h>)
#include "../vf_host_pass_begin.h"
#include_next <cuda_bf16.h>
#include "../vf_host_pass_end.h"
#include "../vf_half_extras.h"
namespace vf {
template <> struct half_traits<__nv_bfloat16> {
    static constexpr bool scalar = true, pair = false;
    static float to(__nv_bfloat16 h) { return __bfloat162float(h); }
    static __nv_bfloat16 from(float f) { return __float2bfloat16_rn(f); }
};
template <> struct half_traits<__nv_bfloat162> {
    static constexpr bool scalar = false, pair = true;
    static float2 to(__nv_bfloat162 h) { return __bfloat1622float2(h); }
    static __nv_bfloat162 from(float2 f) { return __float22bfloat162_rn(f); }
};
}  // namespace vf
#else
#error "veriforge CPU runtime: cuda_bf16.h needs CUDA's headers (set CUDA_HOME, install the CUDA toolkit or 'pip install nvidia-cuda-runtime'); __nv_bfloat16 is unavailable without them"
#endif
