// veriforge CPU runtime: region execution of kernels with barriers and warp collectives.
//
// The front end's region pass (veriforge/cuda/cpu/regions.py) emits, at the top of each kernel it
// can split, a *block function*: `if (::vf::region_begin(b)) { ...; ::vf::region_end(); return; }`.
// The first call of the kernel in a block (the thread loop's first thread) runs it and so the whole
// block: the kernel's statements between barriers become region loops over the block's threads
// (`region_loop`), values that live across a barrier sit in per-thread arrays (`region_scratch`),
// conditions and loops that contain barriers are evaluated per thread into masks, and warp
// collectives are computed lane by lane from operands every lane of the warp stored first
// (`RegionWarp`). No fiber is switched; blocks still run in parallel across the worker threads.
// Kernels the pass cannot split keep the fiber path (vf_core.h thread_loop + scheduler.cpp).
#pragma once

// The loop that follows has no dependence between iterations (threads between two barriers).
#if defined(__clang__)
#define VF_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#else
#define VF_IVDEP _Pragma("GCC ivdep")
#endif

namespace vf {

struct RegionBlock {
    unsigned n, bx, by, bz;
    bool one_dim, reverse;
};

// True (once per block, for the block's first thread) when the block may run as region loops.
inline bool region_begin(RegionBlock& b) {
    BlockCursor& c = block_cursor;
    if (!c.regions) return false;
    c.regions = false;
    c.in_regions = true;
    b.n = c.n;
    b.bx = c.bx;
    b.by = c.by;
    b.bz = c.n / (c.bx * c.by);
    b.one_dim = c.one_dim;
    b.reverse = c.reverse;
    return true;
}
// The block function ran every thread: the thread loop that called it stops (it sees `waited`,
// and waited_thread_exit() moves its cursor past the block's last thread).
inline void region_end() {
    BlockCursor& c = block_cursor;
    c.in_regions = false;
    c.region_done = true;
    c.region_ran = true;
    c.waited = true;
}

// One region: `body(threadIdx, t)` for every thread t of the block, in index order (x fastest), or
// in reverse order for the race probe (Module.race_check, vf::set_reverse_order). Between two
// barriers the threads of a block are independent - a thread reading what another writes in the
// same region is a data race, undefined in CUDA - so the loops carry `ivdep`: g++ may vectorise
// them without proving that the kernel's pointers do not alias.
// At most 1024 threads per block, and `int` loop counters: g++ then sees `int t = threadIdx.x` as
// the counter itself, and accesses indexed by it can be vectorised (an unsigned counter converted
// to int may wrap, which stops the vectoriser).
#define VF_REGION_LIMITS(b)                                               \
    do {                                                                  \
        if ((b).n > 1024u || (b).bx > 1024u) __builtin_unreachable();     \
    } while (0)

template <class Body> inline void region_loop(const RegionBlock& b, Body&& body) {
    VF_REGION_LIMITS(b);
    const unsigned n = b.n;
    if (__builtin_expect(!b.reverse, 1)) {
        if (b.one_dim) {
VF_IVDEP
            for (int t = 0; t < (int)n; ++t) body(uint3{(unsigned)t, 0, 0}, (unsigned)t);
        } else {
            unsigned row = 0;
            for (unsigned z = 0; z < b.bz; ++z)
                for (unsigned y = 0; y < b.by; ++y, row += b.bx)
VF_IVDEP
                    for (int x = 0; x < (int)b.bx; ++x) body(uint3{(unsigned)x, y, z}, row + (unsigned)x);
        }
    } else {
        for (unsigned q = 0; q < n; ++q) {
            unsigned t = n - 1 - q, rest = t / b.bx;
            body(uint3{t % b.bx, rest % b.by, rest / b.by}, t);
        }
    }
}

// A region of warp-synchronous code (a kernel with accesses through volatile pointers, kept in
// lockstep by regions.py): such loops hardly vectorise, so one loop over the block's threads,
// forward (x fastest) or in reverse for the race probe, instead of region_loop's three with their
// vectorised copies - much less code to compile for the many small regions of such kernels, often
// in many template instances. `ivdep` as in region_loop: a region's threads are independent, and a
// statement accessing volatile memory never shares a region with another that it depends on.
template <class Body> inline void region_loop_plain(const RegionBlock& b, Body&& body) {
    VF_REGION_LIMITS(b);
    const unsigned n = b.n, bx = b.bx, by = b.by;
    unsigned x = 0, y = 0, z = 0;
VF_IVDEP
    for (int q = 0; q < (int)n; ++q) {
        uint3 idx{x, y, z};
        unsigned t = (unsigned)q;
        if (__builtin_expect(b.reverse, 0)) {
            t = n - 1 - t;
            unsigned rest = t / bx;
            idx = uint3{t % bx, rest % by, rest / by};
        }
        body(idx, t);
        if (++x == bx) {
            x = 0;
            if (++y == by) {
                y = 0;
                ++z;
            }
        }
    }
}

// Thread ranges. A comparison of the thread's index with a value that is the same for every
// thread (`tid < s`, `(int)threadIdx.x >= d`, in the comparison's own types) is monotonic in the
// index: true then false, or false then true. region_breakpoint: how many of the indices
// [0, limit) come before the change (the number where `less` - a <-type comparison - is true, or
// where a >-type one is false). region_true_range: narrows [lo, hi) to where `pred` holds.
template <class P> inline unsigned region_flip(unsigned limit, P&& pred, bool first) {
    unsigned lo = 0, hi = limit;  // pred(lo) == first; the first index that differs is in (lo, hi]
    while (hi - lo > 1) {
        unsigned mid = lo + (hi - lo) / 2;
        if (pred(mid) == first) lo = mid;
        else hi = mid;
    }
    return hi;
}
template <class P> inline long long region_breakpoint(unsigned limit, P&& pred, bool less) {
    if (limit == 0) return 0;
    bool first = pred(0u);
    if (first != less) return less ? 0 : limit;  // the comparison never changes over [0, limit)
    return region_flip(limit, pred, first);
}
template <class P> inline void region_true_range(unsigned limit, P&& pred, long long& lo, long long& hi) {
    if (limit == 0) return;
    bool first = pred(0u);
    unsigned at = region_flip(limit, pred, first);
    if (first) {
        if (at < hi) hi = at;
    } else if (at > lo) {
        lo = at;
    }
}

// A region that is one `if (threadIdx.x < s) ...` (or >, <=, >=, and && of them) only runs the
// threads whose threadIdx.x lies in [lo, hi) - those the condition selects, which the body still
// tests. `linear`: the bounds are on the thread's linear rank (thread_rank()), only narrowed for
// one-dimensional blocks.
template <class Body>
inline void region_range(const RegionBlock& b, long long lo, long long hi, bool linear, Body&& body) {
    if (linear && !b.one_dim) {
        region_loop(b, body);
        return;
    }
    VF_REGION_LIMITS(b);
    const long long width = b.bx;
    const unsigned x0 = (unsigned)(lo < 0 ? 0 : lo > width ? width : lo);
    const unsigned x1 = (unsigned)(hi < 0 ? 0 : hi > width ? width : hi);
    if (x0 >= x1) return;
    if (__builtin_expect(!b.reverse, 1)) {
        if (b.one_dim) {
VF_IVDEP
            for (int t = (int)x0; t < (int)x1; ++t) body(uint3{(unsigned)t, 0, 0}, (unsigned)t);
        } else {
            unsigned row = 0;
            for (unsigned z = 0; z < b.bz; ++z)
                for (unsigned y = 0; y < b.by; ++y, row += b.bx)
VF_IVDEP
                    for (int x = (int)x0; x < (int)x1; ++x) body(uint3{(unsigned)x, y, z}, row + (unsigned)x);
        }
    } else {
        for (unsigned r = b.by * b.bz; r-- > 0;) {
            unsigned y = r % b.by, z = r / b.by;
            for (unsigned x = x1; x-- > x0;) body(uint3{x, y, z}, r * b.bx + x);
        }
    }
}

// A region whose comparisons of the thread's index all change at index `at`: `below` (compiled with
// their values for the indices before `at`) runs those threads, `above` the others - two
// branch-free loops instead of one with a test per thread.
template <class Below, class Above>
inline void region_split(const RegionBlock& b, long long at, bool linear, Below&& below, Above&& above) {
    if ((linear && !b.one_dim) || b.reverse) {  // the race probe's reverse order: thread by thread
        region_loop(b, [&](uint3 idx, unsigned t) {
            if ((long long)(linear ? t : idx.x) < at) below(idx, t);
            else above(idx, t);
        });
        return;
    }
    VF_REGION_LIMITS(b);
    const long long width = b.bx;
    const unsigned m = (unsigned)(at < 0 ? 0 : at > width ? width : at);
    if (b.one_dim) {
VF_IVDEP
        for (int t = 0; t < (int)m; ++t) below(uint3{(unsigned)t, 0, 0}, (unsigned)t);
VF_IVDEP
        for (int t = (int)m; t < (int)b.n; ++t) above(uint3{(unsigned)t, 0, 0}, (unsigned)t);
    } else {
        unsigned row = 0;
        for (unsigned z = 0; z < b.bz; ++z)
            for (unsigned y = 0; y < b.by; ++y, row += b.bx) {
VF_IVDEP
                for (int x = 0; x < (int)m; ++x) below(uint3{(unsigned)x, y, z}, row + (unsigned)x);
VF_IVDEP
                for (int x = (int)m; x < (int)b.bx; ++x) above(uint3{(unsigned)x, y, z}, row + (unsigned)x);
            }
    }
}

// Carves the block function's per-thread arrays out of the worker's scratch.
struct RegionArena {
    char* p;
    template <class T> T* take(unsigned n) {
        T* out = reinterpret_cast<T*>(p);
        p += ((size_t)n * sizeof(T) + 63) & ~size_t(63);
        return out;
    }
};
template <class T> constexpr size_t region_bytes(unsigned n) { return ((size_t)n * sizeof(T) + 63) & ~size_t(63); }

// A variable that lives across a barrier is a reference into its per-thread array; its declaration
// initialises the slot from a copy made with the user's own declarator (any initializer form).
template <class T, class U> inline void region_store(T& slot, const U& value) {
    static_assert(sizeof(T) == sizeof(U), "region slot and initializer differ in size");
    std::memcpy(const_cast<void*>(static_cast<const volatile void*>(std::addressof(slot))),
                static_cast<const void*>(std::addressof(value)), sizeof(T));
}

inline void region_mask_init(unsigned char* m, const unsigned char* parent, unsigned n) {
    if (parent) std::memcpy(m, parent, n);
    else std::memset(m, 1, n);
}

// ---- warp collectives -----------------------------------------------------------------------
// One collective call site. The region before it stores every active lane's operand (`put`, the
// site's epoch marks who did); the region after it computes each lane's result from the stored
// operands (`shfl` ...), so a whole warp's collective costs no context switch. Lanes that exited
// do not take part (as with fibers). A lane named in the mask that has not exited but does not reach
// the call (it took another path) is a fault - with fibers the warp would wait for it (a deadlock).
inline unsigned region_tile_mask(unsigned t, unsigned n) {
    unsigned base = (t & 31u) & ~(n - 1u);
    return n >= 32 ? 0xffffffffu : ((1u << n) - 1u) << base;
}
inline unsigned region_tile_ballot(unsigned b, unsigned t, unsigned n) {
    return n >= 32 ? b : (b >> ((t & 31u) & ~(n - 1u))) & ((1u << n) - 1u);
}
inline bool region_any(const unsigned char* m, unsigned n) {
    for (unsigned t = 0; t < n; ++t)
        if (m[t]) return true;
    return false;
}
[[noreturn]] void region_fault_at(const RegionBlock& b, const char* what, int line, int thread, int other);
// A condition that decides whether threads reach a barrier differs between two threads.
[[noreturn]] inline void region_divergence(const RegionBlock& b, int first, int other, int line) {
    region_fault_at(b, "divergent __syncthreads()", line, first, other);
}

struct RegionWarp {
    static constexpr unsigned kPieces = 4;  // operands of up to 32 bytes (double4), in 8-byte pieces
    uint64_t* val;     // piece 0 per thread
    uint64_t* wide;    // pieces 1..3 per thread (only for operands of more than 8 bytes)
    int* arg;          // source lane / delta / xor mask
    int* width;
    unsigned* mask;
    unsigned* seen;    // == epoch: the thread stored its operand this round
    unsigned* wseen;   // per warp: == epoch when the summary below is this round's
    uint64_t* wres;    // per warp: ballot bits / reduction
    unsigned* wlive;   // per warp: lanes that took part
    unsigned* wrseen;  // per warp: == epoch when wred holds this round's reduction
    uint64_t* wred;
    const unsigned char* alive;  // per thread: not exited (null: no thread exits)
    const RegionBlock* block;
    const char* name;
    const char* next;  // where lanes that skip the call go next (for the deadlock message)
    int line;
    unsigned epoch, n;

