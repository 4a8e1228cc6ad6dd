// veriforge CPU runtime: cooperative_groups inclusive/exclusive scans - tiles of up to 32 threads
// (Hillis-Steele over shfl_up), tiles of 64 ... 1024 threads (a scan per warp, then the totals of
// the warps before) and coalesced groups (in rank order).
#pragma once
#include "../../vf_macro_guard_begin.h"
#include "../cooperative_groups.h"

namespace cooperative_groups {
namespace details {
template <unsigned N, class P, class T, class Op>
inline T multi_warp_inclusive_scan(const thread_block_tile<N, P>& g, T value, Op op, int line) {
    static_assert(sizeof(T) <= kMultiWarpSlotBytes, "multi-warp tile collectives move at most 64 bytes");
    unsigned lane_id = lane();
    for (unsigned d = 1; d < 32; d *= 2) {
        T other = __shfl_up_sync(0xffffffffu, value, d, 32, line);
        if (lane_id >= d) value = op(value, other);
    }
    unsigned rank = block_rank(), first = rank - g.thread_rank();
    unsigned live = __ballot_sync(0xffffffffu, 1, line);
    if (lane_id == 31u - (unsigned)__builtin_clz(live))  // the warp's last live lane holds its total
        std::memcpy(tl_multi_warp.slot[rank / 32u], static_cast<const void*>(&value), sizeof(T));
    g.sync(line);
    alignas(T) unsigned char buf[sizeof(T)];
    bool have = false;
    T prefix = value;
    for (unsigned w = first / 32u; w < rank / 32u; ++w) {
        std::memcpy(buf, tl_multi_warp.slot[w], sizeof(T));
        const T& x = *std::launder(reinterpret_cast<T*>(buf));
        prefix = have ? op(prefix, x) : x;
        have = true;
    }
    g.sync(line);
    return have ? op(prefix, value) : value;
}
}  // namespace details

template <unsigned N, class P, class T, class Op = plus<T>>
inline T inclusive_scan(const thread_block_tile<N, P>& g, T value, Op op = Op(), int line = __builtin_LINE()) {
    if constexpr (N <= 32) {
        unsigned rank = g.thread_rank();
        for (unsigned d = 1; d < N; d *= 2) {
            T other = g.shfl_up(value, d, line);
            if (rank >= d) value = op(value, other);
        }
        return value;
    } else {
        return details::multi_warp_inclusive_scan(g, value, op, line);
    }
}
template <unsigned N, class P, class T, class Op = plus<T>>
inline T exclusive_scan(const thread_block_tile<N, P>& g, T value, Op op = Op(), int line = __builtin_LINE()) {
    if constexpr (N <= 32) {
        T inc = inclusive_scan(g, value, op, line);
        T prev = g.shfl_up(inc, 1, line);
        return g.thread_rank() == 0 ? T{} : prev;
    } else {
        // Exclusive = inclusive scan of the value shifted by one rank (rank 0 gets T{}).
        T inc = details::multi_warp_inclusive_scan(g, value, op, line);
        unsigned rank = details::block_rank(), first = rank - g.thread_rank();
        static_assert(sizeof(T) <= details::kMultiWarpSlotBytes, "multi-warp tile collectives move at most 64 bytes");
        T prev = __shfl_up_sync(0xffffffffu, inc, 1u, 32, line);
        if ((rank & 31u) == 31u)
            std::memcpy(details::tl_multi_warp.slot[rank / 32u], static_cast<const void*>(&inc), sizeof(T));
        g.sync(line);
        if ((rank & 31u) == 0u && rank != first) {
            alignas(T) unsigned char buf[sizeof(T)];
            std::memcpy(buf, details::tl_multi_warp.slot[rank / 32u - 1u], sizeof(T));
            prev = *std::launder(reinterpret_cast<T*>(buf));
        }
        g.sync(line);
        return rank == first ? T{} : prev;
    }
}
template <class T, class Op = plus<T>>
inline T inclusive_scan(const coalesced_group& g, T value, Op op = Op(), int line = __builtin_LINE()) {
    T acc = g.shfl(value, 0u, line);
    unsigned me = g.thread_rank();
    for (unsigned r = 1; r < g.size(); ++r) {
        T x = g.shfl(value, r, line);
        if (r <= me) acc = op(acc, x);
    }
    return acc;
}
template <class T, class Op = plus<T>>
inline T exclusive_scan(const coalesced_group& g, T value, Op op = Op(), int line = __builtin_LINE()) {
    T inc = inclusive_scan(g, value, op, line);
    T prev = g.shfl_up(inc, 1u, line);
    return g.thread_rank() == 0 ? T{} : prev;
}
}  // namespace cooperative_groups
#include "../../vf_macro_guard_end.h"
