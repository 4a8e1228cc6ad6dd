// veriforge CPU runtime: <cuda_pipeline.h> - nvcuda::experimental::pipeline (CUDA 11's cp.async
// pipeline). Copies are done when issued (see cuda/vf_sync.h), so commits and waits are no-ops.
#pragma once
#include "../vf_macro_guard_begin.h"
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "cuda_awbarrier.h"
#include "cuda_pipeline_primitives.h"

namespace nvcuda {
namespace experimental {

class pipeline {
  public:
    pipeline() = default;
    std::size_t commit() { return current_batch++; }
    void commit_and_wait() { ++current_batch; }
    void wait(std::size_t) {}
    template <unsigned Prior> void wait_prior() {}
    void arrive_on(awbarrier&) {}

  private:
    std::size_t current_batch = 0;
};

template <class T> inline void memcpy_async(T& dst, const T& src, pipeline&) {
    if constexpr (std::is_trivially_copyable_v<T>) std::memcpy(static_cast<void*>(&dst), &src, sizeof(T));
    else dst = src;
}
// A segment of 4, 8 or 16 bytes; a shorter source is zero-filled to the destination's size.
template <class T, std::size_t DstN, std::size_t SrcN>
inline void memcpy_async(T (*dst)[DstN], const T (*src)[SrcN], pipeline&) {
    static_assert(sizeof(*src) <= sizeof(*dst), "Source size must be less than or equal to destination size.");
    std::memcpy(*dst, *src, sizeof(*src));
    std::memset(reinterpret_cast<char*>(*dst) + sizeof(*src), 0, sizeof(*dst) - sizeof(*src));
}
template <std::size_t N, class T> inline auto segment(T* ptr) -> T (*)[N] { return (T(*)[N])ptr; }

}  // namespace experimental
}  // namespace nvcuda
#include "../vf_macro_guard_end.h"
