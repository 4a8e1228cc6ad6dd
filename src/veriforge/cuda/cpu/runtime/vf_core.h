// veriforge CPU runtime: declarations shared by user code (through vf_cuda.h) and the runtime's
// own sources. Kept small and dependency-free so the runtime objects build once and every user
// module links against the same ABI.
#pragma once
// yield_thread() starts not-yet-started threads first (cooperative_groups.h: exact multi-warp tile barriers)
#define VF_YIELD_STARTS_NEW_THREADS 1

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "vf_types.h"  // dim3, uint3, cudaError_t ... (CUDA's own headers, or our fallback)

// CUDA's built-in index variables. One copy per OS worker thread; the fiber scheduler rewrites
// them whenever it resumes a different CUDA thread. `inline thread_local` (definition visible to
// every TU, constant-initialised) makes each access a single %fs-relative load in an executable.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

namespace vf {

// The per-CUDA-thread body: called once per thread with the launch's context.
using ThreadFn = void (*)(void* ctx);

struct GridSpec {
    const char* kernel_name;  // for messages
    dim3 grid;
    dim3 block;
    size_t shared_bytes;      // dynamic shared memory per block
    ThreadFn fn;              // one CUDA thread (used when `loop` is null)
    void* ctx;
    bool reverse;             // race probe: run blocks and threads in reverse order
    // Runs CUDA threads of the current block one after another while unstarted ones remain:
    // thread_loop() below around the kernel call, instantiated where the kernel is known so the
    // call is direct (usually inlined). Null: the scheduler loops over `fn` itself.
    ThreadFn loop = nullptr;
    // Where a `<<<...>>>` launch is written and what its arguments point to (null when unknown):
    // the race check's per-launch trace (host_api.cpp) names the launch and the argument.
    const char* file = nullptr;
    int line = 0;
    const void* const* args = nullptr;
    unsigned nargs = 0;
    const char* arg_kinds = nullptr;  // one char per argument (vf_launch.h arg_kind)
};

// The hot state of the block a worker runs, shared by the scheduler and the thread loops that
// launches instantiate in user code (one `inline thread_local` object: %fs-relative accesses).
// The running thread is threadIdx itself.
struct BlockCursor {
    unsigned next;      // run-order position of the next thread to start (see thread_loop)
    unsigned n;         // threads in the block
    unsigned bx, by;    // block.x, block.y
    bool one_dim;       // block.y == block.z == 1: threadIdx = {linear, 0, 0}
    bool reverse;       // race probe: position q runs thread n - 1 - q
    bool waited;        // the running thread entered the scheduler (barrier / warp op / yield)
    // Region execution (vf_regions.h, emitted by regions.py): the block's first kernel call may run
    // the whole block as region loops; while it does, barriers and collectives must not be reached.
    bool regions;       // set per block (unless VF_REGIONS=0); the block function consumes it
    bool in_regions;    // a block function is running the block's regions
    bool region_done;   // it finished the block: the thread loop stops (see waited_thread_exit)
    bool region_ran;    // this block ran as a block function (VF_REGIONS=require checks it)
};
inline thread_local BlockCursor block_cursor;
// Called by a thread loop when a thread that waited returns (threads that never waited are
// accounted for lazily by the scheduler); clears block_cursor.waited.
void waited_thread_exit();

// The body of a thread loop inlines the kernel and the device functions it calls (as nvcc
// does), except under AddressSanitizer, whose reports name the kernel's own frame and line.
#if defined(__SANITIZE_ADDRESS__)
#define VF_FLATTEN
#else
#define VF_FLATTEN __attribute__((flatten))
#endif

// Runs the block's unstarted CUDA threads one after another: the whole block, as one plain loop,
// for a kernel that never waits. When a thread waits (barrier, warp collective) the scheduler
// parks this loop with it and another fiber continues from the shared cursor; so the loop keeps
// its position in a register and publishes it only at the end, and the scheduler recovers it
// from threadIdx when a thread enters it - a thread costs the loop a store to threadIdx and a
// test of `waited`.
template <class Body> inline void thread_loop(Body&& body) {
    BlockCursor& c = block_cursor;
    const unsigned n = c.n;
    unsigned q = c.next;
    if (c.one_dim && !c.reverse) {
        threadIdx.y = 0;
        threadIdx.z = 0;
        while (q < n) {
            threadIdx.x = q;
            body();
            if (__builtin_expect(c.waited, 0)) {
                waited_thread_exit();
                q = c.next;  // other loops ran meanwhile
                threadIdx.y = 0;
                threadIdx.z = 0;
            } else {
                ++q;
            }
        }
    } else if (!c.reverse) {
        // Row by row: threadIdx.y/z are stored once per row, threadIdx.x once per thread.
        const unsigned bx = c.bx, by = c.by;
        unsigned x = q % bx, y = (q / bx) % by, z = q / bx / by;
        while (q < n) {
            threadIdx.y = y;
            threadIdx.z = z;
            bool waited = false;
            for (; x < bx; ++x) {
                threadIdx.x = x;
                body();
                if (__builtin_expect(c.waited, 0)) {
                    waited = true;
                    break;
                }
            }
            if (waited) {
                waited_thread_exit();
                q = c.next;  // other loops ran meanwhile
                x = q % bx, y = (q / bx) % by, z = q / bx / by;
                continue;
            }
            q += bx - (q % bx);
            x = 0;
            if (++y == by) {
                y = 0;
                ++z;
            }
        }
    } else {  // race probe: thread n - 1 - q at position q
        const unsigned bx = c.bx, by = c.by;
        while (q < n) {
            unsigned lin = n - 1 - q, rest = lin / bx;
            threadIdx = uint3{lin % bx, rest % by, rest / by};
            body();
            if (c.waited) {
                waited_thread_exit();
                q = c.next;
            } else {
                ++q;
            }
        }
    }
    c.next = q;
}

// Runs a whole grid; returns 0 on success, otherwise a cudaError_t value, with the message in
// last_fault_message(). Never throws.
int run_grid(const GridSpec& spec);
const char* last_fault_message();
// The grid being run right now (any thread), or nullptr; async-signal-safe.
const char* running_kernel();
// Validates a launch configuration; returns 0 or a cudaError_t and fills `why`.
int check_launch_config(dim3 grid, dim3 block, size_t shared_bytes, const char** why);

// Synchronisation primitives used by the intrinsics in vf_cuda.h. `line` is the user's source
// line (via __builtin_LINE()) so faults can name the barrier.
void syncthreads(int line);
int syncthreads_reduce(int op, int pred, int line);  // op: 0 count, 1 and, 2 or
enum CollectiveOp : int {
    kShflIdx = 1, kShflUp, kShflDown, kShflXor, kBallot, kAny, kAll, kSyncWarp,
    kMatchAny, kMatchAll, kReduceAddU, kReduceAddI, kReduceMinU, kReduceMinI, kReduceMaxU,
    kReduceMaxI, kReduceAnd, kReduceOr, kReduceXor,
    kActiveMask = 40,  // internal: __activemask() waits until its warp's other lanes are parked
};
// A warp-wide collective. `value` carries the lane's operand (up to 64 bits), `arg` the source
// lane / delta / xor mask, `width` the shuffle segment width. Returns the lane's result; for
// kMatchAll, *pred receives the predicate.
uint64_t warp_collective(int op, unsigned mask, uint64_t value, int arg, int width, int line,
                         int* pred = nullptr);
unsigned active_mask();
void yield_thread();                     // __nanosleep: let other threads of the block run
// Block-scope waits (cuda::barrier, pipeline stages, mbarriers): wait_on parks the calling CUDA
// thread until a thread of the same block calls wake_all(event); the caller re-checks its condition
// in a loop. A block whose live threads all wait is a deadlock (KernelFault naming `what` and line).
void wait_on(const void* event, int line, const char* what);
void wake_all(const void* event);
[[noreturn]] void trap(const char* what, int line);
// A failed assert() in device code: prints CUDA's message and aborts the launch with
// cudaErrorAssert (the host goes on, as on a GPU). Called by our __assert_fail (host_api.cpp).
[[noreturn]] void device_assert_failed(const char* expr, const char* file, unsigned line, const char* function);
void* dynamic_shared();                  // base of `extern __shared__` memory for this block
// Region execution (vf_regions.h): per-worker scratch for per-thread values (64-byte aligned, valid
// until the next call), and a fault raised by a block function (e.g. a divergent barrier).
char* region_scratch(size_t bytes);
[[noreturn]] void region_fault(const char* what, int line);
bool in_kernel();

// Cooperative launches (cudaLaunchCooperativeKernel, cudaLaunchKernelEx with the cooperative
// attribute): the next run_grid of this host thread runs every block at once (one OS thread
// each) with a grid-wide barrier, or fails with cudaErrorCooperativeLaunchTooLarge when the grid
// exceeds cooperative_grid_limit() blocks.
void set_next_launch_cooperative(bool on);
int cooperative_grid_limit(dim3 block, size_t dynamic_shared);  // occupancy x SMs (cooperative.cpp)
void grid_sync(int line);                // this_grid().sync(): faults outside a cooperative launch
int record_launch_error(int err, const char* message);  // a launch refused before run_grid (host_api.cpp)
bool in_cooperative_grid();              // this_grid().is_valid()

// Kernels callable by name from Python (Module.launch): registered by the launch shims the
// front end appends to a module, listed by the kernel server (worker_main.cpp).
struct ParamInfo {
    char kind;           // p pointer, i signed, u unsigned, f float, b bool, s other (struct...)
    unsigned size, align, offset;
    char pointee_kind;   // for pointers: kind of the pointee ('v' void, 's' struct)
    unsigned pointee_size;
    bool pointee_const;
    std::string type;
};
struct KernelEntry {
    std::string name;
    std::vector<ParamInfo> params;
    size_t blob_size = 0;
    // Runs the grid with arguments unpacked from `blob` (laid out at ParamInfo::offset).
    int (*run)(const KernelEntry& self, const char* blob, GridSpec spec) = nullptr;
    void* fn = nullptr;
};
void register_kernel(KernelEntry* entry);

// What the compiler knows of one parameter type, as plain constants (vf_launch.h raw_param<T>).
// The runtime turns these into ParamInfo (worker_main.cpp), so the string and vector code of a
// kernel's registration is compiled once with the runtime, not again in every kernel file: inline,
// it was most of a small kernel's compile time.
struct RawParam {
    char kind;            // as ParamInfo::kind; 's' with layout == false: only the type is known
    bool layout;          // size and alignment known: the parameter has a place in the blob
    unsigned size, align;
    char pointee_kind;
    unsigned pointee_size;
    bool pointee_const;
    const char* pretty;   // __PRETTY_FUNCTION__ of raw_param<T>/raw_type<T>: "... [with T = float*]"
};
// The type's name as C++ spells it, from a RawParam's `pretty` text ("?" when it has none).
std::string raw_type_name(const char* pretty);
// Lays out n parameters in a blob (each at the next offset of its alignment); returns its size.
size_t describe_params(std::vector<ParamInfo>& out, const RawParam* raw, size_t n);
void init_kernel_entry(KernelEntry& entry, const char* name, void* fn, const RawParam* raw, size_t n,
                       int (*run)(const KernelEntry&, const char*, GridSpec));

// Kernels launchable by address with an argument array (`cudaLaunchKernel((const void*)k, grid,
// block, args, shared, stream)`): the front end registers every plain kernel of a file that
// calls cudaLaunchKernel. The launcher copies each parameter from args[i] as the kernel's real
// type and launches like `<<<>>>`; it returns the launch's cudaError_t.
using ArgsLauncher = int (*)(const void* fn, const char* name, dim3 grid, dim3 block, void** args, size_t shared,
                             cudaStream_t stream);
void register_launchable(const void* fn, const char* name, ArgsLauncher launch);
// The registered kernel at `fn` (name and launcher), or false.
bool find_launchable(const void* fn, const char** name, ArgsLauncher* launch);
const std::vector<KernelEntry*>& registered_kernels();

// `extern "C"` host functions callable by name from Python (Module.call): registered by the call
// shims the front end appends to a module. They take device pointers and launch kernels
// themselves; the server runs them on its main thread and reports the first failed launch.
struct FunctionEntry {
    std::string name;
    std::vector<ParamInfo> params;
    size_t blob_size = 0;
    ParamInfo ret;            // kind 'v' for void
    const char* problem = ""; // non-empty: the signature cannot be called from Python (why)
    // Calls the function with arguments unpacked from `blob`; stores the return value (up to 8
    // bytes, little-endian) in `ret_out`.
    void (*call)(const FunctionEntry& self, const char* blob, unsigned char* ret_out) = nullptr;
    void* fn = nullptr;
};
void register_function(FunctionEntry* entry);
// `ret` null for void; `call` null when the signature cannot be called from Python (then the
// parameters are listed by type only and `problem` says why).
void init_function_entry(FunctionEntry& entry, const char* name, void* fn, const RawParam* ret, const RawParam* raw,
                         size_t n, void (*call)(const FunctionEntry&, const char*, unsigned char*),
                         const char* problem);
const std::vector<FunctionEntry*>& registered_functions();

// ---- dynamic checks of the C->CUDA evaluation driver (veriforge/cuda/evaluate/driver.py) ------
// Device-memory guard: from now on cudaMalloc'd memory (cudaMallocPitch/Async too; not managed,
// pinned or registered host memory) lives in an mmap'd arena that is PROT_NONE whenever no kernel
// and no runtime call touching device memory runs, so host code dereferencing a device pointer
// faults as on a GPU: the runtime prints "veriforge: host code read|wrote|accessed device memory
// at ..." to stderr and the process dies by SIGSEGV. Call before the first cudaMalloc; it cannot be
// turned off again. A no-op under AddressSanitizer (whose heap checks need malloc'd blocks).
void enable_device_guard();
bool device_guard_enabled();
// Names a device allocation in the guard's message (e.g. the solve() parameter it is passed as).
void label_device_buffer(const void* ptr, const char* label);
// Bytes copied device->host and host->device by cudaMemcpy* since the last reset, classified by
// the pointers (not the cudaMemcpyKind): device = cudaMalloc'd memory, Module.call buffers and
// __device__/__constant__ symbols; host = everything else, managed and pinned memory included.
void reset_copy_counters();
void copy_counters(uint64_t* device_to_host, uint64_t* host_to_device);
// Runs every following launch with blocks and threads in reverse order (the race probe).
void set_reverse_order(bool on);
// A __device__/__constant__ variable whose address host code took (cudaGetSymbolAddress): device
// memory for the copy counters.
void note_symbol(const void* address, size_t size);

}  // namespace vf
