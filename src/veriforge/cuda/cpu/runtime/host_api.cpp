// veriforge CPU runtime: the CUDA runtime API for whole programs.
//
// Device memory is host memory (one address space, so every cudaMemcpy direction is a memcpy),
// streams and events are synchronous (work runs in issue order, which is a legal schedule of
// any correct CUDA program), and kernel faults become CUDA errors exactly where a program looks
// for them: the launch's error is returned by cudaGetLastError/cudaPeekAtLastError, and a fault
// inside a kernel is sticky like a real device fault (every later call returns it).
// The declarations come from CUDA's own cuda_runtime_api.h when it was found, so signatures,
// default arguments and the C++ template overloads of cuda_runtime.h match what nvcc users see.
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <time.h>
#include <unistd.h>

#include "vf_core.h"

namespace vf {
struct LaunchConfig;
int host_launch(const GridSpec& spec, cudaStream_t stream);
// Module.call support (worker_main.cpp): see the definitions below.
void call_begin();
int call_end(std::string& message);
void register_device_buffer(void* ptr, size_t size);
void unregister_device_buffers();
long long device_clock64();                 // vf_intrinsics.h
unsigned long long device_globaltimer();
// Dynamic parallelism (device_launch.cpp): cudaGetLastError / cudaDeviceSynchronize in device code.
int device_last_error(bool reset);
int device_synchronize_refused();
#if defined(VF_HAVE_CUDA_HEADERS)
// Stream capture and graph memory (graphs.cpp). Each returns -1 when it does not apply (the stream
// is not capturing, the pointer is not a graph allocation), else the call's result.
int capture_memcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t s);
int capture_memcpy3d(const cudaMemcpy3DParms* p, cudaStream_t s);
int capture_memset(void* ptr, size_t pitch, int value, size_t width, size_t height, cudaStream_t s);
int capture_host_func(cudaHostFn_t fn, void* data, cudaStream_t s);
int capture_event_record(cudaEvent_t e, cudaStream_t s);
int capture_wait_event(cudaStream_t s, cudaEvent_t e);
int capture_malloc(void** ptr, size_t size, cudaStream_t s);
int capture_free(void* ptr, cudaStream_t s);
int capture_unsupported(cudaStream_t s);
int capture_forbids_sync();
void capture_forget_stream(cudaStream_t s);
void capture_forget_event(cudaEvent_t e);
int graph_mem_free(void* ptr);
// textures.cpp: cudaMemcpy3D with CUDA arrays, and the texture / surface limits of the device.
cudaError_t memcpy3d_array(const struct cudaMemcpy3DParms* m);
void texture_limits(vf_cuda_device_prop_base* p);
bool texture_attribute(int attr, int* value);
#endif
}  // namespace vf
#if defined(VF_HAVE_CUDA_HEADERS)
// A call a capturing stream records instead of running (graphs.cpp): returns its result.
#define VF_CAPTURED(call)                                         \
    do {                                                          \
        int vf_captured_ = (call);                                \
        if (vf_captured_ >= 0) return set_error((cudaError_t)vf_captured_); \
    } while (0)
#define VF_CAPTURE_ONLY(call) call
#else
#define VF_CAPTURED(call) \
    do {                  \
    } while (0)
#define VF_CAPTURE_ONLY(call)
#endif

namespace {

std::mutex g_mutex;
cudaError_t g_last_error = cudaSuccess;
cudaError_t g_sticky_error = cudaSuccess;
// Every allocation the runtime knows, by base address: cudaMalloc'd device memory, pinned host
// memory, managed memory, the argument arrays Module.call passes in (device memory the caller
// owns, which cudaFree must refuse) and __device__ symbols whose address host code took.
// cudaFree, cudaMemGetInfo, cudaPointerGetAttributes and the copy counters consult it.
enum class AllocKind { kDevice, kHost, kExternal, kManaged, kSymbol };
struct Allocation {
    size_t size;
    AllocKind kind;
    bool in_arena = false;         // lives in the guarded arena (see "device-memory guard" below)
    const char* label = nullptr;   // the driver's name for it (a solve() parameter)
    uint64_t serial = 0;           // 1, 2, ...: the order it was registered in (race-check trace)
};
uint64_t g_next_serial = 0;        // under g_mutex
bool race_trace_on();              // the race check's per-launch trace is on (see "race check" below)
std::map<const void*, Allocation> g_allocations;
size_t g_allocated = 0;
// While Module.call runs a host function: the first launch that failed, reported after it returns.
bool g_in_call = false;
int g_call_error = 0;
std::string g_call_message;
int g_device = 0;
std::map<const void*, int> g_func_max_dynamic_smem;

constexpr size_t kDeviceMemory = size_t(16) << 30;  // reported global memory: 16 GiB
constexpr int kNumSMs = 16;

// Streams are synchronous; a stream only remembers what programs may query back: its flags,
// priority, id and the attributes set on it (L2 access-policy windows and the like are accepted
// and recorded, with no effect on a CPU). The default/legacy/per-thread handles share one.
struct Stream {
    unsigned flags = 0;
    int priority = 0;
    unsigned long long id = 0;
#if defined(VF_HAVE_CUDA_HEADERS)
    std::map<int, cudaStreamAttrValue> attrs;
#endif
};
Stream g_default_stream;
std::atomic<unsigned long long> g_stream_ids{1};
// Stream priorities as on an H100: 0 (least) ... -5 (greatest).
constexpr int kLeastPriority = 0, kGreatestPriority = -5;
inline Stream* stream_of(cudaStream_t s) {
    uintptr_t v = reinterpret_cast<uintptr_t>(s);
    return v <= 2 ? &g_default_stream : reinterpret_cast<Stream*>(s);  // 0, cudaStreamLegacy, PerThread
}
Stream* new_stream(unsigned flags, int priority) {
    Stream* st = new Stream();
    st->flags = flags;
    st->priority = std::min(kLeastPriority, std::max(kGreatestPriority, priority));
    st->id = g_stream_ids.fetch_add(1);
    return st;
}

// Device limits (cudaDeviceSetLimit): recorded and reported back; none changes execution.
constexpr size_t kPersistingL2Max = 39321600;  // 75% of the 50 MB L2, as on A100/H100-class parts
constexpr int kAccessPolicyMaxWindow = 134213632;
std::map<int, size_t> g_limits;

// Stream-ordered memory pools. Allocation is immediate (streams are synchronous); a pool keeps
// its attributes and counts used / reserved bytes like CUDA's: freed memory stays reserved up to
// the release threshold (the default pool's is 0, so it is released at once), cudaMemPoolTrimTo
// releases it.
struct MemPool {
    uint64_t release_threshold = 0;
    int reuse_follow = 1, reuse_opportunistic = 1, reuse_internal = 1;
    uint64_t used = 0, used_high = 0, reserved = 0, reserved_high = 0;
    bool is_default = false;
};
MemPool g_default_pool{0, 1, 1, 1, 0, 0, 0, 0, true};
MemPool* g_current_pool = &g_default_pool;
std::map<const void*, std::pair<MemPool*, size_t>> g_pool_allocations;
struct Event {
    std::chrono::steady_clock::time_point when;
    bool recorded;
};

cudaError_t set_error(cudaError_t e) {
    if (e != cudaSuccess) {
        std::lock_guard<std::mutex> lock(g_mutex);
        g_last_error = e;
    }
    return e;
}

// A call made after a kernel fault returns the sticky error without doing anything.
inline cudaError_t sticky() { return g_sticky_error; }

// ---- device-memory guard (vf::enable_device_guard) ----------------------------------------------
// Device memory is host memory here, so host code that dereferences a device pointer would work -
// and crash on a GPU. With the guard on, cudaMalloc'd memory comes from an arena of mmap'd chunks
// that is PROT_NONE while host code runs: every runtime entry that touches device memory (a launch,
// cudaMemcpy*/cudaMemset*) is bracketed by a DeviceAccess, whose outermost instance makes the
// used part of every chunk readable and writable and protects it again when it ends. One
// mprotect per chunk each way (usually one chunk), however many allocations there are; huge pages
// (MADV_HUGEPAGE) keep the page-table work small for large buffers. A SIGSEGV/SIGBUS at an arena
// address while no DeviceAccess is open is host code touching device memory: reported, then the
// process dies by the signal as before.
constexpr size_t kChunkMin = size_t(256) << 20;  // address space reserved per chunk (at least)
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kAlign = 256;  // cudaMalloc's alignment; the whole arena toggles at once, so no pages apart
constexpr int kMaxChunks = 64;
struct Chunk {
    char* base;
    size_t reserved;
    size_t top;                          // high-water mark: [base, base + top) has been handed out
    std::map<size_t, size_t>* free_list;  // offset -> bytes, coalesced
};
Chunk g_chunks[kMaxChunks];
std::atomic<int> g_nchunks{0};
bool g_guard = false;
std::atomic<int> g_access_depth{0};
std::mutex g_guard_mutex;  // chunks, free lists, toggling; never held together with g_mutex
std::atomic<uint64_t> g_copied_d2h{0}, g_copied_h2d{0};
size_t g_page = 4096;

inline size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// The span of a chunk that toggles: what was handed out, to the next huge page (so a huge page is
// never split by the protection boundary).
inline size_t toggled(const Chunk& c) { return std::min(c.reserved, round_up(c.top, kHugePage)); }

void set_protection(int prot) {
    int n = g_nchunks.load();
    for (int i = 0; i < n; ++i)
        if (g_chunks[i].top && mprotect(g_chunks[i].base, toggled(g_chunks[i]), prot) != 0) {
            fprintf(stderr, "veriforge: internal error: mprotect of device memory failed (%s)\n", strerror(errno));
            abort();
        }
}

// Open while the runtime (or a kernel) works on device memory; nests.
struct DeviceAccess {
    bool active;
    DeviceAccess() : active(g_guard) {
        if (!active) return;
        std::lock_guard<std::mutex> lock(g_guard_mutex);
        if (g_access_depth.fetch_add(1) == 0) set_protection(PROT_READ | PROT_WRITE);
    }
    ~DeviceAccess() {
        if (!active) return;
        std::lock_guard<std::mutex> lock(g_guard_mutex);
        if (g_access_depth.fetch_sub(1) == 1) set_protection(PROT_NONE);
    }
    DeviceAccess(const DeviceAccess&) = delete;
    DeviceAccess& operator=(const DeviceAccess&) = delete;
};

bool new_chunk(size_t need) {
    if (g_nchunks.load() >= kMaxChunks) return false;
    size_t size = std::max(kChunkMin, round_up(need, kHugePage));
    // Reserve one huge page more and trim, so the chunk starts on a huge-page boundary.
    void* mem = mmap(nullptr, size + kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return false;
    char* raw = static_cast<char*>(mem);
    char* base = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(raw), kHugePage));
    if (base > raw) munmap(raw, (size_t)(base - raw));
    size_t tail = (size_t)(raw + size + kHugePage - (base + size));
    if (tail) munmap(base + size, tail);
#if defined(MADV_HUGEPAGE)
    madvise(base, size, MADV_HUGEPAGE);
#endif
    g_chunks[g_nchunks.load()] = Chunk{base, size, 0, new std::map<size_t, size_t>()};
    g_nchunks.fetch_add(1);
    return true;
}

