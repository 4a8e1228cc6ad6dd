// veriforge CPU runtime shim: CUDA's own host header when it was found (include_next), else the
// runtime's minimal fallback declarations.
#pragma once
#if defined(VF_HAVE_CUDA_HEADERS) && __has_include_next(<builtin_types.h>)
#include "../vf_host_pass_begin.h"
#include_next <builtin_types.h>
#include "../vf_host_pass_end.h"
#else
#include "../vf_fallback_types.h"
#endif
