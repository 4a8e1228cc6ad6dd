// veriforge CPU runtime shim: CUDA's own cuda_fp8.h works in host code, so it is used as is. Without a
// CUDA installation there is no portable definition of these types: fail with a clear message.
#pragma once
#if defined(VF_HAVE_CUDA_HEADERS) && __has_include_next(<cuda_fp8.h>)
#include "../vf_host_pass_begin.h"
#include_next <cuda_fp8.h>
#include "../vf_host_pass_end.h"
#else
#error "veriforge CPU runtime: cuda_fp8.h needs CUDA's headers (set CUDA_HOME, install the CUDA toolkit or 'pip install nvidia-cuda-runtime'); __half/__nv_bfloat16 are unavailable without them"
#endif