void* arena_alloc(size_t size) {
    size_t need = round_up(size ? size : 1, kAlign);
    std::lock_guard<std::mutex> lock(g_guard_mutex);
    for (int attempt = 0; attempt < 2; ++attempt) {
        int n = g_nchunks.load();
        for (int i = 0; i < n; ++i) {  // first fit in the free lists
            Chunk& c = g_chunks[i];
            for (auto it = c.free_list->begin(); it != c.free_list->end(); ++it) {
                if (it->second < need) continue;
                size_t off = it->first, left = it->second - need;
                c.free_list->erase(it);
                if (left) (*c.free_list)[off + need] = left;
                return c.base + off;
            }
        }
        for (int i = 0; i < n; ++i) {  // then above a chunk's high-water mark
            Chunk& c = g_chunks[i];
            if (c.reserved - c.top < need) continue;
            size_t before = toggled(c);
            char* p = c.base + c.top;
            c.top += need;
            // Another thread inside a DeviceAccess has the old span open: open the new part too.
            if (g_access_depth.load() > 0 && toggled(c) > before)
                mprotect(c.base + before, toggled(c) - before, PROT_READ | PROT_WRITE);
            return p;
        }
        if (attempt == 0 && !new_chunk(need)) break;
    }
    return nullptr;
}

void arena_free(void* ptr, size_t size) {
    size_t bytes = round_up(size ? size : 1, kAlign);
    std::lock_guard<std::mutex> lock(g_guard_mutex);
    int n = g_nchunks.load();
    for (int i = 0; i < n; ++i) {
        Chunk& c = g_chunks[i];
        char* p = static_cast<char*>(ptr);
        if (p < c.base || p >= c.base + c.reserved) continue;
        size_t off = (size_t)(p - c.base);
        // Give large blocks' memory back (as free() of an mmap'd block would); small ones are reused.
        if (bytes >= (size_t(32) << 20)) {
            char* from = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(p), g_page));
            char* to = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(p + bytes) / g_page * g_page);
            if (to > from) madvise(from, (size_t)(to - from), MADV_DONTNEED);
        }
        auto& fl = *c.free_list;
        auto next = fl.lower_bound(off);
        if (next != fl.end() && next->first == off + bytes) {
            bytes += next->second;
            next = fl.erase(next);
        }
        if (next != fl.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second == off) {
                prev->second += bytes;
                return;
            }
        }
        fl[off] = bytes;
        return;
    }
}

// The chunk holding `p`, or -1 (async-signal-safe).
int chunk_of(const void* p) {
    const char* a = static_cast<const char*>(p);
    int n = g_nchunks.load();
    for (int i = 0; i < n; ++i)
        if (a >= g_chunks[i].base && a < g_chunks[i].base + g_chunks[i].reserved) return i;
    return -1;
}

void* device_alloc(size_t size, AllocKind kind = AllocKind::kDevice) {
    void* p = nullptr;
    bool arena = kind == AllocKind::kDevice && g_guard;
    if (arena) {
        p = arena_alloc(size);
        if (!p) return nullptr;
    } else if (posix_memalign(&p, 256, size ? size : 1) != 0) {
        return nullptr;
    }
    // Traced runs (the race check) compare memory between two runs: start every allocation from
    // the same bytes (a reused heap block would hold per-process pointers and tcache keys).
    if (!arena && race_trace_on()) memset(p, 0, size ? size : 1);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_allocations[p] = Allocation{size, kind, arena, nullptr, ++g_next_serial};
    g_allocated += size;
    return p;
}

bool device_free(void* p, AllocKind kind, AllocKind also = AllocKind::kDevice) {
    Allocation a;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        auto it = g_allocations.find(p);
        if (it == g_allocations.end() || (it->second.kind != kind && it->second.kind != also)) return false;
        a = it->second;
        g_allocated -= a.size;
        g_allocations.erase(it);
    }
    if (a.in_arena)
        arena_free(p, a.size);
    else
        free(p);
    return true;
}

// The allocation containing `p`, or nullptr (`base` receives its start). Caller holds g_mutex.
const Allocation* find_allocation(const void* p, const void** base_out = nullptr) {
    auto it = g_allocations.upper_bound(p);
    if (it == g_allocations.begin()) return nullptr;
    --it;
    const char* base = static_cast<const char*>(it->first);
    if (static_cast<const char*>(p) < base + std::max<size_t>(it->second.size, 1)) {
        if (base_out) *base_out = base;
        return &it->second;
    }
    return nullptr;
}

// Device memory for the copy counters: what a GPU program could not read on the host.
bool is_device_memory(const void* p) {
    std::lock_guard<std::mutex> lock(g_mutex);
    const Allocation* a = find_allocation(p);
    return a && (a->kind == AllocKind::kDevice || a->kind == AllocKind::kExternal || a->kind == AllocKind::kSymbol);
}

// Every copy goes through here. `dst_dev` / `src_dev`: 1 device, 0 host, -1 look the pointer up.
cudaError_t copy_bytes(void* dst, const void* src, size_t count, int dst_dev = -1, int src_dev = -1) {
    if (!count) return cudaSuccess;
    bool to_dev = dst_dev < 0 ? is_device_memory(dst) : dst_dev == 1;
    bool from_dev = src_dev < 0 ? is_device_memory(src) : src_dev == 1;
    if (from_dev && !to_dev) g_copied_d2h.fetch_add(count, std::memory_order_relaxed);
    if (to_dev && !from_dev) g_copied_h2d.fetch_add(count, std::memory_order_relaxed);
    if (to_dev || from_dev) {
        DeviceAccess access;
        memmove(dst, src, count);
    } else {
        memmove(dst, src, count);
    }
    return cudaSuccess;
}

// The fault handler of the guard: host code touched the arena. Reports which buffer, then lets the
// signal kill the process (through the handler that was installed before, which flushes stdout).
struct sigaction g_previous[NSIG];

void say(const char* text) {
    size_t n = strlen(text);
    while (n) {
        ssize_t w = write(2, text, n);
        if (w <= 0) return;
        text += w;
        n -= (size_t)w;
    }
}

void guard_fault(int sig, siginfo_t* info, void* context) {
    const void* addr = info->si_addr;
    if (g_guard && g_access_depth.load() == 0 && chunk_of(addr) >= 0) {
        const char* verb = "accessed";
#if defined(__x86_64__)
        // Page-fault error code: bit 1 = the access was a write.
        const ucontext_t* uc = static_cast<const ucontext_t*>(context);
        verb = (uc->uc_mcontext.gregs[REG_ERR] & 2) ? "wrote" : "read";
#endif
        char msg[512];
        const void* base = nullptr;
        const Allocation* a = nullptr;
        // The faulting thread is host code outside the runtime; only another host thread could hold
        // the lock (then the buffer goes unnamed).
        bool locked = g_mutex.try_lock();
        if (locked) a = find_allocation(addr, &base);
        if (a && a->kind == AllocKind::kDevice) {
            size_t off = (size_t)(static_cast<const char*>(addr) - static_cast<const char*>(base));
            if (a->label)
                snprintf(msg, sizeof msg, "veriforge: host code %s device memory at %s+%zu (device buffer '%s' of "
                         "%zu bytes, passed to the entry point; a GPU would fault here)\n", verb, a->label, off,
                         a->label, a->size);
            else
                snprintf(msg, sizeof msg, "veriforge: host code %s device memory at %p+%zu (a cudaMalloc'd buffer of "
                         "%zu bytes; a GPU would fault here)\n", verb, base, off, a->size);
        } else {
            // Past the end of an allocation (inside its rounding to 256 bytes), or freed memory.
            auto it = locked ? g_allocations.upper_bound(addr) : g_allocations.end();
            if (locked && it != g_allocations.begin()) --it;
            const char* b = it != g_allocations.end() ? static_cast<const char*>(it->first) : nullptr;
            const char* p = static_cast<const char*>(addr);
            if (b && it->second.in_arena && p >= b && p < b + round_up(it->second.size ? it->second.size : 1, kAlign)) {
                char name[64];
                if (it->second.label)
                    snprintf(name, sizeof name, "'%s'", it->second.label);
                else
                    snprintf(name, sizeof name, "%p", static_cast<const void*>(b));
                snprintf(msg, sizeof msg, "veriforge: host code %s device memory at %s+%zu (past the end of device "
                         "buffer %s of %zu bytes; a GPU would fault here)\n", verb,
                         it->second.label ? it->second.label : name, (size_t)(p - b), name, it->second.size);
            } else {
                snprintf(msg, sizeof msg, "veriforge: host code %s device memory at %p (outside every live cudaMalloc "
                         "allocation; a GPU would fault here)\n", verb, addr);
            }
        }
        if (locked) g_mutex.unlock();
        say(msg);
    }
    const struct sigaction& prev = g_previous[sig];
    if (prev.sa_flags & SA_SIGINFO) {
        prev.sa_sigaction(sig, info, context);
    } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
        prev.sa_handler(sig);
    } else {
        signal(sig, SIG_DFL);  // returning re-executes the access, which now kills the process
    }
}

}  // namespace

