// veriforge CPU runtime: <cuda_awbarrier_primitives.h> - the __mbarrier_* primitives: a 64-bit
// arrive/wait barrier (pending arrivals, expected count, phase). A test that finds the phase still
// running lets the block's other threads run first, so `while (!__mbarrier_test_wait(b, t)) {}` progresses.
#pragma once
#include <cstdint>

#include "../vf_core.h"

typedef std::uint64_t __mbarrier_t;
typedef std::uint64_t __mbarrier_token_t;

namespace vf {
namespace mbarrier {
// bits 0-20: pending arrivals, 21-41: expected count, 42-63: phase
constexpr std::uint64_t kCountMask = (std::uint64_t(1) << 21) - 1;
inline std::uint64_t pending(std::uint64_t v) { return v & kCountMask; }
inline std::uint64_t expected(std::uint64_t v) { return (v >> 21) & kCountMask; }
inline std::uint64_t phase(std::uint64_t v) { return v >> 42; }
inline std::uint64_t make(std::uint64_t pending, std::uint64_t expected, std::uint64_t phase) {
    return pending | (expected << 21) | (phase << 42);
}
inline __mbarrier_token_t arrive(__mbarrier_t* b, bool drop) {
    std::uint64_t v = *b;
    std::uint64_t exp = expected(v) - (drop ? 1 : 0), left = pending(v) - 1, ph = phase(v);
    *b = left == 0 ? make(exp, exp, ph + 1) : make(left, exp, ph);
    if (left == 0) ::vf::wake_all(b);
    return v;
}
inline bool test(const __mbarrier_t* b, __mbarrier_token_t token) {
    if (phase(*b) != phase(token)) return true;
    ::vf::yield_thread();
    return false;
}
}  // namespace mbarrier
}  // namespace vf

inline std::uint32_t __mbarrier_maximum_count() { return (1u << 20) - 1; }
inline void __mbarrier_init(__mbarrier_t* b, std::uint32_t expected_count) {
    *b = ::vf::mbarrier::make(expected_count, expected_count, 0);
}
inline void __mbarrier_inval(__mbarrier_t*) {}
inline __mbarrier_token_t __mbarrier_arrive(__mbarrier_t* b) { return ::vf::mbarrier::arrive(b, false); }
inline __mbarrier_token_t __mbarrier_arrive_and_drop(__mbarrier_t* b) { return ::vf::mbarrier::arrive(b, true); }
inline bool __mbarrier_test_wait(__mbarrier_t* b, __mbarrier_token_t token) { return ::vf::mbarrier::test(b, token); }
inline std::uint32_t __mbarrier_token_pending_count(__mbarrier_token_t token) {
    return (std::uint32_t)::vf::mbarrier::pending(token);
}
inline bool __mbarrier_test_wait_parity(__mbarrier_t* b, bool parity) {
    if (((::vf::mbarrier::phase(*b) & 1u) != 0) != parity) return true;
    ::vf::yield_thread();
    return false;
}
inline bool __mbarrier_try_wait(__mbarrier_t* b, __mbarrier_token_t token, std::uint32_t) {
    return __mbarrier_test_wait(b, token);
}
inline bool __mbarrier_try_wait_parity(__mbarrier_t* b, bool parity, std::uint32_t) {
    return __mbarrier_test_wait_parity(b, parity);
}
