// veriforge CPU runtime: <cooperative_groups/memcpy_async.h>: cg::memcpy_async, cg::wait,
// cg::wait_prior. The copy is shared out among the group's threads and done at once; the group's
// wait is its barrier (all of the group's copies have been issued - hence done - once every thread
// reached it), as CUDA requires every thread of the group to call both.
#pragma once
#include "../../vf_macro_guard_begin.h"
#include <cooperative_groups.h>
#include <cuda/vf_sync.h>

namespace cooperative_groups {

template <class Group>
inline void memcpy_async(const Group& group, void* dst, const void* src, std::size_t bytes) {
    ::cuda::vf_detail::group_copy(dst, src, bytes, group.thread_rank(), group.size());
}
template <class Group, std::size_t Align>
inline void memcpy_async(const Group& group, void* dst, const void* src, ::cuda::aligned_size_t<Align> bytes) {
    ::cuda::vf_detail::group_copy(dst, src, bytes.value, group.thread_rank(), group.size());
}
// Elements: min(dst_count, src_count) of them are copied.
template <class Group, class T>
inline void memcpy_async(const Group& group, T* dst, std::size_t dst_count, const T* src, std::size_t src_count) {
    std::size_t n = dst_count < src_count ? dst_count : src_count;
    ::cuda::vf_detail::group_copy(dst, src, n * sizeof(T), group.thread_rank(), group.size());
}

template <class Group> inline void wait(const Group& group, int line = __builtin_LINE()) { group.sync(line); }
template <unsigned NumStages, class Group> inline void wait_prior(const Group& group, int line = __builtin_LINE()) {
    group.sync(line);
}

}  // namespace cooperative_groups
#include "../../vf_macro_guard_end.h"
