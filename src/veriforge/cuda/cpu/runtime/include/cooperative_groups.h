// veriforge CPU runtime: cooperative groups on top of the runtime's barriers and warp
// collectives. Covers thread blocks, tiled partitions (static sizes 1 ... 1024, dynamic ones),
// coalesced groups, binary/labeled partitions and the reduce/scan helpers, and the grid of a
// cooperative launch (this_grid().sync(): every block is resident, see scheduler.cpp).
#pragma once
#include "../vf_macro_guard_begin.h"

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

// ---- tiles of more than 32 threads (64 ... 1024): several warps ------------------------------
// CUDA builds their collectives from per-warp collectives plus a barrier and one exchange slot per
// warp in shared memory (block_tile_memory, or sm_80's reserved shared memory); so do we, with the
// state per resident block (thread_local, like __shared__).
constexpr unsigned kMultiWarpSlotBytes = 64;
struct MultiWarpBarrier {
    unsigned arrived;      // bit w: warp w of the tile has arrived
    unsigned generation;
    uint3 block;           // the block using it (a launch that faulted mid-barrier leaves it dirty)
    dim3 grid;
};
struct MultiWarpState {
    MultiWarpBarrier barriers[31];  // 16 tiles of 64, 8 of 128, 4 of 256, 2 of 512, 1 of 1024
    alignas(16) unsigned char slot[32][kMultiWarpSlotBytes];  // per warp of the block
};
inline thread_local MultiWarpState tl_multi_warp;

#if defined(VF_YIELD_STARTS_NEW_THREADS)
// The tile's own barrier: every warp of the tile converges (a ballot, which also names its live
// lanes); the lowest live lane arrives for the warp and - unless it is the last - waits, yielding
// to the block's other threads, until the tile's last warp arrives. Needs a scheduler whose
// yield_thread() starts threads that have not run yet before it resumes waiting ones (otherwise
// two waiting warps would keep the rest of the block from ever starting). As on a GPU, a tile one
// of whose warps has exited entirely never completes a barrier.
inline void multi_warp_sync(unsigned n, int line) {
    unsigned rank = block_rank();
    unsigned live = __ballot_sync(0xffffffffu, 1, line);  // converge the warp
    if ((rank & 31u) == (unsigned)__builtin_ctz(live)) {
        unsigned tile = rank / n, first = tile * n;
        unsigned last = std::min(first + n, block_size());
        unsigned warps = (last - first + 31u) / 32u;
        unsigned expected = warps >= 32 ? 0xffffffffu : (1u << warps) - 1u;
        MultiWarpBarrier& b = tl_multi_warp.barriers[32u - 2048u / n + tile];
        unsigned bit = 1u << ((rank - first) / 32u);
        bool same_block = b.block.x == blockIdx.x && b.block.y == blockIdx.y && b.block.z == blockIdx.z &&
                          b.grid.x == gridDim.x && b.grid.y == gridDim.y && b.grid.z == gridDim.z;
        if (!same_block || (b.arrived & bit)) {  // left over from another block or an aborted launch
            b.arrived = 0;
            b.block = blockIdx;
            b.grid = gridDim;
        }
        unsigned gen = b.generation;
        b.arrived |= bit;
        if (b.arrived == expected) {
            b.arrived = 0;
            b.generation = gen + 1;
        } else {
            while (*static_cast<volatile unsigned*>(&b.generation) == gen) ::vf::yield_thread();
        }
    }
    __syncwarp(live, line);
}
#else
// The block's barrier: the scheduler runs a block's threads as fibers and resumes waiting threads
// before it starts new ones, so a spinning wait over a subset of warps could keep threads that have
// not started from ever starting. Exact when every tile of the block performs the same sequence of
// tile operations (SPMD code, what multi-warp tiles are used for); a tile that synchronises where
// the others do not is reported as a divergent barrier (KernelFault), never a silent wrong answer.
// Threads that exited do not take part (as at __syncthreads).
inline void multi_warp_sync(unsigned, int line) { ::vf::syncthreads(line); }
#endif
}  // namespace details