// ---- race check: per-launch trace (cpu/race.py) -----------------------------------------------
// Read once, at the first allocation or launch, from the environment the race check sets:
//   VF_REVERSE_ORDER=1       every launch runs blocks and threads in reverse order
//   VF_RACE_TRACE=<path>     after each launch append "L <n> <error> <file> <line> <argument kinds>
//                            <kernel>" and, for each live allocation, "H <serial> <size> <kind>
//                            <argument index or -1> <hash> <label or ->" (tab-separated lines)
//   VF_RACE_DUMP=<path>, VF_RACE_DUMP_AT="<launch>:<serial>,<serial>;..." - after those launches,
//                            the bytes of those allocations (uint64 launch, serial, size, then bytes)
namespace {
struct RaceTrace {
    FILE* trace = nullptr;
    FILE* dump = nullptr;
    std::map<uint64_t, std::vector<uint64_t>> dump_at;
    uint64_t launches = 0;
};
RaceTrace* race_state() {
    static RaceTrace* state = [] {
        auto* t = new RaceTrace();
        const char* rev = getenv("VF_REVERSE_ORDER");
        if (rev && *rev && strcmp(rev, "0") != 0) vf::set_reverse_order(true);
        if (const char* path = getenv("VF_RACE_TRACE"); path && *path) t->trace = fopen(path, "w");
        if (const char* path = getenv("VF_RACE_DUMP"); path && *path) {
            t->dump = fopen(path, "wb");
            const char* at = getenv("VF_RACE_DUMP_AT");
            while (at && *at) {
                char* end = nullptr;
                uint64_t launch = strtoull(at, &end, 10);
                if (end == at || *end != ':') break;
                at = end + 1;
                for (;;) {
                    uint64_t serial = strtoull(at, &end, 10);
                    if (end == at) break;
                    t->dump_at[launch].push_back(serial);
                    at = end;
                    if (*at != ',') break;
                    ++at;
                }
                if (*at == ';') ++at;
                else break;
            }
        }
        return t;
    }();
    return state;
}
uint64_t hash_bytes(const unsigned char* p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ (w * 0xC2B2AE3D27D4EB4Full)) * 0x9E3779B185EBCA87ull;
        h ^= h >> 29;
    }
    for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
    return h ^ (h >> 32);
}
const char* kind_name(AllocKind k) {
    switch (k) {
        case AllocKind::kDevice: return "device";
        case AllocKind::kHost: return "host";
        case AllocKind::kExternal: return "external";
        case AllocKind::kManaged: return "managed";
        case AllocKind::kSymbol: return "symbol";
    }
    return "?";
}
// After launch number `n`: its line and every live allocation's hash; dumps if asked. Device
// memory is open (DeviceAccess) while this runs.
void race_record(RaceTrace* t, const vf::GridSpec& spec, int err) {
    uint64_t n = t->launches++;
    auto dump = t->dump ? t->dump_at.find(n) : t->dump_at.end();
    std::lock_guard<std::mutex> lock(g_mutex);
    if (t->trace)
        fprintf(t->trace, "L\t%llu\t%d\t%s\t%d\t%s\t%s\n", (unsigned long long)n, err, spec.file ? spec.file : "?",
                spec.line, spec.arg_kinds && *spec.arg_kinds ? spec.arg_kinds : ".",
                spec.kernel_name ? spec.kernel_name : "?");
    for (const auto& [base, a] : g_allocations) {
        const auto* bytes = static_cast<const unsigned char*>(base);
        if (t->trace) {
            int arg = -1;
            for (unsigned i = 0; spec.args && i < spec.nargs; ++i) {
                const char* q = static_cast<const char*>(spec.args[i]);
                if (q && q >= (const char*)base && q < (const char*)base + std::max<size_t>(a.size, 1)) {
                    arg = (int)i;
                    break;
                }
            }
            fprintf(t->trace, "H\t%llu\t%zu\t%s\t%d\t%016llx\t%s\n", (unsigned long long)a.serial, a.size,
                    kind_name(a.kind), arg, (unsigned long long)hash_bytes(bytes, a.size), a.label ? a.label : "-");
        }
        if (dump != t->dump_at.end() &&
            std::find(dump->second.begin(), dump->second.end(), a.serial) != dump->second.end()) {
            uint64_t head[3] = {n, a.serial, (uint64_t)a.size};
            fwrite(head, sizeof head, 1, t->dump);
            fwrite(bytes, 1, a.size, t->dump);
        }
    }
    if (t->trace) fflush(t->trace);
    if (t->dump) fflush(t->dump);
}
bool race_trace_on() {
    RaceTrace* t = race_state();
    return t->trace || t->dump;
}
}  // namespace

int vf::host_launch(const GridSpec& spec, cudaStream_t) {
    RaceTrace* race = race_state();
    if (g_sticky_error != cudaSuccess) {
        if (race->trace || race->dump) {
            DeviceAccess access;  // the hashes read device memory
            race_record(race, spec, g_sticky_error);
        }
        return set_error(g_sticky_error);
    }
    int err;
    {
        DeviceAccess access;  // kernels (on every worker thread) see device memory
        err = vf::run_grid(spec);
        if (race->trace || race->dump) race_record(race, spec, err);
    }
    if (err == 0) return 0;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (g_in_call) {
            if (!g_call_error) {
                g_call_error = err;
                g_call_message = vf::last_fault_message();
            }
        } else {
            // A failed assert already printed CUDA's own message; name the kernel and stop there.
            std::string msg = vf::last_fault_message();
            size_t cut = err == cudaErrorAssert ? msg.find("device-side assert triggered") : std::string::npos;
            if (cut != std::string::npos) msg.resize(cut + strlen("device-side assert triggered"));
            fprintf(stderr, "veriforge: %s\n", msg.c_str());
            fflush(stderr);
        }
        // Faults inside a kernel (and failed device asserts) are sticky, as on a GPU.
        if (err == cudaErrorLaunchFailure || err == cudaErrorAssert) g_sticky_error = (cudaError_t)err;
    }
    return set_error((cudaError_t)err);
}

// A launch refused before it reached run_grid (cooperative.cpp: an unsupported launch attribute):
// reported like a failed launch.
int vf::record_launch_error(int err, const char* message) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_in_call) {
        if (!g_call_error) {
            g_call_error = err;
            g_call_message = message;
        }
    } else {
        fprintf(stderr, "veriforge: %s\n", message);
        fflush(stderr);
    }
    g_last_error = (cudaError_t)err;
    return err;
}

namespace {
struct Launchable {
    const char* name;
    vf::ArgsLauncher launch;
};
std::map<const void*, Launchable>& launchables() {
    static auto* m = new std::map<const void*, Launchable>();
    return *m;
}
}  // namespace

void vf::register_launchable(const void* fn, const char* name, ArgsLauncher launch) {
    launchables()[fn] = Launchable{name, launch};
}

bool vf::find_launchable(const void* fn, const char** name, ArgsLauncher* launch) {
    auto it = launchables().find(fn);
    if (it == launchables().end()) return false;
    *name = it->second.name;
    *launch = it->second.launch;
    return true;
}

// Module.call brackets every host function with these. A failed launch inside it is recorded
// (and still visible to the function through cudaGetLastError, sticky for faults, exactly as in a
// program); call_end reports the first one and clears the error state, so the server - like a
// fresh process - serves the next call with a healthy "device". Allocations the function leaked
// stay (a function may keep a persistent workspace across calls, as real code does).
void vf::call_begin() {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_in_call = true;
    g_call_error = 0;
    g_call_message.clear();
    g_last_error = g_sticky_error = cudaSuccess;
}

int vf::call_end(std::string& message) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_in_call = false;
    int err = g_call_error;
    message = g_call_message;
    g_call_error = 0;
    g_last_error = g_sticky_error = cudaSuccess;
    return err;
}

void vf::register_device_buffer(void* ptr, size_t size) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_allocations.find(ptr);
    if (it == g_allocations.end()) g_allocations[ptr] = Allocation{size, AllocKind::kExternal, false, nullptr, ++g_next_serial};
}

void vf::unregister_device_buffers() {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::erase_if(g_allocations, [](const auto& kv) { return kv.second.kind == AllocKind::kExternal; });
}

// ---- hooks of the evaluation driver (vf_core.h) ---------------------------------------------------
void vf::enable_device_guard() {
#if !defined(__SANITIZE_ADDRESS__)
    // ASan's heap checks need malloc'd blocks (and its own SEGV handler): no guard there.
    std::lock_guard<std::mutex> lock(g_guard_mutex);
    if (g_guard) return;
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0) g_page = (size_t)page;
    for (int sig : {SIGSEGV, SIGBUS}) {
        struct sigaction sa {};
        sa.sa_sigaction = guard_fault;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, &g_previous[sig]);
    }
    g_guard = true;
#endif
}

bool vf::device_guard_enabled() { return g_guard; }

void vf::label_device_buffer(const void* ptr, const char* label) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_allocations.find(ptr);
    if (it != g_allocations.end()) it->second.label = label;
}

void vf::reset_copy_counters() {
    g_copied_d2h.store(0);
    g_copied_h2d.store(0);
}

