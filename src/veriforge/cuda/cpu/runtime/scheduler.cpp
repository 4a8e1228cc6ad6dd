// veriforge CPU runtime: the block scheduler.
//
// Blocks of a grid are spread over a pool of OS worker threads (all cores). Inside a block, CUDA
// threads run on fibers, but a fiber is only *consumed* when a thread blocks: a fiber runs
// threads one after another in a plain loop, and only when the current thread waits at a
// barrier or a warp collective does the scheduler hand the next, not-yet-started thread to a new
// fiber. So a kernel without synchronisation runs as a loop on one stack (near native speed),
// a kernel with warp operations only needs ~32 live fibers, and a kernel with __syncthreads one
// per thread - the cheapest strategy is chosen dynamically, per launch, without static analysis.
//
// Barrier misuse never hangs: when no thread can make progress the scheduler explains why
// (divergent barriers, warp collectives that can never complete) and fails the launch with the
// kernel name and source line. Threads that exited no longer take part in __syncthreads(), as on
// Volta and later GPUs.
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <memory>
#include <new>
#include <type_traits>

#include "vf_core.h"
#include "vf_regions.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define VF_ASAN 1
#else
#define VF_ASAN 0
#endif

#if defined(__x86_64__) && !defined(VF_FORCE_UCONTEXT)
#define VF_ASM_SWITCH 1
extern "C" void vf_switch_context(void** save_sp, void* to_sp);
extern "C" void vf_fiber_trampoline();
#else
#define VF_ASM_SWITCH 0
#include <ucontext.h>
extern "C" void fiber_main_ucontext(unsigned lo, unsigned hi);
#endif

