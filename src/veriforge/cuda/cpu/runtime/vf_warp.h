// Warp-level intrinsics. Every lane hands its operand to the scheduler, which suspends it until
// all lanes named in the mask (that still exist) arrive, then computes every lane's result at
// once - so the semantics are those of converged Volta+ warps, independent of thread order.
#pragma once

namespace vf {
// Byte copies rather than bit_cast: CUDA's host __half / __nv_bfloat16 classes are not trivially
// copyable (user-provided copy operations) but are plain 2/4-byte values all the same.
template <class T> inline uint64_t to_bits(const T& v) {
    static_assert(sizeof(T) <= 8, "warp collectives compare at most 8 bytes");
    uint64_t b = 0;
    std::memcpy(&b, static_cast<const void*>(&v), sizeof(T));
    return b;
}
template <class T> inline T from_bits(uint64_t b) {
    alignas(T) unsigned char buf[sizeof(T)];
    std::memcpy(buf, &b, sizeof(T));
    return *std::launder(reinterpret_cast<T*>(buf));
}
// A shuffle moves any trivially-copyable value: CUDA's own headers split types wider than the
// hardware's 4 bytes into pieces and shuffle each; here the pieces are 8 bytes, one collective
// each, with the same mask / source / width (so the result is the same).
template <class T> inline T shuffle(int op, unsigned mask, T var, int arg, int width, int line) {
    if constexpr (sizeof(T) <= 8) {
        return from_bits<T>(warp_collective(op, mask, to_bits(var), arg, width, line));
    } else {
        constexpr size_t kPieces = (sizeof(T) + 7) / 8;
        uint64_t in[kPieces] = {}, out[kPieces];
        std::memcpy(in, static_cast<const void*>(&var), sizeof(T));
        for (size_t i = 0; i < kPieces; ++i) out[i] = warp_collective(op, mask, in[i], arg, width, line);
        alignas(T) unsigned char buf[sizeof(T)];
        std::memcpy(buf, out, sizeof(T));
        return *std::launder(reinterpret_cast<T*>(buf));
    }
}
}  // namespace vf

template <class T>
inline T __shfl_sync(unsigned mask, T var, int src, int width = 32, int line = __builtin_LINE()) {
    return vf::shuffle(vf::kShflIdx, mask, var, src, width, line);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32, int line = __builtin_LINE()) {
    return vf::shuffle(vf::kShflUp, mask, var, (int)delta, width, line);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32, int line = __builtin_LINE()) {
    return vf::shuffle(vf::kShflDown, mask, var, (int)delta, width, line);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32, int line = __builtin_LINE()) {
    return vf::shuffle(vf::kShflXor, mask, var, lane_mask, width, line);
}
// Pre-CUDA-9 spellings (implicitly the full warp).
template <class T> inline T __shfl(T var, int src, int width = 32, int line = __builtin_LINE()) {
    return vf::shuffle(vf::kShflIdx, 0xffffffffu, var, src, width, line);
}
template <class T> inline T __shfl_up(T var, unsigned d, int width = 32, int line = __builtin_LINE()) {
    return vf::shuffle(vf::kShflUp, 0xffffffffu, var, (int)d, width, line);
}
template <class T> inline T __shfl_down(T var, unsigned d, int width = 32, int line = __builtin_LINE()) {
    return vf::shuffle(vf::kShflDown, 0xffffffffu, var, (int)d, width, line);
}
template <class T> inline T __shfl_xor(T var, int m, int width = 32, int line = __builtin_LINE()) {
    return vf::shuffle(vf::kShflXor, 0xffffffffu, var, m, width, line);
}

inline unsigned __ballot_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
    return (unsigned)vf::warp_collective(vf::kBallot, mask, pred != 0, 0, 32, line);
}
inline int __any_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
    return (int)vf::warp_collective(vf::kAny, mask, pred != 0, 0, 32, line);
}
inline int __all_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
    return (int)vf::warp_collective(vf::kAll, mask, pred != 0, 0, 32, line);
}
inline unsigned __uni_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
    unsigned b = __ballot_sync(mask, pred, line);
    return b == 0u || b == (mask & vf::active_mask());
}
inline unsigned __ballot(int pred, int line = __builtin_LINE()) { return __ballot_sync(0xffffffffu, pred, line); }
inline int __any(int pred, int line = __builtin_LINE()) { return __any_sync(0xffffffffu, pred, line); }
inline int __all(int pred, int line = __builtin_LINE()) { return __all_sync(0xffffffffu, pred, line); }
inline void __syncwarp(unsigned mask = 0xffffffffu, int line = __builtin_LINE()) {
    vf::warp_collective(vf::kSyncWarp, mask, 0, 0, 32, line);
}
inline unsigned __activemask() { return vf::active_mask(); }
template <class T> inline unsigned __match_any_sync(unsigned mask, T value, int line = __builtin_LINE()) {
    return (unsigned)vf::warp_collective(vf::kMatchAny, mask, vf::to_bits(value), 0, 32, line);
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred, int line = __builtin_LINE()) {
    return (unsigned)vf::warp_collective(vf::kMatchAll, mask, vf::to_bits(value), 0, 32, line, pred);
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v, int line = __builtin_LINE()) {
    return (unsigned)vf::warp_collective(vf::kReduceAddU, mask, v, 0, 32, line);
}
inline int __reduce_add_sync(unsigned mask, int v, int line = __builtin_LINE()) {
    return (int)vf::warp_collective(vf::kReduceAddI, mask, (uint64_t)(int64_t)v, 0, 32, line);
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned v, int line = __builtin_LINE()) {
    return (unsigned)vf::warp_collective(vf::kReduceMinU, mask, v, 0, 32, line);
}
inline int __reduce_min_sync(unsigned mask, int v, int line = __builtin_LINE()) {
    return (int)vf::warp_collective(vf::kReduceMinI, mask, (uint64_t)(int64_t)v, 0, 32, line);
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned v, int line = __builtin_LINE()) {
    return (unsigned)vf::warp_collective(vf::kReduceMaxU, mask, v, 0, 32, line);
}
inline int __reduce_max_sync(unsigned mask, int v, int line = __builtin_LINE()) {
    return (int)vf::warp_collective(vf::kReduceMaxI, mask, (uint64_t)(int64_t)v, 0, 32, line);
}
inline unsigned __reduce_and_sync(unsigned mask, unsigned v, int line = __builtin_LINE()) {
    return (unsigned)vf::warp_collective(vf::kReduceAnd, mask, v, 0, 32, line);
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned v, int line = __builtin_LINE()) {
    return (unsigned)vf::warp_collective(vf::kReduceOr, mask, v, 0, 32, line);
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v, int line = __builtin_LINE()) {
    return (unsigned)vf::warp_collective(vf::kReduceXor, mask, v, 0, 32, line);
}