    static size_t bytes(unsigned n) {
        unsigned w = (n + 31) / 32;
        return region_bytes<uint64_t>(n) + region_bytes<uint64_t>(n * (kPieces - 1)) + 4 * region_bytes<int>(n) +
               3 * region_bytes<unsigned>(w) + 2 * region_bytes<uint64_t>(w);
    }
    void init(RegionArena& a, const RegionBlock& b, const unsigned char* alive_mask, const char* what, int at,
              const char* then = "") {
        next = then;
        block = &b;
        n = b.n;
        unsigned w = (n + 31) / 32;
        val = a.take<uint64_t>(n);
        wide = a.take<uint64_t>(n * (kPieces - 1));
        arg = a.take<int>(n);
        width = a.take<int>(n);
        mask = a.take<unsigned>(n);
        seen = a.take<unsigned>(n);
        wseen = a.take<unsigned>(w);
        wres = a.take<uint64_t>(w);
        wlive = a.take<unsigned>(w);
        wrseen = a.take<unsigned>(w);
        wred = a.take<uint64_t>(w);
        std::memset(seen, 0, sizeof(unsigned) * n);
        std::memset(wseen, 0, sizeof(unsigned) * w);
        std::memset(wrseen, 0, sizeof(unsigned) * w);
        alive = alive_mask;
        name = what;
        line = at;
        epoch = 0;
    }
    // A new round (before the region that stores the operands).
    void begin() { ++epoch; }

