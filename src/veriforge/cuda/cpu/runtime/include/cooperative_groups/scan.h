// veriforge CPU runtime: cooperative_groups inclusive/exclusive scans for tiles (Hillis-Steele
// over shfl_up).
#pragma once
#include "../cooperative_groups.h"

namespace cooperative_groups {
template <unsigned N, class T, class Op = plus<T>>
inline T inclusive_scan(const thread_block_tile<N>& g, T value, Op op = Op(), int line = __builtin_LINE()) {
    unsigned rank = g.thread_rank();
    for (unsigned d = 1; d < N; d *= 2) {
        T other = g.shfl_up(value, d, line);
        if (rank >= d) value = op(value, other);
    }
    return value;
}
template <unsigned N, class T, class Op = plus<T>>
inline T exclusive_scan(const thread_block_tile<N>& g, T value, Op op = Op(), int line = __builtin_LINE()) {
    T inc = inclusive_scan(g, value, op, line);
    T prev = g.shfl_up(inc, 1, line);
    return g.thread_rank() == 0 ? T{} : prev;
}
}  // namespace cooperative_groups
