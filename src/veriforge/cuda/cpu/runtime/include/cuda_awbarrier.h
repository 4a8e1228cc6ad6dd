// veriforge CPU runtime: <cuda_awbarrier.h> - nvcuda::experimental::awbarrier (CUDA 11's
// arrive/wait barrier, predecessor of cuda::barrier) over the __mbarrier primitives. wait() parks the
// thread until the phase completes (a barrier never completed is a deadlock fault).
#pragma once
#include <cstdint>

#include "cuda_awbarrier_primitives.h"

namespace nvcuda {
namespace experimental {

class awbarrier {
  public:
    class arrival_token {
      public:
        arrival_token() = default;
        std::uint32_t pending_count() const { return __mbarrier_token_pending_count(token); }

      private:
        explicit arrival_token(std::uint64_t t) : token(t) {}
        std::uint64_t token = 0;
        friend awbarrier;
    };
    awbarrier() = default;
    awbarrier(const awbarrier&) = delete;
    awbarrier& operator=(const awbarrier&) = delete;

    arrival_token arrive() { return arrival_token(__mbarrier_arrive(&barrier)); }
    arrival_token arrive_and_drop() { return arrival_token(__mbarrier_arrive_and_drop(&barrier)); }
    void wait(arrival_token token, int line = __builtin_LINE()) {
        while (::vf::mbarrier::phase(barrier) == ::vf::mbarrier::phase(token.token))
            ::vf::wait_on(&barrier, line, "awbarrier::wait");
    }
    void arrive_and_wait(int line = __builtin_LINE()) { wait(arrive(), line); }
    bool try_wait(arrival_token token, std::uint32_t) { return __mbarrier_test_wait(&barrier, token.token); }
    bool try_wait_parity(bool parity, std::uint32_t) { return __mbarrier_test_wait_parity(&barrier, parity); }
    bool timed_wait(arrival_token token, std::uint32_t) { return __mbarrier_test_wait(&barrier, token.token); }
    bool timed_wait_parity(bool parity, std::uint32_t) { return __mbarrier_test_wait_parity(&barrier, parity); }
    static constexpr std::uint32_t max() { return (1u << 20) - 1; }

  private:
    std::uint64_t barrier = 0;
    friend void init(awbarrier* b, std::uint32_t expected_count);
    friend void inval(awbarrier* b);
};

inline void init(awbarrier* b, std::uint32_t expected_count) { __mbarrier_init(&b->barrier, expected_count); }
inline void inval(awbarrier*) {}

}  // namespace experimental
}  // namespace nvcuda
