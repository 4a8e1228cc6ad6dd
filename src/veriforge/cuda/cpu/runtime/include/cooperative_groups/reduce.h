// veriforge CPU runtime: cooperative_groups::reduce - tiles of up to 32 threads (butterfly over
// shfl_xor), tiles of 64 ... 1024 threads (each warp reduces, then the warps' results are folded in
// warp order) and coalesced groups (folded in rank order).
#pragma once
#include "../../vf_macro_guard_begin.h"
#include "../cooperative_groups.h"

namespace cooperative_groups {
template <unsigned N, class P, class T, class Op>
inline T reduce(const thread_block_tile<N, P>& g, T value, Op op, int line = __builtin_LINE()) {
    if constexpr (N <= 32) {
        for (unsigned offset = N / 2; offset > 0; offset /= 2) value = op(value, g.shfl_xor(value, offset, line));
        return value;
    } else {
        for (unsigned offset = 16; offset > 0; offset /= 2)
            value = op(value, __shfl_xor_sync(0xffffffffu, value, (int)offset, 32, line));
        return g.combine(value, op, line);
    }
}
template <class T, class Op>
inline T reduce(const coalesced_group& g, T value, Op op, int line = __builtin_LINE()) {
    T acc = g.shfl(value, 0u, line);
    for (unsigned r = 1; r < g.size(); ++r) acc = op(acc, g.shfl(value, r, line));
    return acc;
}
}  // namespace cooperative_groups
#include "../../vf_macro_guard_end.h"