namespace vf {
namespace {

constexpr unsigned kMaxBlockThreads = 1024;
constexpr int kMaxGroupsPerWarp = 8;

enum State : uint8_t { kUnstarted, kRunning, kAtBarrier, kAtWarpOp, kExited, kAtEvent };

struct Fiber {
#if VF_ASM_SWITCH
    void* sp = nullptr;
#else
    ucontext_t uc;
#endif
    char* stack = nullptr;  // lowest usable address (above the guard page)
    size_t size = 0;
    bool fresh = true;      // needs an initial frame before it can be entered
    unsigned color = 0;     // start of the stack below its top, in 16-byte units (see init_fiber)
    bool guardless = false; // carved from a shared chunk without a guard page: a canary instead
};

// A CUDA thread the scheduler knows about: one that waited at least once, or that exited before
// another thread of the block waited (the thread loop does no bookkeeping of its own: threads are
// "materialised" here lazily, by reconcile(), when the scheduler next needs an exact picture).
struct Thread {
    uint64_t epoch;  // == Worker::epoch: materialised in the block being run; else unstarted
    uint3 idx;
    unsigned linear;
    State state;
    Fiber* fiber;
    int line;  // where it waits
    // warp collective operands and results
    int op;
    unsigned mask;
    uint64_t val;
    int arg, width;
    uint64_t out;
    int pred_out;
    // parked by wait_on() (cuda::barrier, pipeline stages): until wake_all(event)
    const void* event;
    const char* event_what;
};

struct WarpGroup {
    bool active;
    int op;
    unsigned mask;
    unsigned arrived;
    int line;
};

const char* op_name(int op) {
    switch (op) {
        case kShflIdx: return "__shfl_sync";
        case kShflUp: return "__shfl_up_sync";
        case kShflDown: return "__shfl_down_sync";
        case kShflXor: return "__shfl_xor_sync";
        case kBallot: return "__ballot_sync";
        case kAny: return "__any_sync";
        case kAll: return "__all_sync";
        case kSyncWarp: return "__syncwarp";
        case kMatchAny: return "__match_any_sync";
        case kMatchAll: return "__match_all_sync";
        case kReduceAddU: case kReduceAddI: return "__reduce_add_sync";
        case kReduceMinU: case kReduceMinI: return "__reduce_min_sync";
        case kReduceMaxU: case kReduceMaxI: return "__reduce_max_sync";
        case kReduceAnd: return "__reduce_and_sync";
        case kReduceOr: return "__reduce_or_sync";
        case kReduceXor: return "__reduce_xor_sync";
        case kActiveMask: return "__activemask";
        default: return "warp collective";
    }
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

size_t fiber_stack_size() {
    static size_t size = [] {
        const char* env = getenv("VF_FIBER_STACK_KB");
        size_t kb = env ? strtoul(env, nullptr, 10) : (VF_ASAN ? 1024 : 256);
        return (kb < 16 ? 16 : kb) * 1024;
    }();
    return size;
}

struct Worker {
#if VF_ASM_SWITCH
    void* sched_sp = nullptr;
#else
    ucontext_t sched_uc;
#endif
    const void* sched_bottom = nullptr;
    size_t sched_size = 0;
    std::vector<Fiber*> all_fibers, free_fibers;
    const GridSpec* spec = nullptr;
    // the block being run (its cursor - next thread to start, running thread - is block_cursor)
    Thread threads[kMaxBlockThreads];
    unsigned n = 0, exited = 0, nwarps = 0;
    uint64_t epoch = 0;         // incremented per block: Thread::epoch says which are materialised
    unsigned accounted = 0;     // run-order positions below this are materialised
    bool any_materialised = false;
    bool in_block = false;      // a CUDA thread of this worker is running (or parked)
    Fiber* running = nullptr;   // the fiber now running a CUDA thread
    Thread* current = nullptr;  // the running thread while block_cursor.waited (it is materialised)
    bool reverse = false;
    // Threads released from a barrier / warp collective, FIFO. A thread is queued at most once.
    Thread* runnable[kMaxBlockThreads];
    unsigned run_head = 0, run_count = 0;
    // The barrier being gathered: who waits (in arrival order), where, and the running tally of
    // __syncthreads_count/and/or predicates (results in bar_results once released).
    unsigned bar_arrived = 0;
    Thread* bar_waiters[kMaxBlockThreads];
    unsigned bar_nwait = 0;
    Thread* event_waiters[kMaxBlockThreads];  // parked by wait_on(), any order
    unsigned event_nwait = 0;
    int bar_line = 0;
    bool bar_diverged = false;
    int bar_count = 0, bar_all = 1, bar_any = 0;
    int bar_results[3] = {0, 0, 0};
    unsigned warp_exited[kMaxBlockThreads / 32];
    unsigned warp_groups[kMaxBlockThreads / 32];  // active collectives per warp (fast path: 0)
    unsigned warp_amask[kMaxBlockThreads / 32];   // of which __activemask() rendezvous
    WarpGroup groups[kMaxBlockThreads / 32][kMaxGroupsPerWarp];
    bool faulted = false;
    std::string fault;
    int fault_code = 719;  // cudaErrorLaunchFailure; cudaErrorAssert (710) for a failed assert()
    char* dyn_smem = nullptr;
    size_t dyn_smem_size = 0;
    struct GridBarrier* grid = nullptr;  // a cooperative launch: its grid-wide barrier
    bool bar_grid = false;               // the barrier being gathered is a this_grid().sync()

    Worker() {
        pthread_attr_t attr;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            void* addr;
            size_t size;
            pthread_attr_getstack(&attr, &addr, &size);
            sched_bottom = addr;
            sched_size = size;
            pthread_attr_destroy(&attr);
        }
    }
};

thread_local Worker* tl_worker = nullptr;

Worker* this_worker() {
    if (!tl_worker) tl_worker = new Worker();  // lives as long as its OS thread's process
    return tl_worker;
}

void fiber_main(void* arg);

#if VF_ASM_SWITCH
inline void switch_stacks(void** save, void* to, const void* to_bottom, size_t to_size) {
#if VF_ASAN
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, to_bottom, to_size);
    vf_switch_context(save, to);
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
    (void)to_bottom;
    (void)to_size;
    vf_switch_context(save, to);
#endif
}
#endif

void init_fiber(Fiber* f) {
#if VF_ASM_SWITCH
    // Frame popped by vf_switch_context: r15 r14 r13 r12 rbx rbp, then `ret` into the trampoline.
    // Stacks are mmap'd at page multiples, so their tops would all share the same few L1 cache
    // sets (a block with barriers cycles through hundreds of them): start each one at a
    // different offset below the top.
    uintptr_t top = ((reinterpret_cast<uintptr_t>(f->stack) + f->size) & ~uintptr_t(15)) - 16 * uintptr_t(f->color);
    void** sp = reinterpret_cast<void**>(top - 72);  // after the pops and ret: rsp = top - 16
    sp[0] = nullptr;                                          // r15
    sp[1] = nullptr;                                          // r14
    sp[2] = reinterpret_cast<void*>(&fiber_main);             // r13: entry
    sp[3] = f;                                                // r12: argument
    sp[4] = nullptr;                                          // rbx
    sp[5] = nullptr;                                          // rbp
    sp[6] = reinterpret_cast<void*>(&vf_fiber_trampoline);    // return address
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = f->size;
    f->uc.uc_link = nullptr;
    uintptr_t p = reinterpret_cast<uintptr_t>(f);
    makecontext(&f->uc, reinterpret_cast<void (*)()>(&fiber_main_ucontext), 2, (unsigned)(p & 0xffffffffu),
                (unsigned)(p >> 32));
#endif
    f->fresh = false;
}

// Every fiber stack normally has its own mapping and a guard page: two of the kernel's memory
// mappings (vm.max_map_count, 65530 by default). A cooperative grid keeps every thread of every
// resident block parked at once (up to 16 SMs x 2048 threads), which would exceed that; beyond
// kGuardedFibers fibers, stacks are carved from shared chunks without guard pages, and a canary
// at the low end of each stack, checked whenever its thread waits or finishes, reports an overflow.
constexpr unsigned kGuardedFibers = 12288;
constexpr unsigned kChunkFibers = 64;
constexpr uint64_t kCanary = 0x5646535441434b21ull;  // "VFSTACK!"
constexpr unsigned kCanaryWords = 8;
std::atomic<unsigned> g_guarded_fibers{0};

Fiber* new_fiber() {
    size_t size = fiber_stack_size();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    Fiber* f = new Fiber();
    if (g_guarded_fibers.fetch_add(1, std::memory_order_relaxed) < kGuardedFibers) {
        void* mem = mmap(nullptr, size + page, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (mem == MAP_FAILED) {
            fprintf(stderr, "veriforge: cannot allocate a fiber stack (%zu bytes)\n", size);
            abort();
        }
        mprotect(mem, page, PROT_NONE);  // guard page: a stack overflow faults instead of corrupting
        f->stack = static_cast<char*>(mem) + page;
    } else {
        static thread_local char* chunk = nullptr;
        static thread_local unsigned left = 0;
        if (left == 0) {
            void* mem = mmap(nullptr, size * kChunkFibers, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
            if (mem == MAP_FAILED) {
                fprintf(stderr, "veriforge: cannot allocate fiber stacks (%zu bytes)\n", size * kChunkFibers);
                abort();
            }
            chunk = static_cast<char*>(mem);
            left = kChunkFibers;
        }
        f->stack = chunk;
        chunk += size;
        left--;
        f->guardless = true;
        uint64_t* canary = reinterpret_cast<uint64_t*>(f->stack);
        for (unsigned i = 0; i < kCanaryWords; ++i) canary[i] = kCanary;
    }
    f->size = size;
    static std::atomic<unsigned> created{0};
    f->color = (created.fetch_add(1, std::memory_order_relaxed) * 21u) % 256u;  // 0..4 KB, 336-byte steps
    return f;
}

__attribute__((noinline, cold)) void check_canary(const Fiber* f) {
    const uint64_t* canary = reinterpret_cast<const uint64_t*>(f->stack);
    for (unsigned i = 0; i < kCanaryWords; ++i)
        if (canary[i] != kCanary) {
            const char* k = tl_worker && tl_worker->spec ? tl_worker->spec->kernel_name : "?";
            fprintf(stderr, "veriforge: kernel '%s': a CUDA thread overflowed its %zu KB stack (raise it with "
                    "VF_FIBER_STACK_KB)\n", k, f->size / 1024);
            fflush(stderr);
            abort();
        }
}

// Scheduler -> fiber.
void enter_fiber(Worker* w, Fiber* f) {
    if (f->fresh) init_fiber(f);
#if VF_ASM_SWITCH
    switch_stacks(&w->sched_sp, f->sp, f->stack, f->size);
#else
    swapcontext(&w->sched_uc, &f->uc);
#endif
}

// Fiber -> scheduler. Returns when the scheduler resumes this fiber.
void leave_fiber(Worker* w, Fiber* f) {
    if (__builtin_expect(f->guardless, 0)) check_canary(f);
#if VF_ASM_SWITCH
    switch_stacks(&f->sp, w->sched_sp, w->sched_bottom, w->sched_size);
#else
    swapcontext(&f->uc, &w->sched_uc);
#endif
}

[[noreturn]] void raise_fault(Worker* w, std::string msg, int code = 719) {
    if (!w->faulted) {
        w->faulted = true;
        w->fault = std::move(msg);
        w->fault_code = code;
    }
    Fiber* f = w->in_block ? w->running : nullptr;
    if (f) leave_fiber(w, f);  // never resumed: the block is abandoned
    fprintf(stderr, "veriforge: internal error: a faulted fiber was resumed\n");
    abort();
}

void set_thread_index(Thread* t, unsigned linear) {
    const BlockCursor& c = block_cursor;
    t->linear = linear;
    if (c.one_dim) {
        t->idx = uint3{linear, 0, 0};
    } else {
        unsigned x = linear % c.bx, rest = linear / c.bx;
        t->idx = uint3{x, rest % c.by, rest / c.by};
    }
}

// Brings the scheduler's picture of the block up to date with the thread loops: every thread
// started since the last call that the scheduler does not know yet has exited - except, when
// `caller_running`, the running thread, which is entering the scheduler for the first time (it
// can only be the latest started: a loop only moves on to another thread when its thread
// returns or waits, and waiting enters the scheduler).
// The linear index of the running thread.
inline unsigned running_linear() {
    const BlockCursor& c = block_cursor;
    return threadIdx.x + c.bx * (threadIdx.y + c.by * threadIdx.z);
}

__attribute__((noinline)) void reconcile(Worker* w, bool caller_running) {
    BlockCursor& c = block_cursor;
    unsigned cur = 0;
    if (caller_running) {
        cur = running_linear();
        // Entering for the first time: its loop has started exactly the threads up to it (the
        // loop keeps its position in a register).
        if (w->threads[cur].epoch != w->epoch) c.next = (c.reverse ? c.n - 1 - cur : cur) + 1;
    }
    unsigned end = c.next;
    if (!caller_running && !w->any_materialised) {
        // No thread of the block ever waited and its loop is done: all of them simply ran.
        w->exited += end - w->accounted;
        w->accounted = end;
        return;
    }
    for (unsigned q = w->accounted; q < end; ++q) {
        unsigned lin = c.reverse ? c.n - 1 - q : q;
        Thread* t = &w->threads[lin];
        if (t->epoch == w->epoch) continue;
        t->epoch = w->epoch;
        set_thread_index(t, lin);
        if (caller_running && lin == cur) {
            t->state = kRunning;
            t->fiber = w->running;
            w->any_materialised = true;
        } else {
            t->state = kExited;
            w->exited++;
            w->warp_exited[lin >> 5] |= 1u << (lin & 31);
        }
    }
    w->accounted = end;
}

// The running CUDA thread enters the scheduler (barrier, warp collective, yield).
// While `waited` is set the running thread is materialised and is w->current, and no thread loop
// has started threads since (a loop only starts one with `waited` clear).
inline Thread* enter_scheduler(Worker* w) {
    if (__builtin_expect(block_cursor.waited, 1)) return w->current;
    Thread* t = &w->threads[running_linear()];
    if (t->epoch != w->epoch || w->accounted != block_cursor.next) reconcile(w, true);
    block_cursor.waited = true;
    w->current = t;
    return t;
}

// Parked at a barrier or warp collective (only meaningful for a materialised thread).
inline bool parked(const Worker* w, const Thread& t) {
    return t.epoch == w->epoch && (t.state == kAtBarrier || t.state == kAtWarpOp || t.state == kAtEvent);
}

inline unsigned existing_lanes(const Worker* w, unsigned warp) {
    unsigned first = warp * 32;
    if (first + 32 <= w->n) return 0xffffffffu;
    return (1u << (w->n - first)) - 1u;
}

inline bool group_complete(const Worker* w, unsigned warp, const WarpGroup& g) {
    if (g.op == kActiveMask) {
        // Converged = every other live lane of the warp is parked (at a barrier or another
        // collective) or gone; the lanes that reached this __activemask() together form the mask.
        unsigned live = existing_lanes(w, warp) & ~w->warp_exited[warp] & ~g.arrived;
        const Thread* base = &w->threads[warp * 32];
        for (unsigned l = 0; l < 32; ++l)
            if (((live >> l) & 1u) && !parked(w, base[l])) return false;
        return true;
    }
    unsigned required = g.mask & existing_lanes(w, warp) & ~w->warp_exited[warp];
    return (g.arrived & required) == required;
}

inline void push_runnable(Worker* w, Thread* t) {
    t->state = kRunning;
    w->runnable[(w->run_head + w->run_count++) & (kMaxBlockThreads - 1)] = t;
}

void complete_group(Worker* w, unsigned warp, WarpGroup& g, Thread* self) {
    Thread* base = &w->threads[warp * 32];
    unsigned arrived = g.arrived;
    auto val = [&](unsigned lane) { return base[lane].val; };
    auto has = [&](unsigned lane) { return lane < 32 && ((arrived >> lane) & 1u); };
    uint64_t red = 0;
    unsigned ballot = 0;
    switch (g.op) {
        case kBallot: case kAny: case kAll:
            for (unsigned l = 0; l < 32; ++l)
                if (has(l) && val(l)) ballot |= 1u << l;
            break;
        case kReduceAddU: case kReduceAddI: case kReduceOr: case kReduceXor:
            for (unsigned l = 0; l < 32; ++l)
                if (has(l)) {
                    if (g.op == kReduceOr) red |= val(l);
                    else if (g.op == kReduceXor) red ^= val(l);
                    else red += val(l);
                }
            break;
        case kReduceAnd:
            red = ~uint64_t(0);
            for (unsigned l = 0; l < 32; ++l)
                if (has(l)) red &= val(l);
            break;
        case kReduceMinU: case kReduceMaxU: case kReduceMinI: case kReduceMaxI: {
            bool first = true;
            for (unsigned l = 0; l < 32; ++l) {
                if (!has(l)) continue;
                uint64_t v = val(l);
                bool less = (g.op == kReduceMinI || g.op == kReduceMaxI) ? (int64_t)v < (int64_t)red
                                                                           : (uint32_t)v < (uint32_t)red;
                bool take = first || ((g.op == kReduceMinU || g.op == kReduceMinI) ? less : !less && v != red);
                if (take) red = v;
                first = false;
            }
            break;
        }
        default: break;
    }
    for (unsigned l = 0; l < 32; ++l) {
        if (!has(l)) continue;
        Thread& t = base[l];
        int width = t.width;
        if (width <= 0 || width > 32 || (width & (width - 1))) width = 32;
        unsigned seg = l & ~unsigned(width - 1);
        int src = (int)l;
        switch (g.op) {
            case kShflIdx: src = (int)seg + (t.arg & (width - 1)); break;
            case kShflUp: src = (int)l - t.arg; if (src < (int)seg) src = (int)l; break;
            case kShflDown: src = (int)l + t.arg; if (src >= (int)(seg + width)) src = (int)l; break;
            case kShflXor: src = (int)(l ^ (unsigned)t.arg); if (src >= (int)(seg + width)) src = (int)l; break;
            default: break;
        }
        switch (g.op) {
            case kShflIdx: case kShflUp: case kShflDown: case kShflXor:
                t.out = has((unsigned)src) ? val((unsigned)src) : t.val;
                break;
            case kBallot: t.out = ballot & g.mask; break;
            case kAny: t.out = (ballot & g.mask) != 0; break;
            case kAll: t.out = (ballot & g.mask & arrived) == (g.mask & arrived); break;
            case kSyncWarp: t.out = 0; break;
            case kActiveMask: t.out = arrived; break;
            case kMatchAny: {
                unsigned m = 0;
                for (unsigned k = 0; k < 32; ++k)
                    if (has(k) && val(k) == t.val) m |= 1u << k;
                t.out = m;
                break;
            }
            case kMatchAll: {
                bool all = true;
                for (unsigned k = 0; k < 32; ++k)
                    if (has(k) && val(k) != t.val) all = false;
                t.out = all ? (g.mask & arrived) : 0;
                t.pred_out = all;
                break;
            }
            default: t.out = red; break;
        }
    }
    g.active = false;
    g.arrived = 0;
    w->warp_groups[warp]--;
    if (g.op == kActiveMask) w->warp_amask[warp]--;
    if (w->reverse) {
        for (int l = 31; l >= 0; --l)
            if (has((unsigned)l) && &base[l] != self) push_runnable(w, &base[l]);
    } else {
        for (unsigned l = 0; l < 32; ++l)
            if (has(l) && &base[l] != self) push_runnable(w, &base[l]);
    }
}

// A lane of `warp` just parked: an __activemask() of that warp may now be resolvable.
__attribute__((noinline)) void check_activemask_slow(Worker* w, unsigned warp) {
    for (WarpGroup& g : w->groups[warp])
        if (g.active && g.op == kActiveMask && group_complete(w, warp, g)) complete_group(w, warp, g, nullptr);
}

inline void check_activemask(Worker* w, unsigned warp) {
    if (__builtin_expect(w->warp_amask[warp] != 0, 0)) check_activemask_slow(w, warp);
}

std::string thread_str(const Thread* t) {
    return fmt("(%u,%u,%u)", t->idx.x, t->idx.y, t->idx.z);
}

// ---- cooperative launches: every block resident at once, a grid-wide barrier --------------------
// Each block of a cooperative grid runs on its own OS thread (its own Worker: __shared__ variables
// are thread_local), so a block whose threads all wait at this_grid().sync() simply blocks that OS
// thread until the grid's other blocks arrive. A block that faults aborts the others; a block that
// exits while others wait at the grid barrier is a deadlock on a GPU and a fault here.
struct GridBarrier {
    std::mutex m;
    std::condition_variable cv;
    unsigned expected = 0, arrived = 0, finished = 0;
    uint64_t generation = 0;
    bool aborted = false;
    int line = 0;          // where the waiting blocks are
    std::string reason;    // why the grid was aborted (when no block fault says it)
    uint3 exited{};        // the first block that finished
    bool any_exited = false;
};

std::string exited_block_deadlock(const GridBarrier& g) {
    return fmt("deadlock: block (%u,%u,%u) exited without reaching this_grid().sync(), which the grid's "
               "other blocks wait at (line %d); every block of the grid must take part",
               g.exited.x, g.exited.y, g.exited.z, g.line);
}

// The block's threads have all arrived at a this_grid().sync(): wait for the grid's other blocks.
void grid_wait(Worker* w, int line) {
    GridBarrier& g = *w->grid;
    std::string why;
    {
        std::unique_lock<std::mutex> lock(g.m);
        if (!g.aborted) {
            uint64_t gen = g.generation;
            g.line = line;
            if (++g.arrived + g.finished == g.expected) {
                if (g.finished == 0) {
                    g.arrived = 0;
                    g.generation++;
                    g.cv.notify_all();
                    return;
                }
                g.aborted = true;
                g.reason = exited_block_deadlock(g);
                g.cv.notify_all();
            } else {
                g.cv.wait(lock, [&] { return g.generation != gen || g.aborted; });
                if (g.generation != gen) return;
            }
        }
        why = g.reason.empty() ? std::string("aborted: another block of the cooperative grid faulted") : g.reason;
    }
    raise_fault(w, why);
}

// A block of the grid finished normally (every thread returned).
void grid_block_finished(GridBarrier& g, uint3 block) {
    std::lock_guard<std::mutex> lock(g.m);
    g.finished++;
    if (!g.any_exited) {
        g.any_exited = true;
        g.exited = block;
    }
    if (!g.aborted && g.arrived > 0 && g.arrived + g.finished == g.expected) {
        g.aborted = true;
        g.reason = exited_block_deadlock(g);
        g.cv.notify_all();
    }
}

void grid_abort(GridBarrier& g) {
    std::lock_guard<std::mutex> lock(g.m);
    g.aborted = true;
    g.cv.notify_all();
}

// Every live (not exited) thread of the block waits at the barrier: check that they all wait at
// the same __syncthreads() and let them go. `last` is the arriving thread that completed the
// barrier (it keeps running without a switch), or nullptr when an exiting thread completed it.
void release_barrier(Worker* w, Thread* last) {
    if (w->bar_diverged) {
        const Thread* ref = last ? last : w->bar_waiters[0];
        for (unsigned i = 0; i < w->bar_nwait; ++i) {
            const Thread* o = w->bar_waiters[i];
            if (o->line != ref->line)
                raise_fault(w, fmt("divergent __syncthreads(): thread %s waits at line %d while thread %s "
                                   "waits at line %d",
                                   thread_str(o).c_str(), o->line, thread_str(ref).c_str(), ref->line));
        }
    }
    if (w->bar_grid) {  // this_grid().sync(): the whole block is here; now the other blocks
        w->bar_grid = false;
        grid_wait(w, w->bar_line);
    }
    w->bar_results[0] = w->bar_count;
    w->bar_results[1] = w->bar_all;
    w->bar_results[2] = w->bar_any;
    w->bar_count = 0;
    w->bar_all = 1;
    w->bar_any = 0;
    for (unsigned i = 0; i < w->bar_nwait; ++i) push_runnable(w, w->bar_waiters[i]);
    w->bar_nwait = 0;
    w->bar_arrived = 0;
    w->bar_diverged = false;
}

void thread_exit(Worker* w, Thread* t) {
    t->state = kExited;
    w->exited++;
    unsigned warp = t->linear >> 5;
    w->warp_exited[warp] |= 1u << (t->linear & 31);
    // Exited threads no longer take part in __syncthreads() (as on Volta and later GPUs, where
    // `if (i >= n) return; ... __syncthreads();` is everyday code): if every other live thread
    // already waits, this exit completes the barrier.
    if (w->bar_arrived > 0 && w->bar_arrived + w->exited == w->n && block_cursor.next == w->n)
        release_barrier(w, nullptr);
    if (w->warp_groups[warp] == 0) return;
    for (WarpGroup& g : w->groups[warp])
        if (g.active && group_complete(w, warp, g)) complete_group(w, warp, g, nullptr);
}

// A thread loop has run out of unstarted threads: the threads it ran without waiting exited,
// which may complete a barrier or warp collective the others wait at.
void loop_done(Worker* w) {
    reconcile(w, false);
    if (!w->any_materialised) return;
    if (w->bar_arrived > 0 && w->bar_arrived + w->exited == w->n && block_cursor.next == w->n)
        release_barrier(w, nullptr);
    for (unsigned warp = 0; warp < w->nwarps; ++warp) {
        if (w->warp_groups[warp] == 0) continue;
        for (WarpGroup& g : w->groups[warp])
            if (g.active && group_complete(w, warp, g)) complete_group(w, warp, g, nullptr);
    }
}

inline Fiber* pick_next(Worker* w);
inline void switch_to(Worker* w, Fiber* self, Fiber* next);

void fiber_main(void* arg) {
    Fiber* self = static_cast<Fiber*>(arg);
#if VF_ASAN
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
    Worker* w = tl_worker;
    for (;;) {
        if (!w->faulted) {
            const GridSpec& s = *w->spec;
            if (s.loop) {
                s.loop(s.ctx);
            } else {
                ThreadFn fn = s.fn;
                void* ctx = s.ctx;
                thread_loop([&] { fn(ctx); });
            }
            loop_done(w);
        }
        w->free_fibers.push_back(self);
        // Straight on to a thread that became runnable, else back to the scheduler.
        switch_to(w, self, pick_next(w));
    }
}


// A free (or new) fiber that will start the next unstarted thread.
__attribute__((noinline)) Fiber* pick_unstarted(Worker* w) {
    block_cursor.waited = false;  // the fiber's thread loop starts the next thread
    Fiber* f;
    if (!w->free_fibers.empty()) {
        f = w->free_fibers.back();
        w->free_fibers.pop_back();
    } else {
        f = new_fiber();
        w->all_fibers.push_back(f);
    }
    w->running = f;
    return f;
}

// The fiber to run next, with the cursor / threadIdx already set for a resumed thread: the first
// runnable thread, else a free (or new) fiber that will start the next unstarted thread.
// nullptr when only the scheduler can decide (block finished, deadlock, fault).
inline Fiber* pick_next(Worker* w) {
    if (__builtin_expect(w->faulted, 0)) return nullptr;
    if (w->run_count) {
        Thread* t = w->runnable[w->run_head];
        w->run_head = (w->run_head + 1) & (kMaxBlockThreads - 1);
        w->run_count--;
        block_cursor.waited = true;
        w->current = t;
        threadIdx = t->idx;
        w->running = t->fiber;
        return t->fiber;
    }
    if (block_cursor.next < w->n) return pick_unstarted(w);
    return nullptr;
}

// Parks the calling thread and runs the next one directly (fiber to fiber, without a detour
// through the scheduler's stack: one context switch per wait instead of two).
inline void switch_to(Worker* w, Fiber* self, Fiber* next) {
    if (!next) {
        leave_fiber(w, self);
        return;
    }
    if (next == self) return;  // this very thread is runnable again
    if (__builtin_expect(self->guardless, 0)) check_canary(self);
    if (next->fresh) init_fiber(next);
#if VF_ASM_SWITCH
    switch_stacks(&self->sp, next->sp, next->stack, next->size);
#else
    swapcontext(&self->uc, &next->uc);
#endif
    // resumed: whoever switched here has set the cursor and threadIdx for this thread
}

inline void block_current(Worker* w, Thread* t) { switch_to(w, t->fiber, pick_next(w)); }

std::string describe_waits(Worker* w) {
    // Group waiting threads by (what, line) for a compact explanation.
    struct Site {
        std::string what;
        int line;
        unsigned count;
        std::string example;
    };
    std::vector<Site> sites;
    for (unsigned i = 0; i < w->n; ++i) {
        Thread& t = w->threads[i];
        if (!parked(w, t)) continue;
        std::string what = t.state == kAtBarrier ? "__syncthreads()"
                           : t.state == kAtEvent ? std::string(t.event_what) : op_name(t.op);
        bool found = false;
        for (Site& s : sites)
            if (s.what == what && s.line == t.line) {
                s.count++;
                found = true;
            }
        if (!found) sites.push_back({what, t.line, 1, thread_str(&t)});
    }
    std::string out;
    for (size_t i = 0; i < sites.size() && i < 4; ++i) {
        if (i) out += "; ";
        out += fmt("%u thread(s) wait at %s (line %d, e.g. thread %s)", sites[i].count, sites[i].what.c_str(),
                   sites[i].line, sites[i].example.c_str());
    }
    if (w->exited) out += fmt("; %u thread(s) already exited", w->exited);
    return out;
}

// Region execution (regions.py / vf_regions.h) unless VF_REGIONS=0: the differential tests'
// switch back to the fiber path for every kernel.
bool regions_enabled() {
    static const bool on = [] {
        const char* env = getenv("VF_REGIONS");
        return !(env && env[0] == '0');
    }();
    return on;
}

// VF_REGIONS=require: a block that did not run as a block function is a fault - how the tests
// make sure a kernel really takes the region path (not the fibers after a fallback).
static bool regions_required() {
    static const bool on = [] {
        const char* env = getenv("VF_REGIONS");
        return env && strcmp(env, "require") == 0;
    }();
    return on;
}

// A barrier or warp collective reached while a block function runs its regions: the region pass
// claimed to have split every one of them, so this is a bug of the pass, never silently ignored.
[[noreturn]] void region_misuse(Worker* w, const char* what, int line) {
    raise_fault(w, fmt("%s at line %d reached inside region execution (thread (%u,%u,%u)); the region "
                       "pass should have left this kernel on fibers - rerun with VF_REGIONS=0 and report it",
                       what, line, threadIdx.x, threadIdx.y, threadIdx.z));
}

// Runs one block to completion on this worker. Returns false on a fault (w->fault says why).
bool run_block(Worker* w, uint3 bidx) {
    const GridSpec& s = *w->spec;
    blockIdx = bidx;
    w->n = s.block.x * s.block.y * s.block.z;
    BlockCursor& c = block_cursor;
    c.next = 0;
    c.n = w->n;
    c.bx = s.block.x;
    c.by = s.block.y;
    c.one_dim = s.block.y == 1 && s.block.z == 1;
    c.reverse = s.reverse;
    c.waited = false;
    c.regions = regions_enabled();
    c.in_regions = false;
    c.region_done = false;
    c.region_ran = false;
    w->epoch++;
    w->accounted = 0;
    w->any_materialised = false;
    w->exited = 0;
    w->nwarps = (w->n + 31) / 32;
    w->reverse = s.reverse;
    w->run_head = 0;
    w->run_count = 0;
    w->bar_arrived = 0;
    w->bar_nwait = 0;
    w->bar_diverged = false;
    w->bar_grid = false;
    w->event_nwait = 0;
    w->bar_count = 0;
    w->bar_all = 1;
    w->bar_any = 0;
    w->faulted = false;
    w->fault_code = 719;
    for (unsigned i = 0; i < w->nwarps; ++i) {
        w->warp_exited[i] = 0;
        if (w->warp_groups[i]) {  // only after a fault: completed collectives deactivate themselves
            w->warp_groups[i] = 0;
            w->warp_amask[i] = 0;
            for (WarpGroup& g : w->groups[i]) g.active = false;
        }
    }
    w->in_block = true;
    struct Leave {  // the block is over, however it ends
        Worker* w;
        ~Leave() { w->in_block = false; w->running = nullptr; }
    } leave{w};
    for (;;) {
        if (w->faulted) break;
        if (Fiber* f = pick_next(w)) {
            enter_fiber(w, f);
            continue;
        }
        if (w->exited == w->n) {
            if (__builtin_expect(!c.region_ran && regions_required(), 0)) {
                w->faulted = true;
                w->fault = fmt("block (%u,%u,%u) ran on fibers, not as a block function (VF_REGIONS=require)",
                               bidx.x, bidx.y, bidx.z);
                break;
            }
            return true;
        }
        w->faulted = true;
        w->fault = "deadlock: no thread of the block can make progress: " + describe_waits(w);
        break;
    }
    // Abandon the block's fibers: every fiber restarts from a fresh frame.
    w->free_fibers = w->all_fibers;
    for (Fiber* f : w->all_fibers) {
#if VF_ASAN
        // Let ASan forget the abandoned frames' poisoned redzones.
        __asan_unpoison_memory_region(f->stack, f->size);
#endif
        f->fresh = true;
    }
    return false;
}

// ---- the worker pool ------------------------------------------------------------------------

struct Pool {
    std::mutex m;
    std::condition_variable wake, done;
    std::vector<std::thread> threads;
    uint64_t generation = 0;
    unsigned wanted = 0;   // helpers that should take part in this generation
    unsigned running = 0;  // helpers still working on it
    const GridSpec* spec = nullptr;
    std::atomic<uint64_t> next_block{0};
    uint64_t nblocks = 0;
    std::atomic<bool> faulted{false};
    std::mutex fault_m;
    std::string fault;
    int fault_code = 719;
};

Pool& pool() {
    static Pool* p = new Pool();
    return *p;
}

unsigned pool_size() {
    static unsigned n = [] {
        const char* env = getenv("VF_CPU_THREADS");
        unsigned v = env ? (unsigned)strtoul(env, nullptr, 10) : std::thread::hardware_concurrency();
        return v == 0 ? 1u : v;
    }();
    return n;
}

// Makes `w` (this OS thread's worker) ready to run blocks of grid `s`.
void bind_grid(Worker* w, const GridSpec& s) {
    w->spec = &s;
    if (s.shared_bytes > w->dyn_smem_size || (VF_ASAN && s.shared_bytes != w->dyn_smem_size)) {
        free(w->dyn_smem);
        void* mem = nullptr;
        // Exact size under ASan so overflowing dynamic shared memory is reported.
        if (posix_memalign(&mem, 128, s.shared_bytes ? s.shared_bytes : 1) != 0) mem = nullptr;
        w->dyn_smem = static_cast<char*>(mem);
        w->dyn_smem_size = s.shared_bytes;
    }
    blockDim = s.block;
    gridDim = s.grid;
}

void run_blocks(Pool& p) {
    Worker* w = this_worker();
    const GridSpec& s = *p.spec;
    bind_grid(w, s);
    uint64_t gx = s.grid.x, gxy = (uint64_t)s.grid.x * s.grid.y;
    while (!p.faulted.load(std::memory_order_relaxed)) {
        uint64_t k = p.next_block.fetch_add(1, std::memory_order_relaxed);
        if (k >= p.nblocks) break;
        uint64_t b = s.reverse ? p.nblocks - 1 - k : k;
        uint3 bidx{(unsigned)(b % gx), (unsigned)((b / gx) % s.grid.y), (unsigned)(b / gxy)};
        if (!run_block(w, bidx)) {
            std::lock_guard<std::mutex> lock(p.fault_m);
            if (!p.faulted.load()) {
                p.fault = fmt("kernel '%s', block (%u,%u,%u): ", s.kernel_name, bidx.x, bidx.y, bidx.z) + w->fault;
                p.fault_code = w->fault_code;
                p.faulted.store(true);
            }
            break;
        }
    }
    w->spec = nullptr;
}

void helper_loop(unsigned index) {
    Pool& p = pool();
    uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(p.m);
            p.wake.wait(lock, [&] { return p.generation != seen && index < p.wanted; });
            seen = p.generation;
        }
        run_blocks(p);
        {
            std::lock_guard<std::mutex> lock(p.m);
            if (--p.running == 0) p.done.notify_all();
        }
    }
}

// ---- cooperative grids: one OS thread (and worker) per block, all resident at once ---------------
struct CoopPool {
    std::mutex m;
    std::condition_variable wake, done;
    unsigned threads = 0;  // helpers started (detached; each runs block index + 1)
    uint64_t generation = 0;
    uint64_t wanted = 0;   // blocks of the current grid
    unsigned running = 0;  // helpers still working on it
    const GridSpec* spec = nullptr;
    GridBarrier* barrier = nullptr;
};

CoopPool& coop_pool() {
    static CoopPool* c = new CoopPool();
    return *c;
}

void run_coop_block(uint64_t k) {
    CoopPool& c = coop_pool();
    Pool& p = pool();
    Worker* w = this_worker();
    const GridSpec& s = *c.spec;
    bind_grid(w, s);
    w->grid = c.barrier;
    uint64_t b = s.reverse ? c.wanted - 1 - k : k;
    uint64_t gx = s.grid.x, gxy = (uint64_t)s.grid.x * s.grid.y;
    uint3 bidx{(unsigned)(b % gx), (unsigned)((b / gx) % s.grid.y), (unsigned)(b / gxy)};
    bool ok = run_block(w, bidx);
    w->grid = nullptr;
    w->spec = nullptr;
    if (ok) {
        grid_block_finished(*c.barrier, bidx);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(p.fault_m);
        if (!p.faulted.load()) {
            p.fault = fmt("kernel '%s', block (%u,%u,%u): ", s.kernel_name, bidx.x, bidx.y, bidx.z) + w->fault;
            p.fault_code = w->fault_code;
            p.faulted.store(true);
        }
    }
    grid_abort(*c.barrier);
}

void coop_helper_loop(unsigned index) {
    CoopPool& c = coop_pool();
    uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(c.m);
            c.wake.wait(lock, [&] { return c.generation != seen && index + 1 < c.wanted; });
            seen = c.generation;
        }
        run_coop_block(index + 1);
        {
            std::lock_guard<std::mutex> lock(c.m);
            if (--c.running == 0) c.done.notify_all();
        }
    }
}

