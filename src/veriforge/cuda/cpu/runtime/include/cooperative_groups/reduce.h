// veriforge CPU runtime: cooperative_groups::reduce for tiles (butterfly over shfl_xor).
#pragma once
#include "../cooperative_groups.h"

namespace cooperative_groups {
template <unsigned N, class T, class Op>
inline T reduce(const thread_block_tile<N>& g, T value, Op op, int line = __builtin_LINE()) {
    for (unsigned offset = N / 2; offset > 0; offset /= 2) value = op(value, g.shfl_xor(value, offset, line));
    return value;
}
}  // namespace cooperative_groups