void vf::copy_counters(uint64_t* device_to_host, uint64_t* host_to_device) {
    if (device_to_host) *device_to_host = g_copied_d2h.load();
    if (host_to_device) *host_to_device = g_copied_h2d.load();
}

void vf::note_symbol(const void* address, size_t size) {
    if (!address) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!find_allocation(address))
        g_allocations[address] = Allocation{size, AllocKind::kSymbol, false, nullptr, ++g_next_serial};
}

// ---- device clocks -----------------------------------------------------------------------------
// clock64() / clock() in device code count cycles of the reported 1.755 GHz clock, derived from the
// monotonic clock (so a spin-wait `while (clock64() - t0 < n)` lasts n / 1.755 GHz of wall time,
// and measured cycle counts are plausible). Threads of a block run one after another on a worker,
// so a thread that keeps reading the clock - a spin-wait - yields to the block's other threads at
// most every 20 us, as __nanosleep does: the threads then wait side by side (a block whose every
// thread sleeps N cycles takes ~N cycles, not N per thread), and a thread that spins until another
// thread of its block has done something does not starve that thread.
namespace {
constexpr long long kClockKHz = 1755000;       // cudaDeviceProp::clockRate
constexpr long long kSpinSliceNs = 20000;
thread_local long long tl_last_clock_yield = 0;  // per worker thread
inline long long monotonic_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
inline long long device_ns() {
    long long ns = monotonic_ns();
    if (vf::in_kernel() && ns - tl_last_clock_yield >= kSpinSliceNs) {
        tl_last_clock_yield = ns;
        vf::yield_thread();
        ns = monotonic_ns();
    }
    return ns;
}
}  // namespace

long long vf::device_clock64() {
    long long ns = device_ns();
    // cycles = ns * 1.755 without overflow for any uptime
    return (ns / 1000000) * kClockKHz + (ns % 1000000) * kClockKHz / 1000000;
}

unsigned long long vf::device_globaltimer() { return (unsigned long long)device_ns(); }

// clock() is one name for two functions: CUDA's device clock() (cycles) and the C library's
// (processor time of the process, CLOCKS_PER_SEC units). A definition in the executable takes
// the place of glibc's, so inside a kernel it is the device clock and elsewhere glibc's.
extern "C" clock_t clock(void) noexcept {
    if (vf::in_kernel()) return (clock_t)vf::device_clock64();
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return (clock_t)-1;
    return (clock_t)(ts.tv_sec * (long long)CLOCKS_PER_SEC + ts.tv_nsec / (1000000000LL / CLOCKS_PER_SEC));
}

// glibc's assert() calls __assert_fail; a definition in the executable wins over libc's, so this
// catches every assert whichever header defined the macro (<cassert> may be re-included by the
// user after our prelude). In device code a failed assert aborts the kernel like on a GPU -
// cudaErrorAssert, "device-side assert triggered", the host program continues - instead of
// killing the whole process; in host code it behaves as glibc's (message, then abort()).
extern "C" void __assert_fail(const char* expr, const char* file, unsigned int line, const char* function) noexcept {
    if (vf::in_kernel()) vf::device_assert_failed(expr, file, line, function);
    fflush(stdout);
    fprintf(stderr, "%s: %s:%u: %s: Assertion `%s' failed.\n", program_invocation_short_name, file, line,
            function ? function : "?", expr);
    fflush(stderr);
    abort();
}

namespace {
// A program killed by a signal (abort(), a segfault) would lose the stdout still in stdio's
// buffer - and with it the program's own diagnostics. Flush it (best effort: only when no other
// thread holds the stream) and re-raise with the default action so the exit status is unchanged.
// Not under ASan, whose own SEGV handler must stay in charge.
void flush_on_fatal_signal(int sig) {
    if (ftrylockfile(stdout) == 0) {
        fflush_unlocked(stdout);
        funlockfile(stdout);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}
#if !defined(__SANITIZE_ADDRESS__)
[[maybe_unused]] const bool g_flush_handlers = [] {
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
        struct sigaction sa {};
        sa.sa_handler = flush_on_fatal_signal;
        sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
        sigaction(sig, &sa, nullptr);
    }
    return true;
}();
#endif
}  // namespace

extern "C" {

// ---- errors ----------------------------------------------------------------------------------
cudaError_t cudaGetLastError(void) {
    if (vf::in_kernel()) return (cudaError_t)vf::device_last_error(true);  // device code: its own launches
    std::lock_guard<std::mutex> lock(g_mutex);
    cudaError_t e = g_last_error;
    g_last_error = g_sticky_error;
    return e;
}
cudaError_t cudaPeekAtLastError(void) {
    if (vf::in_kernel()) return (cudaError_t)vf::device_last_error(false);
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_last_error;
}

#define VF_ERRORS(X)                                                                            \
    X(cudaSuccess, "no error")                                                                    \
    X(cudaErrorInvalidValue, "invalid argument")                                                  \
    X(cudaErrorMemoryAllocation, "out of memory")                                                 \
    X(cudaErrorInitializationError, "initialization error")                                       \
    X(cudaErrorInvalidConfiguration, "invalid configuration argument")                            \
    X(cudaErrorInvalidSymbol, "invalid device symbol")                                            \
    X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")                       \
    X(cudaErrorInvalidDeviceFunction, "invalid device function")                                  \
    X(cudaErrorNoDevice, "no CUDA-capable device is detected")                                    \
    X(cudaErrorInvalidDevice, "invalid device ordinal")                                           \
    X(cudaErrorInvalidResourceHandle, "invalid resource handle")                                  \
    X(cudaErrorNotReady, "device not ready")                                                      \
    X(cudaErrorIllegalAddress, "an illegal memory access was encountered")                        \
    X(cudaErrorLaunchOutOfResources, "too many resources requested for launch")                   \
    X(cudaErrorLaunchTimeout, "the launch timed out and was terminated")                          \
    X(cudaErrorAssert, "device-side assert triggered")                                            \
    X(cudaErrorLaunchFailure, "unspecified launch failure")                                       \
    X(cudaErrorNotSupported, "operation not supported")                                           \
    X(cudaErrorCooperativeLaunchTooLarge, "too many blocks in cooperative launch")                \
    X(cudaErrorInvalidDevicePointer, "invalid device pointer")                                    \
    X(cudaErrorUnsupportedLimit, "limit is not supported on this architecture")                  \
    X(cudaErrorPeerAccessUnsupported, "peer access is not supported between these two devices")  \
    X(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled")                        \
    X(cudaErrorPeerAccessNotEnabled, "peer access has not been enabled")                          \
    X(cudaErrorNotPermitted, "operation not permitted")                                           \
    X(cudaErrorUnknown, "unknown error")                                                          \
    VF_ERRORS_CUDA12(X)
#if defined(VF_HAVE_CUDA_HEADERS)
// Stream capture, graphs and dynamic parallelism (graphs.cpp, device_launch.cpp).
#define VF_ERRORS_CUDA12(X)                                                                                     \
    X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing")                    \
    X(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture")             \
    X(cudaErrorStreamCaptureMerge, "operation would result in a merge of separate capture sequences")           \
    X(cudaErrorStreamCaptureUnmatched, "capture was not ended in the same stream as it began")                  \
    X(cudaErrorStreamCaptureUnjoined, "capturing stream has unjoined work")                                     \
    X(cudaErrorStreamCaptureIsolation, "dependency created on uncaptured work in another stream")               \
    X(cudaErrorStreamCaptureImplicit, "operation would make the legacy stream depend on a capturing blocking stream") \
    X(cudaErrorCapturedEvent, "operation not permitted on an event last recorded in a capturing stream")       \
    X(cudaErrorStreamCaptureWrongThread, "attempt to terminate a thread-local capture sequence from another thread") \
    X(cudaErrorGraphExecUpdateFailure, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update") \
    X(cudaErrorIllegalState, "the operation cannot be performed in the present state")                          \
    X(cudaErrorLaunchMaxDepthExceeded, "launch would exceed maximum depth of nested launches")                  \
    X(cudaErrorLaunchPendingCountExceeded, "launch failed because launch would exceed cudaLimitDevRuntimePendingLaunchCount") \
    X(cudaErrorOperatingSystem, "OS call failed or operation not supported on this OS")
#else
#define VF_ERRORS_CUDA12(X)
#endif

const char* cudaGetErrorString(cudaError_t e) {
#define X(code, text) \
    case code: return text;
    switch (e) { VF_ERRORS(X) default: return "unrecognized error code"; }
#undef X
}
const char* cudaGetErrorName(cudaError_t e) {
#define X(code, text) \
    case code: return #code;
    switch (e) { VF_ERRORS(X) default: return "cudaErrorUnknown"; }
#undef X
}

// ---- device management -----------------------------------------------------------------------
cudaError_t cudaGetDeviceCount(int* count) {
    *count = 1;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return set_error(device == 0 ? cudaSuccess : cudaErrorInvalidDevice); }
cudaError_t cudaGetDevice(int* device) {
    *device = g_device;
    return cudaSuccess;
}
cudaError_t cudaSetDeviceFlags(unsigned int) { return cudaSuccess; }
cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
    *flags = 0;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
    if (vf::in_kernel()) return (cudaError_t)vf::device_synchronize_refused();
    VF_CAPTURED(vf::capture_forbids_sync());
    return sticky();
}
cudaError_t cudaDeviceReset(void) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_last_error = g_sticky_error = cudaSuccess;
    return cudaSuccess;
}
// Limits are recorded and read back (none changes execution). The persisting-L2 size is capped
// at the device's maximum, as CUDA rounds it down.
static bool known_limit(int limit, size_t* default_value) {
    switch (limit) {
        case cudaLimitStackSize: *default_value = 1024; return true;
        case cudaLimitPrintfFifoSize: *default_value = 1 << 20; return true;
        case cudaLimitMallocHeapSize: *default_value = 8 << 20; return true;
#if defined(VF_HAVE_CUDA_HEADERS)
        case cudaLimitDevRuntimeSyncDepth: *default_value = 2; return true;
        case cudaLimitDevRuntimePendingLaunchCount: *default_value = 2048; return true;
        case cudaLimitMaxL2FetchGranularity: *default_value = 32; return true;
        case cudaLimitPersistingL2CacheSize: *default_value = 0; return true;
#endif
        default: return false;
    }
}
cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
    size_t def;
    if (!known_limit((int)limit, &def)) return set_error(cudaErrorUnsupportedLimit);