thread_local std::string tl_fault_message;
thread_local bool tl_next_cooperative = false;  // set_next_launch_cooperative()
std::atomic<const char*> g_running_kernel{nullptr};
std::atomic<bool> g_force_reverse{false};  // set_reverse_order: the evaluation driver's race probe

// Runs a cooperative grid (the launch is validated and serialised by run_grid).
int run_cooperative(const GridSpec& spec, uint64_t nblocks) {
    int limit = cooperative_grid_limit(spec.block, spec.shared_bytes);
    if (nblocks > (uint64_t)limit) {
        tl_fault_message = fmt("kernel '%s': cooperative launch of %llu blocks of %u threads: at most %d blocks "
                               "(with %zu bytes of dynamic shared memory) can be resident at once",
                               spec.kernel_name, (unsigned long long)nblocks,
                               spec.block.x * spec.block.y * spec.block.z, limit, spec.shared_bytes);
        return 720;  // cudaErrorCooperativeLaunchTooLarge
    }
    CoopPool& c = coop_pool();
    Pool& p = pool();
    GridBarrier barrier;
    barrier.expected = (unsigned)nblocks;
    unsigned helpers = (unsigned)nblocks - 1;
    {
        std::lock_guard<std::mutex> lock(c.m);
        try {
            while (c.threads < helpers) {
                std::thread(coop_helper_loop, c.threads).detach();
                c.threads++;
            }
        } catch (const std::system_error& e) {
            tl_fault_message = fmt("kernel '%s': cannot start a thread for each of the %llu blocks of the cooperative "
                                   "grid (%s)", spec.kernel_name, (unsigned long long)nblocks, e.what());
            return 720;
        }
        c.spec = &spec;
        c.barrier = &barrier;
        c.wanted = nblocks;
        c.running = helpers;
        c.generation++;
    }
    {
        std::lock_guard<std::mutex> lock(p.fault_m);
        p.faulted.store(false);
        p.fault.clear();
        p.fault_code = 719;
    }
    if (helpers) c.wake.notify_all();
    run_coop_block(0);
    if (helpers) {
        std::unique_lock<std::mutex> lock(c.m);
        c.done.wait(lock, [&] { return c.running == 0; });
    }
    if (p.faulted.load()) {
        tl_fault_message = p.fault;
        return p.fault_code;
    }
    tl_fault_message.clear();
    return 0;
}

}  // namespace
}  // namespace vf

