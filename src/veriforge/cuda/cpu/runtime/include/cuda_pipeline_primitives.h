// veriforge CPU runtime: <cuda_pipeline_primitives.h> - the __pipeline_* primitives behind
// cp.async: the copy is done at once (see cuda/vf_sync.h), so committing and waiting are no-ops.
#pragma once
#include <cstddef>
#include <cstring>
#include "cuda_awbarrier_primitives.h"

// Copies size_and_align - zfill bytes and zero-fills the remaining zfill (size_and_align: 4, 8, 16).
inline void __pipeline_memcpy_async(void* __restrict dst_shared, const void* __restrict src_global,
                                    std::size_t size_and_align, std::size_t zfill = 0) {
    std::size_t copy = zfill < size_and_align ? size_and_align - zfill : 0;
    std::memcpy(dst_shared, src_global, copy);
    std::memset(static_cast<char*>(dst_shared) + copy, 0, size_and_align - copy);
}
inline void __pipeline_commit() {}
inline void __pipeline_wait_prior(std::size_t) {}
inline void __pipeline_arrive_on(__mbarrier_t*) {}