#if defined(VF_HAVE_CUDA_HEADERS)
    if (limit == cudaLimitPersistingL2CacheSize) value = std::min(value, kPersistingL2Max);
    if (limit == cudaLimitMaxL2FetchGranularity && (value > 128 || (value & (value - 1))))
        return set_error(cudaErrorInvalidValue);
#endif
    std::lock_guard<std::mutex> lock(g_mutex);
    g_limits[(int)limit] = value;
    return g_sticky_error;
}
cudaError_t cudaDeviceGetLimit(size_t* value, enum cudaLimit limit) {
    size_t def;
    if (!value) return set_error(cudaErrorInvalidValue);
    if (!known_limit((int)limit, &def)) return set_error(cudaErrorUnsupportedLimit);
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_limits.find((int)limit);
    *value = it == g_limits.end() ? def : it->second;
    return cudaSuccess;
}
cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache) { return cudaSuccess; }
cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache* c) {
    *c = cudaFuncCachePreferNone;
    return cudaSuccess;
}
// Pre-CUDA-4 names of the device functions (declared in vf_api_templates.h: CUDA 13 dropped them).
cudaError_t cudaThreadSynchronize(void) { return cudaDeviceSynchronize(); }
cudaError_t cudaThreadExit(void) { return cudaDeviceReset(); }
cudaError_t cudaThreadSetLimit(enum cudaLimit limit, size_t value) { return cudaDeviceSetLimit(limit, value); }
cudaError_t cudaThreadGetLimit(size_t* value, enum cudaLimit limit) { return cudaDeviceGetLimit(value, limit); }
cudaError_t cudaThreadSetCacheConfig(enum cudaFuncCache c) { return cudaDeviceSetCacheConfig(c); }
cudaError_t cudaThreadGetCacheConfig(enum cudaFuncCache* c) { return cudaDeviceGetCacheConfig(c); }
cudaError_t cudaInitDevice(int device, unsigned int, unsigned int) {
    return set_error(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}
cudaError_t cudaSetValidDevices(int* devices, int len) {
    for (int i = 0; i < len; ++i)
        if (!devices || devices[i] != 0) return set_error(cudaErrorInvalidDevice);
    return cudaSuccess;
}
cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int len, int device) {
    if (!bus_id || len <= 0) return set_error(cudaErrorInvalidValue);
    if (device != 0) return set_error(cudaErrorInvalidDevice);
    snprintf(bus_id, (size_t)len, "0000:00:00.0");
    return cudaSuccess;
}
cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* bus_id) {
    if (!device || !bus_id) return set_error(cudaErrorInvalidValue);
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
    if (least) *least = kLeastPriority;
    if (greatest) *greatest = kGreatestPriority;
    return cudaSuccess;
}

// The reported device: a small Hopper-class GPU (compute capability 9.0, 16 SMs) - real limits
// for blocks, shared memory and registers, but an SM count that keeps grids sized from it
// CPU-friendly.
// Units compiled with the runtime's header call vf_get_device_properties with our cudaDeviceProp,
// which extends CUDA 13's struct (vf_types.h); plain host units call CUDA's entry point below with
// CUDA's smaller struct, which gets exactly that many bytes.
cudaError_t cudaGetDeviceProperties(struct VF_DEVICE_PROP_PARAM* base, int device) {
    cudaDeviceProp full;
    cudaError_t err = vf_get_device_properties(&full, device);
    if (err == cudaSuccess) memcpy(base, static_cast<VF_DEVICE_PROP_PARAM*>(&full), sizeof *base);
    return err;
}