// block_tile_memory<MaxBlockSize> (CUDA 12; CUDA 11's <TileCommunicationSize, MaxBlockSize> too):
// the scratch CUDA's multi-warp tiles need before sm_80. Here the runtime keeps that state itself,
// so it is only a placeholder that this_thread_block(scratch) accepts.
template <unsigned... Sizes> struct alignas(16) block_tile_memory {
    unsigned char reserved_[16];
};

class thread_block {
  public:
    thread_block() = default;
    template <unsigned... Sizes> explicit thread_block(block_tile_memory<Sizes...>&) {}
    void sync(int line = __builtin_LINE()) const { ::vf::syncthreads(line); }
    unsigned thread_rank() const { return details::block_rank(); }
    unsigned size() const { return details::block_size(); }
    unsigned num_threads() const { return details::block_size(); }
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    dim3 group_dim() const { return blockDim; }
    dim3 dim_threads() const { return blockDim; }
    bool is_valid() const { return true; }
};
inline thread_block this_thread_block() { return thread_block(); }
template <unsigned... Sizes> inline thread_block this_thread_block(block_tile_memory<Sizes...>& scratch) {
    return thread_block(scratch);
}

// A generic group handle (what `thread_group g = ...` holds): a block or a tile of `n` lanes.
class thread_group {
  public:
    explicit thread_group(unsigned tile = 0) : tile_(tile) {}
    thread_group(const thread_block&) : tile_(0) {}
    void sync(int line = __builtin_LINE()) const {
        if (tile_ == 0) ::vf::syncthreads(line);
        else if (tile_ > 32) details::multi_warp_sync(tile_, line);
        else __syncwarp(details::tile_mask(tile_), line);
    }
    unsigned thread_rank() const { return tile_ ? details::block_rank() % tile_ : details::block_rank(); }
    unsigned size() const { return tile_ ? tile_ : details::block_size(); }
    unsigned num_threads() const { return size(); }
    bool is_valid() const { return true; }

  protected:
    unsigned tile_;
};