    void arrive(unsigned t, unsigned m) {
        if (__builtin_expect(!((m >> (t & 31u)) & 1u), 0)) bad_mask(t, m);
        mask[t] = m;
        seen[t] = epoch;
    }
    [[noreturn]] void bad_mask(unsigned t, unsigned m) const;
    template <class T> void put(unsigned t, unsigned m, const T& v, int a = 0, int w = 32) {
        static_assert(sizeof(T) <= 8 * kPieces, "warp collectives of the CPU runtime move at most 32 bytes");
        if constexpr (sizeof(T) <= 8) {
            uint64_t b = 0;
            std::memcpy(&b, static_cast<const void*>(std::addressof(v)), sizeof(T));
            val[t] = b;
        } else {
            uint64_t b[kPieces] = {0, 0, 0, 0};
            std::memcpy(b, static_cast<const void*>(std::addressof(v)), sizeof(T));
            val[t] = b[0];
            for (unsigned k = 1; k < (sizeof(T) + 7) / 8; ++k) wide[(size_t)t * (kPieces - 1) + k - 1] = b[k];
        }
        arg[t] = a;
        width[t] = w;
        arrive(t, m);
    }
    void put_pred(unsigned t, unsigned m, int pred) {
        val[t] = pred != 0;
        arrive(t, m);
    }
    template <class T> void put_reduce(unsigned t, unsigned m, T v) {
        if constexpr (std::is_signed_v<T>) val[t] = (uint64_t)(int64_t)v;
        else val[t] = (uint64_t)v;
        arrive(t, m);
    }
    void put_none(unsigned t, unsigned m) {
        val[t] = 0;
        arrive(t, m);
    }