cudaError_t vf_get_device_properties(cudaDeviceProp* p, int device) {
    if (device != 0) return set_error(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    p->clockRate = 1755000;        // kHz, an H100's boost clock
    p->memoryClockRate = 2619000;  // kHz
    p->deviceOverlap = 1;
    p->computeMode = 0;            // cudaComputeModeDefault
    snprintf(p->name, sizeof p->name, "veriforge CPU runtime (emulated sm_90)");
    p->totalGlobalMem = kDeviceMemory;
    p->sharedMemPerBlock = 48 * 1024;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->memPitch = 2147483647;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = 1024;
    p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = 65535;
    p->maxGridSize[2] = 65535;
    p->totalConstMem = 65536;
    p->major = 9;
    p->minor = 0;
    p->textureAlignment = 512;
    p->texturePitchAlignment = 32;
    p->multiProcessorCount = kNumSMs;
    p->canMapHostMemory = 1;
    p->concurrentKernels = 1;
    p->asyncEngineCount = 2;
    p->unifiedAddressing = 1;
    p->memoryBusWidth = 5120;
    p->l2CacheSize = 50 * 1024 * 1024;
    p->maxThreadsPerMultiProcessor = 2048;
    p->streamPrioritiesSupported = 1;
    p->globalL1CacheSupported = 1;
    p->localL1CacheSupported = 1;
    p->sharedMemPerMultiprocessor = 233472;
    p->regsPerMultiprocessor = 65536;
    p->managedMemory = 1;
    p->concurrentManagedAccess = 1;
    p->cooperativeLaunch = 1;  // cooperative.cpp
    p->sharedMemPerBlockOptin = 232448;
    p->maxBlocksPerMultiProcessor = 32;
    p->reservedSharedMemPerBlock = 1024;
    p->hostNativeAtomicSupported = 1;
    p->pageableMemoryAccess = 1;
    p->persistingL2CacheMaxSize = (int)kPersistingL2Max;
#if defined(VF_HAVE_CUDA_HEADERS)
    p->accessPolicyMaxWindowSize = kAccessPolicyMaxWindow;
    p->memoryPoolsSupported = 1;
    p->computePreemptionSupported = 1;
    p->directManagedMemAccessFromHost = 1;
    p->hostRegisterSupported = 1;
    p->canUseHostPointerForRegisteredMem = 1;
    p->maxTexture1DLinear = 268435456;
    vf::texture_limits(p);
    p->singleToDoublePrecisionPerfRatio = 2;
#endif
    return cudaSuccess;
}

cudaError_t cudaChooseDevice(int* device, const struct VF_DEVICE_PROP_PARAM*) {
    if (!device) return set_error(cudaErrorInvalidValue);
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
    if (device != 0) return set_error(cudaErrorInvalidDevice);
    switch (attr) {
        case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
        case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: *value = 1024; break;
        case cudaDevAttrMaxBlockDimZ: *value = 64; break;
        case cudaDevAttrMaxGridDimX: *value = 2147483647; break;
        case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: *value = 65535; break;
        case cudaDevAttrMaxSharedMemoryPerBlock: *value = 48 * 1024; break;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = 232448; break;
        case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = 233472; break;
        case cudaDevAttrTotalConstantMemory: *value = 65536; break;
        case cudaDevAttrWarpSize: *value = 32; break;
        case cudaDevAttrMaxRegistersPerBlock: case cudaDevAttrMaxRegistersPerMultiprocessor: *value = 65536; break;
        case cudaDevAttrMultiProcessorCount: *value = kNumSMs; break;
        case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
        case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
        case cudaDevAttrMaxThreadsPerMultiProcessor: *value = 2048; break;
        case cudaDevAttrMaxBlocksPerMultiprocessor: *value = 32; break;
        case cudaDevAttrL2CacheSize: *value = 50 * 1024 * 1024; break;
        case cudaDevAttrGlobalMemoryBusWidth: *value = 5120; break;
        case cudaDevAttrClockRate: *value = 1755000; break;
#if defined(VF_HAVE_CUDA_HEADERS)
        case cudaDevAttrMemoryClockRate: *value = 2619000; break;
        case cudaDevAttrMaxPitch: *value = 2147483647; break;
        case cudaDevAttrAsyncEngineCount: *value = 2; break;
        case cudaDevAttrConcurrentManagedAccess: case cudaDevAttrPageableMemoryAccess:
        case cudaDevAttrGlobalL1CacheSupported: case cudaDevAttrLocalL1CacheSupported:
        case cudaDevAttrStreamPrioritiesSupported: *value = 1; break;
        case cudaDevAttrMemoryPoolsSupported: case cudaDevAttrHostRegisterSupported:
        case cudaDevAttrHostNativeAtomicSupported: case cudaDevAttrComputePreemptionSupported:
        case cudaDevAttrDirectManagedMemAccessFromHost: case cudaDevAttrCanUseHostPointerForRegisteredMem:
        case cudaDevAttrGpuOverlap: *value = 1; break;
        case cudaDevAttrMaxPersistingL2CacheSize: *value = (int)kPersistingL2Max; break;
        case cudaDevAttrMaxAccessPolicyWindowSize: *value = kAccessPolicyMaxWindow; break;
        case cudaDevAttrReservedSharedMemoryPerBlock: *value = 1024; break;
        case cudaDevAttrSingleToDoublePrecisionPerfRatio: *value = 2; break;
        case cudaDevAttrTextureAlignment: *value = 512; break;
        case cudaDevAttrTexturePitchAlignment: *value = 32; break;
        case cudaDevAttrMemSyncDomainCount: *value = 4; break;
        case cudaDevAttrComputeMode: *value = cudaComputeModeDefault; break;
        case cudaDevAttrCooperativeLaunch: *value = 1; break;  // cooperative.cpp
        // Not offered: clusters, IPC / fabric handles, peer access, ECC...
#endif
        case cudaDevAttrUnifiedAddressing: case cudaDevAttrManagedMemory: case cudaDevAttrConcurrentKernels:
        case cudaDevAttrCanMapHostMemory: *value = 1; break;
        default:
#if defined(VF_HAVE_CUDA_HEADERS)
            if (vf::texture_attribute(attr, value)) break;
#endif
            *value = 0;
            break;
    }
    return cudaSuccess;
}

// ---- memory ----------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** ptr, size_t size) {
    if (cudaError_t e = sticky()) return e;
    VF_CAPTURED(vf::capture_forbids_sync());
    if (!ptr) return set_error(cudaErrorInvalidValue);
    *ptr = device_alloc(size);
    return *ptr ? cudaSuccess : set_error(cudaErrorMemoryAllocation);
}
// Managed memory is legitimately host-accessible: ordinary memory, never guarded.
cudaError_t cudaMallocManaged(void** ptr, size_t size, unsigned int) {
    if (cudaError_t e = sticky()) return e;
    if (!ptr) return set_error(cudaErrorInvalidValue);
    *ptr = device_alloc(size, AllocKind::kManaged);
    return *ptr ? cudaSuccess : set_error(cudaErrorMemoryAllocation);
}
static cudaError_t pool_alloc(void** ptr, size_t size, MemPool* p) {
    cudaError_t e = cudaMalloc(ptr, size);
    if (e != cudaSuccess) return e;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_pool_allocations[*ptr] = {p, size};
    p->used += size;
    p->used_high = std::max(p->used_high, p->used);
    p->reserved = std::max(p->reserved, p->used);
    p->reserved_high = std::max(p->reserved_high, p->reserved);
    return cudaSuccess;
}
cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t s) {
    VF_CAPTURED(vf::capture_malloc(ptr, size, s));
    return pool_alloc(ptr, size, g_current_pool);
}
#if defined(VF_HAVE_CUDA_HEADERS)
cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t s) {
    if (!pool) return set_error(cudaErrorInvalidValue);
    VF_CAPTURED(vf::capture_malloc(ptr, size, s));
    return pool_alloc(ptr, size, reinterpret_cast<MemPool*>(pool));
}
// ---- memory pools: the device's default pool, user pools; attributes as CUDA defines them ------
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
    if (!pool) return set_error(cudaErrorInvalidValue);
    if (device != 0) return set_error(cudaErrorInvalidDevice);
    *pool = reinterpret_cast<cudaMemPool_t>(&g_default_pool);
    return sticky();
}
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) {
    if (!pool) return set_error(cudaErrorInvalidValue);
    if (device != 0) return set_error(cudaErrorInvalidDevice);
    std::lock_guard<std::mutex> lock(g_mutex);
    *pool = reinterpret_cast<cudaMemPool_t>(g_current_pool);
    return g_sticky_error;
}
cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool) {
    if (!pool) return set_error(cudaErrorInvalidValue);
    if (device != 0) return set_error(cudaErrorInvalidDevice);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_current_pool = reinterpret_cast<MemPool*>(pool);
    return g_sticky_error;
}
cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const struct cudaMemPoolProps* props) {
    if (!pool || !props) return set_error(cudaErrorInvalidValue);
    if (props->location.type == cudaMemLocationTypeDevice && props->location.id != 0)
        return set_error(cudaErrorInvalidDevice);
    *pool = reinterpret_cast<cudaMemPool_t>(new MemPool());
    return sticky();
}
cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
    MemPool* p = reinterpret_cast<MemPool*>(pool);
    if (!p || p->is_default) return set_error(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_current_pool == p) g_current_pool = &g_default_pool;
    // Memory still allocated from it stays valid until freed (as CUDA defers the destruction).
    if (p->used == 0) delete p;
    return g_sticky_error;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void* value) {
    MemPool* p = reinterpret_cast<MemPool*>(pool);
    if (!p || !value) return set_error(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(g_mutex);
    switch (attr) {
        case cudaMemPoolReuseFollowEventDependencies: p->reuse_follow = *static_cast<int*>(value) != 0; break;
        case cudaMemPoolReuseAllowOpportunistic: p->reuse_opportunistic = *static_cast<int*>(value) != 0; break;
        case cudaMemPoolReuseAllowInternalDependencies: p->reuse_internal = *static_cast<int*>(value) != 0; break;
        case cudaMemPoolAttrReleaseThreshold:
            p->release_threshold = *static_cast<uint64_t*>(value);
            break;
        case cudaMemPoolAttrReservedMemHigh:  // may only be reset (to the current value) by writing 0
            if (*static_cast<uint64_t*>(value) != 0) {
                g_last_error = cudaErrorInvalidValue;
                return cudaErrorInvalidValue;
            }
            p->reserved_high = p->reserved;
            break;
        case cudaMemPoolAttrUsedMemHigh:
            if (*static_cast<uint64_t*>(value) != 0) {
                g_last_error = cudaErrorInvalidValue;
                return cudaErrorInvalidValue;
            }
            p->used_high = p->used;
            break;
        default:
            g_last_error = cudaErrorInvalidValue;
            return cudaErrorInvalidValue;
    }
    return g_sticky_error;
}
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void* value) {
    MemPool* p = reinterpret_cast<MemPool*>(pool);
    if (!p || !value) return set_error(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(g_mutex);
    switch (attr) {
        case cudaMemPoolReuseFollowEventDependencies: *static_cast<int*>(value) = p->reuse_follow; break;
        case cudaMemPoolReuseAllowOpportunistic: *static_cast<int*>(value) = p->reuse_opportunistic; break;
        case cudaMemPoolReuseAllowInternalDependencies: *static_cast<int*>(value) = p->reuse_internal; break;
        case cudaMemPoolAttrReleaseThreshold: *static_cast<uint64_t*>(value) = p->release_threshold; break;
        case cudaMemPoolAttrReservedMemCurrent: *static_cast<uint64_t*>(value) = p->reserved; break;
        case cudaMemPoolAttrReservedMemHigh: *static_cast<uint64_t*>(value) = p->reserved_high; break;
        case cudaMemPoolAttrUsedMemCurrent: *static_cast<uint64_t*>(value) = p->used; break;
        case cudaMemPoolAttrUsedMemHigh: *static_cast<uint64_t*>(value) = p->used_high; break;
        default:
            g_last_error = cudaErrorInvalidValue;
            return cudaErrorInvalidValue;
    }
    return g_sticky_error;
}
// Releases reserved memory beyond what is in use, keeping at least `keep` bytes reserved.
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
    MemPool* p = reinterpret_cast<MemPool*>(pool);
    if (!p) return set_error(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(g_mutex);
    p->reserved = std::max<uint64_t>(p->used, std::min<uint64_t>(p->reserved, keep));
    return g_sticky_error;
}
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const struct cudaMemAccessDesc* list, size_t count) {
    if (!pool || (count && !list)) return set_error(cudaErrorInvalidValue);
    for (size_t i = 0; i < count; ++i)
        if (list[i].location.type == cudaMemLocationTypeDevice && list[i].location.id != 0)
            return set_error(cudaErrorInvalidDevice);
    return sticky();
}
cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags* flags, cudaMemPool_t pool, struct cudaMemLocation* location) {
    if (!flags || !pool || !location) return set_error(cudaErrorInvalidValue);
    if (location->type == cudaMemLocationTypeDevice && location->id != 0) return set_error(cudaErrorInvalidDevice);
    *flags = cudaMemAccessFlagsProtReadWrite;
    return sticky();
}
cudaError_t cudaDeviceGetP2PAttribute(int* value, enum cudaDeviceP2PAttr, int src, int dst) {
    if (!value) return set_error(cudaErrorInvalidValue);
    (void)src;
    (void)dst;
    return set_error(cudaErrorInvalidDevice);  // one device: no pair of distinct devices exists
}
cudaError_t cudaMemAdvise(const void*, size_t, enum cudaMemoryAdvise, struct cudaMemLocation) { return sticky(); }
#endif
// ---- peer access: one device, so there is no peer ----------------------------------------------
// canAccessPeer is 0 for every pair (a device is not its own peer); enabling or disabling access
// to a peer fails with cudaErrorInvalidDevice, as CUDA answers for the current device or a
// device that does not exist.
cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
    if (!can) return set_error(cudaErrorInvalidValue);
    if (device != 0 || peer != 0) return set_error(cudaErrorInvalidDevice);
    *can = 0;
    return sticky();
}
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned int flags) {
    if (flags != 0) return set_error(cudaErrorInvalidValue);
    return set_error(cudaErrorInvalidDevice);
}
cudaError_t cudaDeviceDisablePeerAccess(int) { return set_error(cudaErrorInvalidDevice); }
cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t count) {
    if (dst_device != 0 || src_device != 0) return set_error(cudaErrorInvalidDevice);
    return cudaMemcpy(dst, src, count, cudaMemcpyDeviceToDevice);
}
cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t count,
                                cudaStream_t) {
    return cudaMemcpyPeer(dst, dst_device, src, src_device, count);
}
cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
    *pitch = (width + 255) / 256 * 256;
    return cudaMalloc(ptr, *pitch * height);
}
cudaError_t cudaMallocHost(void** ptr, size_t size) {
    if (!ptr) return set_error(cudaErrorInvalidValue);
    *ptr = device_alloc(size, AllocKind::kHost);
    return *ptr ? cudaSuccess : set_error(cudaErrorMemoryAllocation);
}
cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int) { return cudaMallocHost(ptr, size); }
cudaError_t cudaFree(void* ptr) {
    if (!ptr) return cudaSuccess;
    if (cudaError_t e = sticky()) return e;
    VF_CAPTURED(vf::graph_mem_free(ptr));  // memory of a graph's allocation node
    if (!device_free(ptr, AllocKind::kDevice, AllocKind::kManaged)) return set_error(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_pool_allocations.find(ptr);
    if (it != g_pool_allocations.end()) {  // memory of a pool (cudaMallocAsync): stays reserved up to the threshold
        MemPool* p = it->second.first;
        p->used -= it->second.second;
        p->reserved = std::max(p->used, std::min(p->reserved, p->used + p->release_threshold));
        g_pool_allocations.erase(it);
    }
    return cudaSuccess;
}
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t s) {
    VF_CAPTURED(vf::capture_free(ptr, s));
    return cudaFree(ptr);
}
cudaError_t cudaFreeHost(void* ptr) {
    if (!ptr) return cudaSuccess;
    return device_free(ptr, AllocKind::kHost) ? cudaSuccess : set_error(cudaErrorInvalidValue);
}
cudaError_t cudaHostRegister(void*, size_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaHostUnregister(void*) { return cudaSuccess; }
cudaError_t cudaHostGetDevicePointer(void** dev, void* host, unsigned int) {
    *dev = host;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
    std::lock_guard<std::mutex> lock(g_mutex);
    *total = kDeviceMemory;
    *free_bytes = g_allocated >= kDeviceMemory ? 0 : kDeviceMemory - g_allocated;
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
    if (cudaError_t e = sticky()) return e;
    if ((int)kind < 0 || (int)kind > 4) return set_error(cudaErrorInvalidMemcpyDirection);
    if (count && (!dst || !src)) return set_error(cudaErrorInvalidValue);
    return copy_bytes(dst, src, count);
}
#if defined(VF_HAVE_CUDA_HEADERS)
// Device memory = cudaMalloc'd blocks and Module.call's argument arrays; pinned = cudaMallocHost;
// anything else is ordinary (unregistered) host memory, as CUDA reports it under UVA.
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attr, const void* ptr) {
    if (!attr) return set_error(cudaErrorInvalidValue);
    memset(attr, 0, sizeof *attr);
    std::lock_guard<std::mutex> lock(g_mutex);
    const Allocation* a = find_allocation(ptr);
    if (!a) {
        attr->type = cudaMemoryTypeUnregistered;
        attr->device = -2;
        return cudaSuccess;
    }
    attr->device = 0;
    attr->type = a->kind == AllocKind::kHost      ? cudaMemoryTypeHost
                 : a->kind == AllocKind::kManaged ? cudaMemoryTypeManaged
                                                  : cudaMemoryTypeDevice;
    attr->devicePointer = const_cast<void*>(ptr);
    bool host_ok = a->kind == AllocKind::kHost || a->kind == AllocKind::kManaged;
    attr->hostPointer = host_ok ? const_cast<void*>(ptr) : nullptr;
    return cudaSuccess;
}
#endif
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind, cudaStream_t s) {
    VF_CAPTURED(vf::capture_memcpy(dst, src, count, kind, s));
    return cudaMemcpy(dst, src, count, kind);
}
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind) {
    if (cudaError_t e = sticky()) return e;
    if (width > dpitch || width > spitch) return set_error(cudaErrorInvalidValue);
    DeviceAccess access;  // one toggle for all rows
    for (size_t r = 0; r < height; ++r)
        cudaMemcpy(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width, kind);
    return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind, cudaStream_t s) {
#if defined(VF_HAVE_CUDA_HEADERS)
    if (width > dpitch || width > spitch) return set_error(cudaErrorInvalidValue);
    cudaMemcpy3DParms p{};
    p.srcPtr = make_cudaPitchedPtr(const_cast<void*>(src), spitch, width, height);
    p.dstPtr = make_cudaPitchedPtr(dst, dpitch, width, height);
    p.extent = make_cudaExtent(width, height, 1);
    p.kind = kind;
    VF_CAPTURED(vf::capture_memcpy3d(&p, s));
#else
    (void)s;
#endif
    return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}