#if !VF_ASM_SWITCH
extern "C" void fiber_main_ucontext(unsigned lo, unsigned hi) {
    vf::fiber_main(reinterpret_cast<void*>((uintptr_t)lo | ((uintptr_t)hi << 32)));
}
#endif

namespace vf {

int check_launch_config(dim3 grid, dim3 block, size_t shared_bytes, const char** why) {
    static thread_local std::string msg;
    auto bad = [&](std::string m) {
        msg = std::move(m);
        *why = msg.c_str();
        return 9;  // cudaErrorInvalidConfiguration
    };
    uint64_t threads = (uint64_t)block.x * block.y * block.z;
    if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0)
        return bad(fmt("grid (%u,%u,%u) / block (%u,%u,%u) has a zero dimension", grid.x, grid.y, grid.z,
                       block.x, block.y, block.z));
    if (threads > 1024)
        return bad(fmt("block (%u,%u,%u) has %llu threads; the limit is 1024", block.x, block.y, block.z,
                       (unsigned long long)threads));
    if (block.x > 1024 || block.y > 1024 || block.z > 64)
        return bad(fmt("block (%u,%u,%u) exceeds the per-dimension limits (1024, 1024, 64)", block.x, block.y,
                       block.z));
    if (grid.x > 2147483647u || grid.y > 65535u || grid.z > 65535u)
        return bad(fmt("grid (%u,%u,%u) exceeds the limits (2^31-1, 65535, 65535)", grid.x, grid.y, grid.z));
    if (shared_bytes > 232448)
        return bad(fmt("%zu bytes of dynamic shared memory requested; the limit is 227 KB (232448 bytes)",
                       shared_bytes));
    *why = "";
    return 0;
}

