// veriforge CPU runtime: the libcu++ synchronisation subset real CUDA code uses - cuda::barrier,
// cuda::pipeline (thread scope and block scope with pipeline_shared_state), cuda::memcpy_async,
// cuda::aligned_size_t, cuda::thread_scope - on top of the fiber scheduler.
//
// Asynchronous copies complete at once here (a memcpy when memcpy_async is called): every wait for
// their completion is then already satisfied, which is a valid schedule of the asynchronous
// hardware copy (a GPU may also complete it before the wait). What still waits is the barrier
// between threads: a thread waiting for a phase of a block- or thread-scope barrier is parked by the
// scheduler (vf::wait_on) until the arrival completing the phase wakes it, so a barrier whose
// count is never reached is reported as a deadlock (KernelFault naming the line), as a
// __syncthreads() in divergent code is. Device- and system-scope barriers (in global memory,
// shared by several blocks) wait by yielding.
#pragma once
#include "../../vf_macro_guard_begin.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <type_traits>

#include "../../vf_core.h"

namespace cuda {

enum thread_scope { thread_scope_system = 0, thread_scope_device = 1, thread_scope_block = 2, thread_scope_thread = 3 };

// A size with an alignment guarantee (the copies here do not need it).
template <std::size_t Alignment> struct aligned_size_t {
    static constexpr std::size_t align = Alignment;
    std::size_t value;
    constexpr explicit aligned_size_t(std::size_t size) : value(size) {}
    constexpr operator std::size_t() const { return value; }
};

enum class async_contract_fulfillment { none, async };

namespace vf_detail {
struct empty_completion {
    void operator()() noexcept {}
};
template <thread_scope Scope> inline void wait_step(const void* object, int line, const char* what) {
    if constexpr (Scope == thread_scope_block || Scope == thread_scope_thread) {
        ::vf::wait_on(object, line, what);
    } else {
        ::vf::yield_thread();
        std::this_thread::yield();
    }
}
template <thread_scope Scope> inline void wake(const void* object) {
    if constexpr (Scope == thread_scope_block || Scope == thread_scope_thread) ::vf::wake_all(object);
}
inline std::size_t to_size(std::size_t n) { return n; }

// A copy that `size` threads of a group perform together: thread `rank` copies its contiguous
// share (in 16-byte units), so the whole copy is done once every thread of the group has called it
// - which the group's wait (a barrier, cg::wait) guarantees before anyone reads the data.
inline void group_copy(void* dst, const void* src, std::size_t n, unsigned long long rank,
                       unsigned long long size) {
    if (size <= 1) {
        std::memcpy(dst, src, n);
        return;
    }
    std::size_t units = (n + 15) / 16;
    std::size_t per = (units + size - 1) / size * 16;
    std::size_t begin = (std::size_t)rank * per;
    if (begin >= n) return;
    std::size_t end = begin + per < n ? begin + per : n;
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
}
}  // namespace vf_detail

// cuda::barrier: an arrive/wait barrier with phases. `__shared__ cuda::barrier<...> b;` is
// default-constructed and initialised with init(&b, count) by one thread; the constructor taking a
// count (and optionally a completion function, run by the last arriving thread) works too.
template <thread_scope Scope, class CompletionF = vf_detail::empty_completion> class barrier {
  public:
    using arrival_token = std::uint64_t;  // the phase the arrival belongs to

    barrier() = default;
    explicit barrier(std::ptrdiff_t expected, CompletionF completion = CompletionF()) { init_(expected, completion); }
    barrier(const barrier&) = delete;
    barrier& operator=(const barrier&) = delete;

    [[nodiscard]] arrival_token arrive(std::ptrdiff_t update = 1, int line = __builtin_LINE()) {
        arrival_token phase = phase_.load(std::memory_order_acquire);
        std::ptrdiff_t left = pending_.fetch_sub(update, std::memory_order_acq_rel) - update;
        if (left < 0) ::vf::trap("cuda::barrier: more arrivals than the expected count in this phase", line);
        if (left == 0) complete_();
        return phase;
    }
    void wait(arrival_token&& token, int line = __builtin_LINE()) const {
        while (phase_.load(std::memory_order_acquire) == token)
            vf_detail::wait_step<Scope>(this, line, "cuda::barrier::wait");
    }
    bool try_wait(arrival_token&& token) const {
        bool done = phase_.load(std::memory_order_acquire) != token;
        if (!done) ::vf::yield_thread();
        return done;
    }
    // Waits for the phase whose parity is `parity` to complete (the current phase's parity is
    // phase & 1: while it equals `parity`, that phase is still in progress).
    void wait_parity(bool parity, int line = __builtin_LINE()) const {
        while (((phase_.load(std::memory_order_acquire) & 1u) != 0) == parity)
            vf_detail::wait_step<Scope>(this, line, "cuda::barrier::wait_parity");
    }
    bool try_wait_parity(bool parity) const {
        bool done = ((phase_.load(std::memory_order_acquire) & 1u) != 0) != parity;
        if (!done) ::vf::yield_thread();
        return done;
    }
    void arrive_and_wait(int line = __builtin_LINE()) { wait(arrive(1, line), line); }
    // Arrives for this phase and leaves the barrier: later phases expect one arrival fewer.
    void arrive_and_drop(int line = __builtin_LINE()) {
        expected_.fetch_sub(1, std::memory_order_acq_rel);
        (void)arrive(1, line);
    }
    static constexpr std::ptrdiff_t max() noexcept { return (std::ptrdiff_t(1) << 20) - 1; }

    friend void init(barrier* b, std::ptrdiff_t expected, CompletionF completion = CompletionF()) {
        b->init_(expected, completion);
    }

  private:
    void init_(std::ptrdiff_t expected, CompletionF completion) {
        expected_.store(expected, std::memory_order_relaxed);
        pending_.store(expected, std::memory_order_relaxed);
        phase_.store(0, std::memory_order_release);
        completion_ = completion;
    }
    void complete_() {
        completion_();
        pending_.store(expected_.load(std::memory_order_acquire), std::memory_order_release);
        phase_.fetch_add(1, std::memory_order_acq_rel);
        vf_detail::wake<Scope>(this);
    }

    std::atomic<std::ptrdiff_t> pending_{0};
    std::atomic<std::ptrdiff_t> expected_{0};
    std::atomic<std::uint64_t> phase_{0};
    CompletionF completion_{};
};

// ---- memcpy_async with a barrier: the copy is complete before the barrier's phase can complete --
template <thread_scope Scope, class F>
inline async_contract_fulfillment memcpy_async(void* dst, const void* src, std::size_t size, barrier<Scope, F>&) {
    std::memcpy(dst, src, size);
    return async_contract_fulfillment::none;
}
template <class Group, thread_scope Scope, class F>
    requires requires(const Group& g) { g.thread_rank(); g.size(); }
inline async_contract_fulfillment memcpy_async(const Group& group, void* dst, const void* src, std::size_t size,
                                               barrier<Scope, F>&) {
    vf_detail::group_copy(dst, src, size, group.thread_rank(), group.size());
    return async_contract_fulfillment::none;
}

}  // namespace cuda
#include "../../vf_macro_guard_end.h"