cudaError_t cudaMemset(void* ptr, int value, size_t count) {
    if (cudaError_t e = sticky()) return e;
    if (count && !ptr) return set_error(cudaErrorInvalidValue);
    DeviceAccess access;
    if (count) memset(ptr, value, count);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t s) {
    VF_CAPTURED(vf::capture_memset(ptr, count, value, count, 1, s));
    return cudaMemset(ptr, value, count);
}
cudaError_t cudaMemset2D(void* ptr, size_t pitch, int value, size_t width, size_t height) {
    DeviceAccess access;
    for (size_t r = 0; r < height; ++r) memset(static_cast<char*>(ptr) + r * pitch, value, width);
    return sticky();
}
cudaError_t cudaMemset2DAsync(void* ptr, size_t pitch, int value, size_t width, size_t height, cudaStream_t s) {
    VF_CAPTURED(vf::capture_memset(ptr, pitch, value, width, height, s));
    return cudaMemset2D(ptr, pitch, value, width, height);
}
cudaError_t cudaHostGetFlags(unsigned int* flags, void* host) {
    if (!flags) return set_error(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(g_mutex);
    const Allocation* a = find_allocation(host);
    if (!a || a->kind != AllocKind::kHost) {
        g_last_error = cudaErrorInvalidValue;
        return cudaErrorInvalidValue;
    }
    *flags = 0;  // cudaHostAllocDefault (the flags of cudaHostAlloc are not kept)
    return cudaSuccess;
}
#if defined(VF_HAVE_CUDA_HEADERS)
// 3D memory on pitched pointers (not CUDA arrays): rows padded to 256 bytes like cudaMallocPitch.
cudaError_t cudaMalloc3D(struct cudaPitchedPtr* p, struct cudaExtent extent) {
    if (!p) return set_error(cudaErrorInvalidValue);
    size_t pitch = (extent.width + 255) / 256 * 256;
    void* ptr = nullptr;
    cudaError_t e = cudaMalloc(&ptr, pitch * std::max<size_t>(extent.height, 1) * std::max<size_t>(extent.depth, 1));
    if (e != cudaSuccess) return e;
    p->ptr = ptr;
    p->pitch = pitch;
    p->xsize = extent.width;
    p->ysize = extent.height;
    return cudaSuccess;
}
cudaError_t cudaMemset3D(struct cudaPitchedPtr p, int value, struct cudaExtent extent) {
    if (cudaError_t e = sticky()) return e;
    if (!p.ptr || extent.width > p.pitch) return set_error(cudaErrorInvalidValue);
    DeviceAccess access;
    for (size_t z = 0; z < extent.depth; ++z)
        for (size_t y = 0; y < extent.height; ++y)
            memset(static_cast<char*>(p.ptr) + (z * p.ysize + y) * p.pitch, value, extent.width);
    return cudaSuccess;
}
cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr p, int value, struct cudaExtent extent, cudaStream_t) {
    return cudaMemset3D(p, value, extent);
}
cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms* m) {
    if (cudaError_t e = sticky()) return e;
    if (!m) return set_error(cudaErrorInvalidValue);
    if (m->srcArray || m->dstArray) return vf::memcpy3d_array(m);  // CUDA arrays: textures.cpp
    const cudaPitchedPtr &s = m->srcPtr, &d = m->dstPtr;
    size_t width = m->extent.width;
    if (!s.ptr || !d.ptr || m->srcPos.x + width > s.pitch || m->dstPos.x + width > d.pitch)
        return set_error(cudaErrorInvalidValue);
    DeviceAccess access;
    for (size_t z = 0; z < m->extent.depth; ++z)
        for (size_t y = 0; y < m->extent.height; ++y) {
            size_t so = ((m->srcPos.z + z) * s.ysize + m->srcPos.y + y) * s.pitch + m->srcPos.x;
            size_t dof = ((m->dstPos.z + z) * d.ysize + m->dstPos.y + y) * d.pitch + m->dstPos.x;
            copy_bytes(static_cast<char*>(d.ptr) + dof, static_cast<const char*>(s.ptr) + so, width);
        }
    return cudaSuccess;
}
cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms* m, cudaStream_t s) {
    VF_CAPTURED(vf::capture_memcpy3d(m, s));
    return cudaMemcpy3D(m);
}
#endif
// Symbols (__device__ / __constant__ variables) are ordinary host globals: the "symbol" the
// cuda_runtime.h templates pass is the variable's address.
cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind) {
    if (!symbol) return set_error(cudaErrorInvalidSymbol);
    if (cudaError_t e = sticky()) return e;
    if ((int)kind < 0 || (int)kind > 4) return set_error(cudaErrorInvalidMemcpyDirection);
    if (count && !src) return set_error(cudaErrorInvalidValue);
    return copy_bytes(const_cast<char*>(static_cast<const char*>(symbol)) + offset, src, count, 1, -1);
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                 enum cudaMemcpyKind kind) {
    if (!symbol) return set_error(cudaErrorInvalidSymbol);
    if (cudaError_t e = sticky()) return e;
    if ((int)kind < 0 || (int)kind > 4) return set_error(cudaErrorInvalidMemcpyDirection);
    if (count && !dst) return set_error(cudaErrorInvalidValue);
    return copy_bytes(dst, static_cast<const char*>(symbol) + offset, count, -1, 1);
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind, cudaStream_t s) {
    if (symbol) VF_CAPTURED(vf::capture_memcpy(const_cast<char*>(static_cast<const char*>(symbol)) + offset, src, count, kind, s));
    return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t s) {
    if (symbol) VF_CAPTURED(vf::capture_memcpy(dst, static_cast<const char*>(symbol) + offset, count, kind, s));
    return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}
cudaError_t cudaGetSymbolAddress(void** dev, const void* symbol) {
    *dev = const_cast<void*>(symbol);
    return cudaSuccess;
}
cudaError_t cudaMemPrefetchAsync(const void*, size_t, struct cudaMemLocation, unsigned int, cudaStream_t) {
    return sticky();
}