void set_reverse_order(bool on) { g_force_reverse.store(on); }

void set_next_launch_cooperative(bool on) { tl_next_cooperative = on; }

namespace {
int run_one_grid(GridSpec& spec, bool cooperative) {
    static std::mutex one_grid_at_a_time;  // host threads launching concurrently take turns
    if (g_force_reverse.load(std::memory_order_relaxed)) spec.reverse = true;
    const char* why = "";
    if (int err = check_launch_config(spec.grid, spec.block, spec.shared_bytes, &why)) {
        tl_fault_message = fmt("kernel '%s': invalid launch configuration: %s", spec.kernel_name, why);
        return err;
    }
    if (tl_worker && tl_worker->in_block) {
        tl_fault_message = fmt("kernel '%s' launched from device code: dynamic parallelism is not supported "
                               "by the CPU runtime", spec.kernel_name);
        return 801;  // cudaErrorNotSupported
    }
    std::lock_guard<std::mutex> serial(one_grid_at_a_time);
    struct Running {  // names the grid in crash reports (worker_main.cpp's signal handler)
        explicit Running(const char* name) { g_running_kernel.store(name); }
        ~Running() { g_running_kernel.store(nullptr); }
    } running(spec.kernel_name);
    Pool& p = pool();
    uint64_t nblocks = (uint64_t)spec.grid.x * spec.grid.y * spec.grid.z;
    if (cooperative) return run_cooperative(spec, nblocks);
    unsigned helpers = (unsigned)std::min<uint64_t>(pool_size(), nblocks) - 1;
    {
        std::lock_guard<std::mutex> lock(p.m);
        while (p.threads.size() < helpers) {
            unsigned index = (unsigned)p.threads.size();
            p.threads.emplace_back(helper_loop, index);
            p.threads.back().detach();
        }
        p.spec = &spec;
        p.nblocks = nblocks;
        p.next_block.store(0);
        p.faulted.store(false);
        p.fault.clear();
        p.wanted = helpers;
        p.running = helpers;
        p.generation++;
    }
    if (helpers) p.wake.notify_all();
    run_blocks(p);
    if (helpers) {
        std::unique_lock<std::mutex> lock(p.m);
        p.done.wait(lock, [&] { return p.running == 0; });
    }
    if (p.faulted.load()) {
        tl_fault_message = p.fault;
        return p.fault_code;  // cudaErrorLaunchFailure, or cudaErrorAssert
    }
    tl_fault_message.clear();
    return 0;
}
}  // namespace

