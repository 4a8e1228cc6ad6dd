// veriforge CPU runtime: cooperative groups on top of the runtime's barriers and warp
// collectives. Covers thread blocks, tiled partitions (static and dynamic size <= 32), coalesced
// groups and the reduce/scan helpers. Grid-wide synchronisation (this_grid().sync()) cannot
// work when blocks run a few at a time, so it is reported as unsupported.
#pragma once

namespace cooperative_groups {

namespace details {
inline unsigned block_rank() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
inline unsigned block_size() { return blockDim.x * blockDim.y * blockDim.z; }
inline unsigned lane() { return block_rank() & 31u; }
inline unsigned tile_mask(unsigned n) {
    unsigned base = lane() & ~(n - 1u);
    return n >= 32 ? 0xffffffffu : ((1u << n) - 1u) << base;
}
}  // namespace details

class thread_block {
  public:
    void sync(int line = __builtin_LINE()) const { ::vf::syncthreads(line); }
    unsigned thread_rank() const { return details::block_rank(); }
    unsigned size() const { return details::block_size(); }
    unsigned num_threads() const { return details::block_size(); }
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    dim3 group_dim() const { return blockDim; }
    dim3 dim_threads() const { return blockDim; }
};
inline thread_block this_thread_block() { return thread_block(); }

// A generic group handle (what `thread_group g = ...` holds): a block or a tile of `n` lanes.
class thread_group {
  public:
    explicit thread_group(unsigned tile = 0) : tile_(tile) {}
    thread_group(const thread_block&) : tile_(0) {}
    void sync(int line = __builtin_LINE()) const {
        if (tile_ == 0) ::vf::syncthreads(line);
        else __syncwarp(details::tile_mask(tile_), line);
    }
    unsigned thread_rank() const { return tile_ ? details::block_rank() % tile_ : details::block_rank(); }
    unsigned size() const { return tile_ ? tile_ : details::block_size(); }
    unsigned num_threads() const { return size(); }

  protected:
    unsigned tile_;
};

template <unsigned N> class thread_block_tile : public thread_group {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tile size must be a power of two <= 32");

  public:
    thread_block_tile() : thread_group(N) {}
    void sync(int line = __builtin_LINE()) const { __syncwarp(details::tile_mask(N), line); }
    unsigned thread_rank() const { return details::block_rank() % N; }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    unsigned meta_group_rank() const { return details::block_rank() / N; }
    unsigned meta_group_size() const { return (details::block_size() + N - 1) / N; }
    template <class T> T shfl(T v, int src, int line = __builtin_LINE()) const {
        return vf::shuffle(vf::kShflIdx, details::tile_mask(N), v, src, (int)N, line);
    }
    template <class T> T shfl_down(T v, unsigned d, int line = __builtin_LINE()) const {
        return vf::shuffle(vf::kShflDown, details::tile_mask(N), v, (int)d, (int)N, line);
    }
    template <class T> T shfl_up(T v, unsigned d, int line = __builtin_LINE()) const {
        return vf::shuffle(vf::kShflUp, details::tile_mask(N), v, (int)d, (int)N, line);
    }
    template <class T> T shfl_xor(T v, unsigned m, int line = __builtin_LINE()) const {
        return vf::shuffle(vf::kShflXor, details::tile_mask(N), v, (int)m, (int)N, line);
    }
    unsigned ballot(int pred, int line = __builtin_LINE()) const {
        unsigned b = __ballot_sync(details::tile_mask(N), pred, line);
        return N >= 32 ? b : (b >> (details::lane() & ~(N - 1u))) & ((1u << N) - 1u);
    }
    int any(int pred, int line = __builtin_LINE()) const { return __any_sync(details::tile_mask(N), pred, line); }
    int all(int pred, int line = __builtin_LINE()) const { return __all_sync(details::tile_mask(N), pred, line); }
    template <class T> unsigned match_any(T v, int line = __builtin_LINE()) const {
        unsigned m = __match_any_sync(details::tile_mask(N), v, line);
        return N >= 32 ? m : (m >> (details::lane() & ~(N - 1u))) & ((1u << N) - 1u);
    }
};

template <unsigned N, class Parent> inline thread_block_tile<N> tiled_partition(const Parent&) {
    return thread_block_tile<N>();
}
inline thread_group tiled_partition(const thread_group&, unsigned n) { return thread_group(n); }
inline thread_group tiled_partition(const thread_block&, unsigned n) { return thread_group(n); }

// The lanes of the warp that are still running (see the runtime docs on __activemask()).
class coalesced_group {
  public:
    coalesced_group() : mask_(__activemask()) {}
    unsigned size() const { return (unsigned)__popc(mask_); }
    unsigned num_threads() const { return size(); }
    unsigned thread_rank() const { return (unsigned)__popc(mask_ & ((1u << details::lane()) - 1u)); }
    void sync(int line = __builtin_LINE()) const { __syncwarp(mask_, line); }
    template <class T> T shfl(T v, unsigned rank, int line = __builtin_LINE()) const {
        return __shfl_sync(mask_, v, (int)lane_of(rank), 32, line);
    }
    unsigned ballot(int pred, int line = __builtin_LINE()) const {
        unsigned b = __ballot_sync(mask_, pred, line), out = 0, r = 0;
        for (unsigned l = 0; l < 32; ++l)
            if (mask_ >> l & 1u) out |= ((b >> l) & 1u) << r++;
        return out;
    }
    int any(int pred, int line = __builtin_LINE()) const { return __any_sync(mask_, pred, line); }
    int all(int pred, int line = __builtin_LINE()) const { return __all_sync(mask_, pred, line); }

  private:
    unsigned lane_of(unsigned rank) const {
        for (unsigned l = 0, r = 0; l < 32; ++l)
            if (mask_ >> l & 1u) {
                if (r == rank) return l;
                ++r;
            }
        return details::lane();
    }
    unsigned mask_;
};
inline coalesced_group coalesced_threads() { return coalesced_group(); }

class grid_group {
  public:
    void sync(int line = __builtin_LINE()) const { ::vf::trap("grid-wide synchronisation (this_grid().sync())", line); }
    unsigned long long thread_rank() const {
        unsigned long long block = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
        return block * details::block_size() + details::block_rank();
    }
    unsigned long long size() const {
        return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * details::block_size();
    }
    unsigned long long num_threads() const { return size(); }
    bool is_valid() const { return false; }
};
inline grid_group this_grid() { return grid_group(); }

template <class G> inline void sync(const G& g, int line = __builtin_LINE()) { g.sync(line); }

template <class T> struct plus {
    T operator()(const T& a, const T& b) const { return a + b; }
};
template <class T> struct less {
    T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <class T> struct greater {
    T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <class T> struct bit_and {
    T operator()(const T& a, const T& b) const { return a & b; }
};
template <class T> struct bit_or {
    T operator()(const T& a, const T& b) const { return a | b; }
};
template <class T> struct bit_xor {
    T operator()(const T& a, const T& b) const { return a ^ b; }
};

}  // namespace cooperative_groups

#include "cooperative_groups/reduce.h"
#include "cooperative_groups/scan.h"