    template <class T> T value(unsigned t) const {
        alignas(T) unsigned char buf[sizeof(T)];
        if constexpr (sizeof(T) <= 8) {
            std::memcpy(buf, &val[t], sizeof(T));
        } else {
            uint64_t b[kPieces] = {val[t], 0, 0, 0};
            for (unsigned k = 1; k < (sizeof(T) + 7) / 8; ++k) b[k] = wide[(size_t)t * (kPieces - 1) + k - 1];
            std::memcpy(buf, b, sizeof(T));
        }
        return *std::launder(reinterpret_cast<T*>(buf));
    }

    // Lanes of t's warp that took part and the OR of their predicates, computed once per warp and
    // round; then every live lane a taking-part lane's mask names must have taken part.
    [[noreturn]] void missing_lane(unsigned t, unsigned lane) const;
    void summary(unsigned t) {
        unsigned warp = t >> 5;
        if (__builtin_expect(wseen[warp] == epoch, 1)) return;
        unsigned live = 0, bits = 0, want = 0, base = warp * 32;
        for (unsigned l = 0; l < 32 && base + l < n; ++l)
            if (seen[base + l] == epoch) {
                live |= 1u << l;
                want |= mask[base + l];
                if (val[base + l]) bits |= 1u << l;
            }
        wlive[warp] = live;
        wres[warp] = bits;
        wseen[warp] = epoch;
        unsigned exist = base + 32 <= n ? 0xffffffffu : (1u << (n - base)) - 1u;
        unsigned missing = want & exist & ~live;
        if (__builtin_expect(missing != 0, 0)) {
            for (unsigned l = 0; l < 32; ++l)
                if (((missing >> l) & 1u) && (!alive || alive[base + l])) {
                    unsigned asker = base;
                    while (!(seen[asker] == epoch && ((mask[asker] >> l) & 1u))) ++asker;
                    missing_lane(asker, l);
                }
        }
    }