int run_child_grids(const GridSpec* grid, int err);  // device_launch.cpp (vf_graphs.h)

int run_grid(const GridSpec& requested) {
    bool cooperative = tl_next_cooperative;  // cudaLaunchCooperativeKernel (cooperative.cpp)
    tl_next_cooperative = false;
    GridSpec spec = requested;  // its address identifies the grid to the launches its threads make
    int err = run_one_grid(spec, cooperative);
    return run_child_grids(&spec, err);  // dynamic parallelism (device_launch.cpp)
}

const GridSpec* current_grid() { return tl_worker && tl_worker->in_block ? tl_worker->spec : nullptr; }

const char* last_fault_message() { return tl_fault_message.c_str(); }

const char* running_kernel() { return g_running_kernel.load(); }

bool in_kernel() { return tl_worker && tl_worker->in_block; }

void waited_thread_exit() {
    BlockCursor& c = block_cursor;
    if (c.region_done) {  // a block function ran every thread of the block: the loop is over
        c.region_done = false;
        c.waited = false;
        c.next = c.n;
        return;
    }
    Worker* w = tl_worker;
    reconcile(w, false);  // the thread itself is known: it waited
    block_cursor.waited = false;
    thread_exit(w, w->current);
}

namespace {
template <bool Reduce> inline void barrier_wait(Worker* w, Thread* t, int line, int pred) {
    t->line = line;
    if (w->bar_arrived == 0) w->bar_line = line;
    else if (line != w->bar_line) w->bar_diverged = true;  // a fault once every thread is there
    w->bar_arrived++;
    if (Reduce) {
        w->bar_count += pred != 0;
        w->bar_all &= pred != 0;
        w->bar_any |= pred != 0;
    } else {
        w->bar_all = 0;  // as if pred were 0 (only read after a __syncthreads_and, which sets its own)
    }
    // Threads that already exited count as arrived (hardware behaviour since Volta).
    if (w->bar_arrived + w->exited == w->n && block_cursor.next == w->n) {
        release_barrier(w, t);
        if (w->reverse && w->run_count) {
            // Race probe: the thread that completed the barrier resumes after the others, so the
            // threads leave it in reverse order too (index order: the last thread goes first, then
            // 0, 1, ...; reversed: ..., 1, then 0). Otherwise a loop after a barrier would start
            // with the same thread in both orders.
            Fiber* next = pick_next(w);
            push_runnable(w, t);
            switch_to(w, t->fiber, next);
        }
        return;
    }
    t->state = kAtBarrier;
    w->bar_waiters[w->bar_nwait++] = t;
    check_activemask(w, t->linear >> 5);
    block_current(w, t);
}
}  // namespace