namespace details {
template <unsigned N, bool MultiWarp = (N > 32)> class tile_base;

// Tiles within one warp: every operation is one warp collective over the tile's lanes.
template <unsigned N> class tile_base<N, false> : public thread_group {
    static_assert(N >= 1 && (N & (N - 1)) == 0, "tile size must be a power of two <= 1024");

  public:
    tile_base() : thread_group(N) {}
    void sync(int line = __builtin_LINE()) const { __syncwarp(details::tile_mask(N), line); }
    unsigned thread_rank() const { return details::block_rank() % N; }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
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
    template <class T> unsigned match_all(T v, int& pred, int line = __builtin_LINE()) const {
        unsigned m = __match_all_sync(details::tile_mask(N), v, &pred, line);
        return N >= 32 ? m : (m >> (details::lane() & ~(N - 1u))) & ((1u << N) - 1u);
    }
};

// Tiles of 64 ... 1024 threads (several warps). As in CUDA, they offer sync, shfl (from one
// rank to all), any/all and cg::reduce / scans - no shfl_up/down/xor, ballot or match across warps.
template <unsigned N> class tile_base<N, true> : public thread_group {
    static_assert(N <= 1024 && (N & (N - 1)) == 0, "Size must be one of 64/128/256/512/1024");

  public:
    tile_base() : thread_group(N) {}
    void sync(int line = __builtin_LINE()) const { details::multi_warp_sync(N, line); }
    unsigned thread_rank() const { return details::block_rank() % N; }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    template <class T> T shfl(T v, unsigned src, int line = __builtin_LINE()) const {
        static_assert(sizeof(T) <= kMultiWarpSlotBytes, "shfl across a multi-warp tile moves at most 64 bytes");
        unsigned first = details::block_rank() - thread_rank();
        unsigned char* slot = tl_multi_warp.slot[(first + (src % N)) / 32u];
        if (thread_rank() == src % N) std::memcpy(slot, static_cast<const void*>(&v), sizeof(T));
        sync(line);
        alignas(T) unsigned char buf[sizeof(T)];
        std::memcpy(buf, slot, sizeof(T));
        sync(line);  // nobody overwrites the slot before every thread has read it
        return *std::launder(reinterpret_cast<T*>(buf));
    }
    int any(int pred, int line = __builtin_LINE()) const {
        return combine(__any_sync(0xffffffffu, pred, line), [](int a, int b) { return a | b; }, line);
    }
    int all(int pred, int line = __builtin_LINE()) const {
        return combine(__all_sync(0xffffffffu, pred, line), [](int a, int b) { return a & b; }, line);
    }
    // Folds one value per warp (the value of the warp's first live lane), in warp order; every
    // thread gets the result.
    template <class T, class Op> T combine(T warp_value, Op op, int line) const {
        static_assert(sizeof(T) <= kMultiWarpSlotBytes, "multi-warp tile collectives move at most 64 bytes");
        unsigned rank = details::block_rank(), first = rank - thread_rank();
        unsigned live = __ballot_sync(0xffffffffu, 1, line);
        if ((rank & 31u) == (unsigned)__builtin_ctz(live))
            std::memcpy(tl_multi_warp.slot[rank / 32u], static_cast<const void*>(&warp_value), sizeof(T));
        sync(line);
        unsigned last = (std::min(first + N, details::block_size()) - 1u) / 32u + 1u;
        alignas(T) unsigned char buf[sizeof(T)];
        T acc = warp_value;
        for (unsigned w = first / 32u; w < last; ++w) {
            std::memcpy(buf, tl_multi_warp.slot[w], sizeof(T));
            const T& x = *std::launder(reinterpret_cast<T*>(buf));
            acc = w == first / 32u ? x : op(acc, x);
        }
        sync(line);
        return acc;
    }
};
}  // namespace details

template <unsigned N, class ParentT = void> class thread_block_tile;

template <unsigned N> class thread_block_tile<N, void> : public details::tile_base<N> {
  public:
    thread_block_tile() : mrank_(details::block_rank() / N), msize_((details::block_size() + N - 1) / N) {}
    thread_block_tile(unsigned meta_rank, unsigned meta_size) : mrank_(meta_rank), msize_(meta_size) {}
    unsigned meta_group_rank() const { return mrank_; }
    unsigned meta_group_size() const { return msize_; }

  private:
    unsigned mrank_, msize_;
};

// tiled_partition<N>(parent) returns a thread_block_tile<N, Parent> (as in CUDA), which converts to
// (here: derives from) thread_block_tile<N>. meta_group_rank/size count tiles within the parent.
template <unsigned N, class ParentT> class thread_block_tile : public thread_block_tile<N, void> {
  public:
    thread_block_tile(unsigned meta_rank, unsigned meta_size) : thread_block_tile<N, void>(meta_rank, meta_size) {}
};

namespace details {
template <class P> struct parent_size {
    static unsigned rank() { return block_rank(); }
    static unsigned size() { return block_size(); }
};
template <unsigned P, class G> struct parent_size<thread_block_tile<P, G>> {
    static unsigned rank() { return block_rank() % P; }
    static unsigned size() { return P; }
};
}  // namespace details

template <unsigned N, class ParentT> inline thread_block_tile<N, ParentT> tiled_partition(const ParentT&) {
    using P = details::parent_size<ParentT>;
    return thread_block_tile<N, ParentT>(P::rank() / N, (P::size() + N - 1) / N);
}
inline thread_group tiled_partition(const thread_group&, unsigned n) { return thread_group(n); }
inline thread_group tiled_partition(const thread_block&, unsigned n) { return thread_group(n); }
// The calling thread alone.
inline thread_block_tile<1, void> this_thread() { return thread_block_tile<1, void>(0, 1); }