// ---- streams and events (synchronous: work runs in issue order) ------------------------------
cudaError_t cudaStreamCreate(cudaStream_t* s) {
    if (!s) return set_error(cudaErrorInvalidValue);
    *s = reinterpret_cast<cudaStream_t>(new_stream(0, 0));
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
    if (!s || flags > 1u) return set_error(cudaErrorInvalidValue);
    *s = reinterpret_cast<cudaStream_t>(new_stream(flags, 0));
    return cudaSuccess;
}
// Out-of-range priorities are clamped to [greatest, least], as CUDA does.
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int priority) {
    if (!s || flags > 1u) return set_error(cudaErrorInvalidValue);
    *s = reinterpret_cast<cudaStream_t>(new_stream(flags, priority));
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    VF_CAPTURE_ONLY(vf::capture_forget_stream(s));
    if (reinterpret_cast<uintptr_t>(s) > 2) delete reinterpret_cast<Stream*>(s);
    return cudaSuccess;
}
cudaError_t cudaStreamGetPriority(cudaStream_t s, int* priority) {
    if (!priority) return set_error(cudaErrorInvalidValue);
    *priority = stream_of(s)->priority;
    return sticky();
}
cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int* flags) {
    if (!flags) return set_error(cudaErrorInvalidValue);
    *flags = stream_of(s)->flags;
    return sticky();
}
cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long* id) {
    if (!id) return set_error(cudaErrorInvalidValue);
    *id = stream_of(s)->id;
    return sticky();
}
cudaError_t cudaStreamGetDevice(cudaStream_t, int* device) {
    if (!device) return set_error(cudaErrorInvalidValue);
    *device = 0;
    return sticky();
}
// All work ran when it was issued: a stream is always complete (cudaSuccess, never
// cudaErrorNotReady), unless the device has faulted.
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    VF_CAPTURED(vf::capture_unsupported(s));  // a capturing stream cannot be synchronised
    return sticky();
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
    VF_CAPTURED(vf::capture_unsupported(s));
    return sticky();
}
// Stream callbacks and host functions run at once, in issue order (everything before them in
// the stream has completed). A callback receives the stream's status: cudaSuccess, or the sticky
// error of a faulted device. After a fault, host functions are not run (as CUDA skips them).
cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t callback, void* user_data, unsigned int flags) {
    if (!callback || flags != 0) return set_error(cudaErrorInvalidValue);
    VF_CAPTURED(vf::capture_unsupported(s));  // not capturable (cudaLaunchHostFunc is)
    cudaError_t status = sticky();
    callback(s, status, user_data);
    return status;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* user_data) {
    if (!fn) return set_error(cudaErrorInvalidValue);
    VF_CAPTURED(vf::capture_host_func(fn, user_data, s));
    if (cudaError_t e = sticky()) return e;
    fn(user_data);
    return cudaSuccess;
}
cudaError_t cudaStreamAttachMemAsync(cudaStream_t, void*, size_t, unsigned int) { return sticky(); }
#if defined(VF_HAVE_CUDA_HEADERS)
// Stream attributes (access-policy window, synchronization policy, priority, memory sync domain):
// recorded per stream and returned by cudaStreamGetAttribute; unset ones read as zero (the
// priority attribute is the stream's priority).
cudaError_t cudaStreamSetAttribute(cudaStream_t s, cudaStreamAttrID attr, const cudaStreamAttrValue* value) {
    if (!value) return set_error(cudaErrorInvalidValue);
    Stream* st = stream_of(s);
    if (attr == cudaStreamAttributeAccessPolicyWindow) {
        const cudaAccessPolicyWindow& w = value->accessPolicyWindow;
        if (w.num_bytes > (size_t)kAccessPolicyMaxWindow || w.hitRatio < 0.0f || w.hitRatio > 1.0f)
            return set_error(cudaErrorInvalidValue);
    }
    if (attr == cudaStreamAttributePriority) {
        st->priority = std::min(kLeastPriority, std::max(kGreatestPriority, value->priority));
        return sticky();
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    st->attrs[(int)attr] = *value;
    return g_sticky_error;
}
cudaError_t cudaStreamGetAttribute(cudaStream_t s, cudaStreamAttrID attr, cudaStreamAttrValue* value) {
    if (!value) return set_error(cudaErrorInvalidValue);
    Stream* st = stream_of(s);
    memset(static_cast<void*>(value), 0, sizeof *value);
    if (attr == cudaStreamAttributePriority) {
        value->priority = st->priority;
        return sticky();
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = st->attrs.find((int)attr);
    if (it != st->attrs.end()) *value = it->second;
    return g_sticky_error;
}
cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) {
    Stream* d = stream_of(dst);
    Stream* from = stream_of(src);
    std::lock_guard<std::mutex> lock(g_mutex);
    d->attrs = from->attrs;
    d->priority = from->priority;
    return g_sticky_error;
}
#endif
cudaError_t cudaCtxResetPersistingL2Cache(void) { return sticky(); }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
    VF_CAPTURED(vf::capture_wait_event(s, e));  // forks / joins a stream capture
    return sticky();
}
cudaError_t cudaEventCreate(cudaEvent_t* e) {
    *e = reinterpret_cast<cudaEvent_t>(new Event{{}, false});
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    VF_CAPTURE_ONLY(vf::capture_forget_event(e));
    delete reinterpret_cast<Event*>(e);
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    if (!e) return set_error(cudaErrorInvalidResourceHandle);
    VF_CAPTURED(vf::capture_event_record(e, s));
    Event* ev = reinterpret_cast<Event*>(e);
    ev->when = std::chrono::steady_clock::now();
    ev->recorded = true;
    return sticky();
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int) { return cudaEventRecord(e, s); }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return sticky(); }
cudaError_t cudaEventQuery(cudaEvent_t e) {  // recorded work has always completed
    if (!e) return set_error(cudaErrorInvalidResourceHandle);
    return sticky();
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    Event* a = reinterpret_cast<Event*>(start);
    Event* b = reinterpret_cast<Event*>(end);
    if (!a || !b || !ms) return set_error(cudaErrorInvalidResourceHandle);
    if (!a->recorded || !b->recorded) return set_error(cudaErrorInvalidResourceHandle);
    *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
    return cudaSuccess;
}

// ---- launching by address ----------------------------------------------------------------------
// `cudaLaunchKernel((const void*)k, ...)`: the kernel's parameter types come from the registry the
// front end fills for every plain kernel of a file that calls cudaLaunchKernel. (Called with the
// kernel itself, the typed template in vf_launch.h launches it directly.)
cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                             cudaStream_t stream) {
    if (cudaError_t e = sticky()) return set_error(e);
    const char* name = nullptr;
    vf::ArgsLauncher launch = nullptr;
    if (!func || !vf::find_launchable(func, &name, &launch)) {
        char msg[320];
        snprintf(msg, sizeof msg, "cudaLaunchKernel: %p is not a kernel of this program (the CPU runtime launches "
                 "non-template __global__ functions by address; pass a template instance without the cast to "
                 "void*)", func);
        std::lock_guard<std::mutex> lock(g_mutex);
        if (g_in_call) {  // Module.call: a failed launch makes the call raise (LaunchError)
            if (!g_call_error) {
                g_call_error = cudaErrorInvalidDeviceFunction;
                g_call_message = msg;
            }
        } else {
            fprintf(stderr, "veriforge: %s\n", msg);
        }
        g_last_error = cudaErrorInvalidDeviceFunction;
        return cudaErrorInvalidDeviceFunction;
    }
    return (cudaError_t)launch(func, name, grid, block, args, shared, stream);
}

// ---- functions and occupancy -----------------------------------------------------------------
cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || value > 232448) return set_error(cudaErrorInvalidValue);
        std::lock_guard<std::mutex> lock(g_mutex);
        g_func_max_dynamic_smem[func] = value;
    }
    return cudaSuccess;
}
cudaError_t cudaFuncSetCacheConfig(const void*, enum cudaFuncCache) { return cudaSuccess; }
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* a, const void* func) {
    memset(a, 0, sizeof *a);
    a->maxThreadsPerBlock = 1024;
    a->numRegs = 32;
    a->ptxVersion = 90;
    a->binaryVersion = 90;
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_func_max_dynamic_smem.find(func);
    a->maxDynamicSharedSizeBytes = it == g_func_max_dynamic_smem.end() ? 48 * 1024 : it->second;
    return cudaSuccess;
}
// Occupancy as a Hopper SM would allow it from threads and shared memory alone (registers are
// not modelled): min(32 blocks, 2048 threads, 228 KB shared) per SM.
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void*, int block_size,
                                                                    size_t smem, unsigned int) {
    if (block_size <= 0) return set_error(cudaErrorInvalidValue);
    int by_threads = 2048 / ((block_size + 31) / 32 * 32);
    int by_smem = smem ? (int)(233472 / (smem + 1024)) : 32;
    *blocks = std::max(0, std::min({32, by_threads, by_smem}));
    return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* f, int block_size, size_t smem) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, f, block_size, smem, 0);
}

}  // extern "C"

#if __has_include(<cuda_profiler_api.h>)
#include <cuda_profiler_api.h>
extern "C" cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
extern "C" cudaError_t cudaProfilerStop(void) { return cudaSuccess; }
#endif

// For textures.cpp (CUDA arrays, texture and surface objects): the runtime's error state and the
// allocation that contains a pointer.
namespace vf {
cudaError_t api_error(cudaError_t e) { return set_error(e); }
cudaError_t api_sticky() { return sticky(); }
bool allocation_range(const void* p, const void** base, size_t* size) {
    std::lock_guard<std::mutex> lock(g_mutex);
    const Allocation* a = find_allocation(p, base);
    if (!a) return false;
    *size = a->size;
    return true;
}
}  // namespace vf