void syncthreads(int line) {
    Worker* w = tl_worker;
    if (!w || !w->in_block) return;  // called from host code: nothing to wait for
    if (__builtin_expect(block_cursor.in_regions, 0)) region_misuse(w, "__syncthreads()", line);
    barrier_wait<false>(w, enter_scheduler(w), line, 0);
}

void grid_sync(int line) {
    Worker* w = tl_worker;
    if (!w || !w->in_block) return;
    Thread* t = enter_scheduler(w);
    if (!w->grid)
        raise_fault(w, fmt("this_grid().sync() at line %d in thread %s of a kernel not launched with "
                           "cudaLaunchCooperativeKernel (grid-wide synchronisation needs a cooperative launch)",
                           line, thread_str(t).c_str()));
    if (w->bar_arrived == 0) w->bar_grid = true;
    else if (!w->bar_grid) w->bar_diverged = true;
    barrier_wait<false>(w, t, line, 0);
}

bool in_cooperative_grid() { return tl_worker && tl_worker->in_block && tl_worker->grid; }

void wait_on(const void* event, int line, const char* what) {
    Worker* w = tl_worker;
    if (!w || !w->in_block) return;  // host code: nothing else could ever signal it
    Thread* t = enter_scheduler(w);
    t->state = kAtEvent;
    t->line = line;
    t->event = event;
    t->event_what = what;
    w->event_waiters[w->event_nwait++] = t;
    check_activemask(w, t->linear >> 5);
    block_current(w, t);
}

void wake_all(const void* event) {
    Worker* w = tl_worker;
    if (!w || !w->in_block) return;
    for (unsigned i = 0; i < w->event_nwait;) {
        Thread* t = w->event_waiters[i];
        if (t->event == event) {
            w->event_waiters[i] = w->event_waiters[--w->event_nwait];
            push_runnable(w, t);
        } else {
            ++i;
        }
    }
}

int syncthreads_reduce(int op, int pred, int line) {
    Worker* w = tl_worker;
    if (!w || !w->in_block) return pred != 0;
    if (__builtin_expect(block_cursor.in_regions, 0)) region_misuse(w, "__syncthreads_count/and/or()", line);
    barrier_wait<true>(w, enter_scheduler(w), line, pred);
    return w->bar_results[op];  // nobody else can pass another barrier before this thread reads
}