// The lanes of the warp that are still running (see the runtime docs on __activemask()), or a
// part of a group (binary_partition / labeled_partition). Ranks count the group's lanes in lane order.
class coalesced_group {
  public:
    coalesced_group() : mask_(__activemask()), mrank_(0), msize_(1) {}
    coalesced_group(unsigned mask, unsigned meta_rank, unsigned meta_size)
        : mask_(mask), mrank_(meta_rank), msize_(meta_size) {}
    unsigned size() const { return (unsigned)__popc(mask_); }
    unsigned num_threads() const { return size(); }
    unsigned thread_rank() const { return (unsigned)__popc(mask_ & ((1u << details::lane()) - 1u)); }
    unsigned meta_group_rank() const { return mrank_; }
    unsigned meta_group_size() const { return msize_; }
    unsigned get_mask() const { return mask_; }
    bool is_valid() const { return mask_ != 0; }
    void sync(int line = __builtin_LINE()) const { __syncwarp(mask_, line); }
    template <class T> T shfl(T v, unsigned rank, int line = __builtin_LINE()) const {
        return __shfl_sync(mask_, v, (int)lane_of(rank), 32, line);
    }
    // shfl_down/up by ranks: a lane whose source rank is outside the group gets its own value.
    template <class T> T shfl_down(T v, unsigned delta, int line = __builtin_LINE()) const {
        unsigned r = thread_rank() + delta;
        return __shfl_sync(mask_, v, (int)(r < size() ? lane_of(r) : details::lane()), 32, line);
    }
    template <class T> T shfl_up(T v, unsigned delta, int line = __builtin_LINE()) const {
        unsigned r = thread_rank();
        return __shfl_sync(mask_, v, (int)(r >= delta ? lane_of(r - delta) : details::lane()), 32, line);
    }
    unsigned ballot(int pred, int line = __builtin_LINE()) const { return compact(__ballot_sync(mask_, pred, line)); }
    int any(int pred, int line = __builtin_LINE()) const { return __any_sync(mask_, pred, line); }
    int all(int pred, int line = __builtin_LINE()) const { return __all_sync(mask_, pred, line); }
    template <class T> unsigned match_any(T v, int line = __builtin_LINE()) const {
        return compact(__match_any_sync(mask_, v, line));
    }
    template <class T> unsigned match_all(T v, int& pred, int line = __builtin_LINE()) const {
        return compact(__match_all_sync(mask_, v, &pred, line));
    }

  private:
    unsigned lane_of(unsigned rank) const {
        for (unsigned l = 0, r = 0; l < 32; ++l)
            if (mask_ >> l & 1u) {
                if (r == rank) return l;
                ++r;
            }
        return details::lane();
    }
    unsigned compact(unsigned lanes) const {  // a lane mask -> the same lanes as a rank mask
        unsigned out = 0, r = 0;
        for (unsigned l = 0; l < 32; ++l)
            if (mask_ >> l & 1u) out |= ((lanes >> l) & 1u) << r++;
        return out;
    }
    unsigned mask_, mrank_, msize_;
};
inline coalesced_group coalesced_threads() { return coalesced_group(); }
// Tiles of n consecutive ranks of a coalesced group (each a coalesced group; the last may be partial).
inline coalesced_group tiled_partition(const coalesced_group& g, unsigned n) {
    unsigned tile = g.thread_rank() / n, mask = 0, rank = 0, all = g.get_mask();
    for (unsigned l = 0; l < 32; ++l)
        if (all >> l & 1u) {
            if (rank / n == tile) mask |= 1u << l;
            ++rank;
        }
    return coalesced_group(mask, tile, (g.size() + n - 1) / n);
}