    // kShflIdx / kShflUp / kShflDown / kShflXor, as complete_group() in scheduler.cpp computes them.
    template <class T> T shfl(unsigned t, int op) {
        summary(t);
        unsigned lane = t & 31u, base = t - lane;
        int w = width[t];
        if (w <= 0 || w > 32 || (w & (w - 1))) w = 32;
        unsigned seg = lane & ~unsigned(w - 1);
        int src = (int)lane;
        int a = arg[t];
        switch (op) {
            case kShflIdx: src = (int)seg + (a & (w - 1)); break;
            case kShflUp: src = (int)lane - a; if (src < (int)seg) src = (int)lane; break;
            case kShflDown: src = (int)lane + a; if (src >= (int)(seg + w)) src = (int)lane; break;
            default: src = (int)(lane ^ (unsigned)a); if (src >= (int)(seg + w)) src = (int)lane; break;
        }
        unsigned s = base + (unsigned)src;
        return value<T>(s < n && seen[s] == epoch ? s : t);
    }
    unsigned ballot(unsigned t) {
        summary(t);
        return (unsigned)wres[t >> 5] & mask[t];
    }
    int any(unsigned t) { return ballot(t) != 0; }
    int all(unsigned t) {
        summary(t);
        unsigned m = mask[t] & wlive[t >> 5];
        return ((unsigned)wres[t >> 5] & m) == m;
    }
    unsigned active(unsigned t) {
        summary(t);
        return wlive[t >> 5];
    }
    void syncwarp(unsigned t) { summary(t); }
    // __reduce_*_sync over the lanes that took part (op: the CollectiveOp).
    template <class R> R reduce(unsigned t, int op) {
        summary(t);
        unsigned warp = t >> 5, base = t & ~31u;
        if (wrseen[warp] == epoch) return (R)wred[warp];
        uint64_t red = op == kReduceAnd ? ~uint64_t(0) : 0;
        bool first = true;
        for (unsigned l = 0; l < 32 && base + l < n; ++l) {
            if (seen[base + l] != epoch) continue;
            uint64_t v = val[base + l];
            switch (op) {
                case kReduceAddU: case kReduceAddI: red += v; break;
                case kReduceOr: red |= v; break;
                case kReduceXor: red ^= v; break;
                case kReduceAnd: red &= v; break;
                case kReduceMinI: if (first || (int64_t)v < (int64_t)red) red = v; break;
                case kReduceMaxI: if (first || (int64_t)v > (int64_t)red) red = v; break;
                case kReduceMinU: if (first || (uint32_t)v < (uint32_t)red) red = v; break;
                default: if (first || (uint32_t)v > (uint32_t)red) red = v; break;  // kReduceMaxU
            }
            first = false;
        }
        wred[warp] = red;
        wrseen[warp] = epoch;
        return (R)red;
    }
};

// __syncthreads_count / _and / _or: a barrier whose result folds every taking-part thread's predicate.
struct RegionBarrierReduce {
    unsigned count, taking;
    void begin() { count = taking = 0; }
    void put(int pred) {
        ++taking;
        count += pred != 0;
    }
    int result(int op) const { return op == 0 ? (int)count : op == 1 ? (count == taking) : (count != 0); }
};

}  // namespace vf