uint64_t warp_collective(int op, unsigned mask, uint64_t value, int arg, int width, int line, int* pred) {
    Worker* w = tl_worker;
    if (!w || !w->in_block) {  // host code: a one-lane warp
        if (pred) *pred = 1;
        return op == kBallot ? (value != 0) : value;
    }
    if (__builtin_expect(block_cursor.in_regions, 0)) region_misuse(w, op_name(op), line);
    Thread* t = enter_scheduler(w);
    unsigned lane = t->linear & 31, warp = t->linear >> 5;
    unsigned bit = 1u << lane;
    if (!(mask & bit))
        raise_fault(w, fmt("%s at line %d called by thread %s (lane %u) with mask 0x%08x that does not "
                           "include the calling lane",
                           op_name(op), line, thread_str(t).c_str(), lane, mask));
    t->op = op;
    t->mask = mask;
    t->val = value;
    t->arg = arg;
    t->width = width;
    t->line = line;
    t->pred_out = 0;
    WarpGroup* g = nullptr;
    WarpGroup* free_slot = nullptr;
    WarpGroup& first = w->groups[warp][0];  // the usual case: one collective of the warp at a time
    if (first.active && first.mask == mask && (first.op == kActiveMask) == (op == kActiveMask)) g = &first;
    else if (!first.active && w->warp_groups[warp] == 0) free_slot = &first;
    else for (WarpGroup& cand : w->groups[warp]) {
        if (cand.active && cand.mask == mask && (cand.op == kActiveMask) == (op == kActiveMask)) {
            g = &cand;
            break;
        }
        if (!cand.active && !free_slot) free_slot = &cand;
    }
    if (g && g->op != op)
        raise_fault(w, fmt("warp %u diverged: lanes of mask 0x%08x wait at %s (line %d) while lane %u calls "
                           "%s (line %d)",
                           warp, mask, op_name(g->op), g->line, lane, op_name(op), line));
    if (!g) {
        if (!free_slot)
            raise_fault(w, fmt("warp %u has too many concurrent warp collectives with different masks "
                               "(line %d)", warp, line));
        g = free_slot;
        w->warp_groups[warp]++;
        if (op == kActiveMask) w->warp_amask[warp]++;
        g->active = true;
        g->op = op;
        g->mask = mask;
        g->arrived = 0;
        g->line = line;
    }
    if (g->arrived & bit)
        raise_fault(w, fmt("lane %u of warp %u entered %s (line %d) twice", lane, warp, op_name(op), line));
    g->arrived |= bit;
    t->state = kAtWarpOp;
    if (group_complete(w, warp, *g)) {
        t->state = kRunning;
        complete_group(w, warp, *g, t);
    } else {
        check_activemask(w, warp);
        block_current(w, t);
    }
    if (pred) *pred = t->pred_out;
    return t->out;
}

unsigned active_mask() {
    Worker* w = tl_worker;
    if (!w || !w->in_block) return 1u;
    if (__builtin_expect(block_cursor.in_regions, 0)) region_misuse(w, "__activemask() / a lockstep volatile access", 0);
    Thread* t = enter_scheduler(w);
    return (unsigned)warp_collective(kActiveMask, 0xffffffffu, 0, 0, 32, t->line);
}

void yield_thread() {
    Worker* w = tl_worker;
    if (!w || !w->in_block) return;
    if (block_cursor.in_regions) return;  // clock reads in a block function: nothing to yield to
    Thread* t = enter_scheduler(w);
    bool others = w->run_count || block_cursor.next < w->n;
    if (!others) return;
    // Start a thread that has not run yet before resuming waiting ones: spin-waits in two threads
    // (clock64 loops, __nanosleep, multi-warp tile barriers) must not keep the rest of the block
    // from ever starting.
    Fiber* next = (!w->faulted && block_cursor.next < w->n)
                      ? pick_unstarted(w)
                      : pick_next(w);  // before queueing ourselves, so someone else runs first
    push_runnable(w, t);
    switch_to(w, t->fiber, next);
}

void device_assert_failed(const char* expr, const char* file, unsigned line, const char* function) {
    Worker* w = tl_worker;
    // The message a GPU prints for a failed device assert (then the kernel is aborted and the
    // host sees cudaErrorAssert, sticky). Written in one call so concurrent blocks do not interleave.
    // In a block function (vf_regions.h) the assert sits in a region's lambda: name the kernel.
    std::string name = function ? function : "?";
    const std::string region = "::<lambda(uint3, unsigned int)>";
    size_t at = name.find(region);
    if (at != std::string::npos)
        name = at + region.size() == name.size() ? "void " + name.substr(0, at) : name.erase(at, region.size());
    std::string text = fmt("%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.", file, line,
                           name.c_str(), blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
                           expr);
    fprintf(stderr, "%s\n", text.c_str());
    fflush(stderr);
    raise_fault(w, "device-side assert triggered: " + text, 710);
}

void trap(const char* what, int line) {
    Worker* w = tl_worker;
    if (w && w->in_block)
        raise_fault(w, fmt("%s at line %d in thread (%u,%u,%u)", what, line, threadIdx.x, threadIdx.y, threadIdx.z));
    fprintf(stderr, "veriforge: %s at line %d (host code)\n", what, line);
    abort();
}

char* region_scratch(size_t bytes) {
    static thread_local char* mem = nullptr;
    static thread_local size_t size = 0;
    if (bytes > size) {
        free(mem);
        size_t want = bytes < 65536 ? 65536 : bytes + bytes / 2;
        void* p = nullptr;
        if (posix_memalign(&p, 64, want) != 0) {
            fprintf(stderr, "veriforge: cannot allocate %zu bytes of region scratch\n", want);
            abort();
        }
        mem = static_cast<char*>(p);
        size = want;
    }
    return mem;
}

void region_fault(const char* what, int line) {
    Worker* w = tl_worker;
    if (w && w->in_block) raise_fault(w, fmt("%s (line %d)", what, line));
    fprintf(stderr, "veriforge: %s at line %d\n", what, line);
    abort();
}

namespace {
std::string region_thread(const RegionBlock& b, unsigned t) {
    unsigned rest = t / b.bx;
    return fmt("(%u,%u,%u)", t % b.bx, rest % b.by, rest / b.by);
}
}  // namespace

void region_fault_at(const RegionBlock& b, const char* what, int line, int thread, int other) {
    Worker* w = tl_worker;
    std::string msg = fmt("%s: the condition at line %d differs between thread %s and thread %s of the block, "
                          "and a barrier depends on it", what, line, region_thread(b, (unsigned)thread).c_str(),
                          region_thread(b, (unsigned)other).c_str());
    if (w && w->in_block) raise_fault(w, msg);
    fprintf(stderr, "veriforge: %s\n", msg.c_str());
    abort();
}

void RegionWarp::bad_mask(unsigned t, unsigned m) const {
    Worker* w = tl_worker;
    raise_fault(w, fmt("%s at line %d called by thread %s (lane %u) with mask 0x%08x that does not "
                       "include the calling lane",
                       name, line, region_thread(*block, t).c_str(), t & 31u, m));
}

void RegionWarp::missing_lane(unsigned t, unsigned lane) const {
    Worker* w = tl_worker;
    raise_fault(w, fmt("deadlock: %s (line %d) in warp %u waits for lane %u, which is named in its mask 0x%08x "
                       "and has not exited but %s%s",
                       name, line, t >> 5, lane, mask[t], *next ? "went on to " : "took another path", next));
}

void* dynamic_shared() {
    Worker* w = tl_worker;
    return w ? w->dyn_smem : nullptr;
}

}  // namespace vf