namespace details {
template <class G> inline unsigned group_lane_mask(const G&) { return tile_mask(G::num_threads()); }
inline unsigned group_lane_mask(const coalesced_group& g) { return g.get_mask(); }
template <class G> inline coalesced_group binary_partition(const G& g, bool pred, int line) {
    unsigned mask = group_lane_mask(g);
    unsigned set = __ballot_sync(mask, pred, line);
    if (set == mask || set == 0) return coalesced_group(mask, 0, 1);
    return coalesced_group(pred ? set : mask & ~set, pred ? 1u : 0u, 2);
}
template <class G, class L> inline coalesced_group labeled_partition(const G& g, L label, int line) {
    unsigned mask = group_lane_mask(g);
    unsigned sub = __match_any_sync(mask, label, line);
    unsigned leader = (unsigned)__builtin_ctz(sub);
    unsigned leaders = __ballot_sync(mask, lane() == leader, line);
    return coalesced_group(sub, (unsigned)__popc(leaders & ((1u << leader) - 1u)), (unsigned)__popc(leaders));
}
}  // namespace details

// Splits a tile (<= 32 threads) or coalesced group in two by a predicate: the threads with
// pred != 0 (meta_group_rank 1) and the others (0); one group (rank 0 of 1) if all agree.
inline coalesced_group binary_partition(const coalesced_group& g, bool pred, int line = __builtin_LINE()) {
    return details::binary_partition(g, pred, line);
}
template <unsigned N, class P>
inline coalesced_group binary_partition(const thread_block_tile<N, P>& g, bool pred, int line = __builtin_LINE()) {
    static_assert(N <= 32, "Binary partition is available only for tiles of size smaller or equal to 32");
    return details::binary_partition(g, pred, line);
}
// Splits by an integral (or pointer) label: one coalesced group per distinct label, ranked by
// the lowest lane holding it.
template <class L>
inline coalesced_group labeled_partition(const coalesced_group& g, L label, int line = __builtin_LINE()) {
    static_assert(std::is_integral<L>::value || std::is_pointer<L>::value,
                  "labeled_partition predicate must be an integral or pointer type");
    if constexpr (std::is_same<L, bool>::value) return details::binary_partition(g, label, line);
    else return details::labeled_partition(g, label, line);
}
template <class L, unsigned N, class P>
inline coalesced_group labeled_partition(const thread_block_tile<N, P>& g, L label, int line = __builtin_LINE()) {
    static_assert(std::is_integral<L>::value || std::is_pointer<L>::value,
                  "labeled_partition predicate must be an integral or pointer type");
    static_assert(N <= 32, "Labeled partition is available only for tiles of size smaller or equal to 32");
    if constexpr (std::is_same<L, bool>::value) return details::binary_partition(g, label, line);
    else return details::labeled_partition(g, label, line);
}

// The whole grid. sync() is a grid-wide barrier; it needs a cooperative launch
// (cudaLaunchCooperativeKernel / cudaLaunchKernelEx with the cooperative attribute), which runs
// every block at once - elsewhere it is a KernelFault naming the line, and is_valid() is false.
class grid_group {
  public:
    void sync(int line = __builtin_LINE()) const { ::vf::grid_sync(line); }
    unsigned long long thread_rank() const { return block_rank() * details::block_size() + details::block_rank(); }
    unsigned long long size() const { return num_blocks() * details::block_size(); }
    unsigned long long num_threads() const { return size(); }
    unsigned long long block_rank() const {
        return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    }
    unsigned long long num_blocks() const { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z; }
    dim3 group_dim() const { return blockDim; }
    dim3 dim_blocks() const { return gridDim; }
    dim3 block_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    bool is_valid() const { return ::vf::in_cooperative_grid(); }
};
inline grid_group this_grid() { return grid_group(); }

template <class G> inline void sync(const G& g, int line = __builtin_LINE()) { g.sync(line); }
template <class G> inline auto thread_rank(const G& g) -> decltype(g.thread_rank()) { return g.thread_rank(); }
template <class G> inline auto group_size(const G& g) -> decltype(g.num_threads()) { return g.num_threads(); }
template <class G> inline auto num_threads(const G& g) -> decltype(g.num_threads()) { return g.num_threads(); }

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
#include "../vf_macro_guard_end.h"
