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

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
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
}  // namespace vf

namespace {

std::mutex g_mutex;
cudaError_t g_last_error = cudaSuccess;
cudaError_t g_sticky_error = cudaSuccess;
// Every allocation the runtime knows, by base address: cudaMalloc'd device memory, pinned host
// memory, and the argument arrays Module.call passes in (device memory the caller owns, which
// cudaFree must refuse). cudaFree, cudaMemGetInfo and cudaPointerGetAttributes consult it.
enum class AllocKind { kDevice, kHost, kExternal };
struct Allocation {
    size_t size;
    AllocKind kind;
};
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

struct Stream {
    unsigned flags;
};
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

void* device_alloc(size_t size, AllocKind kind = AllocKind::kDevice) {
    void* p = nullptr;
    if (posix_memalign(&p, 256, size ? size : 1) != 0) return nullptr;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_allocations[p] = Allocation{size, kind};
    g_allocated += size;
    return p;
}

bool device_free(void* p, AllocKind kind) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_allocations.find(p);
    if (it == g_allocations.end() || it->second.kind != kind) return false;
    g_allocated -= it->second.size;
    g_allocations.erase(it);
    free(p);
    return true;
}

// The allocation containing `p`, or nullptr.
const Allocation* find_allocation(const void* p) {
    auto it = g_allocations.upper_bound(p);
    if (it == g_allocations.begin()) return nullptr;
    --it;
    const char* base = static_cast<const char*>(it->first);
    if (static_cast<const char*>(p) < base + std::max<size_t>(it->second.size, 1)) return &it->second;
    return nullptr;
}

}  // namespace

int vf::host_launch(const GridSpec& spec, cudaStream_t) {
    if (g_sticky_error != cudaSuccess) return set_error(g_sticky_error);
    int err = vf::run_grid(spec);
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
    if (it == g_allocations.end()) g_allocations[ptr] = Allocation{size, AllocKind::kExternal};
}

void vf::unregister_device_buffers() {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::erase_if(g_allocations, [](const auto& kv) { return kv.second.kind == AllocKind::kExternal; });
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
    std::lock_guard<std::mutex> lock(g_mutex);
    cudaError_t e = g_last_error;
    g_last_error = g_sticky_error;
    return e;
}
cudaError_t cudaPeekAtLastError(void) {
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
    X(cudaErrorUnknown, "unknown error")

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
cudaError_t cudaDeviceSynchronize(void) { return sticky(); }
cudaError_t cudaDeviceReset(void) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_last_error = g_sticky_error = cudaSuccess;
    return cudaSuccess;
}
cudaError_t cudaThreadSynchronize(void) { return sticky(); }
cudaError_t cudaDeviceSetLimit(enum cudaLimit, size_t) { return cudaSuccess; }
cudaError_t cudaDeviceGetLimit(size_t* value, enum cudaLimit limit) {
    *value = limit == cudaLimitStackSize ? 1024 : (limit == cudaLimitPrintfFifoSize ? (1 << 20) : 0);
    return cudaSuccess;
}
cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache) { return cudaSuccess; }
cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache* c) {
    *c = cudaFuncCachePreferNone;
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
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return cudaSuccess;
}

// The reported device: a small Hopper-class GPU (compute capability 9.0, 16 SMs) - real limits
// for blocks, shared memory and registers, but an SM count that keeps grids sized from it
// CPU-friendly.
// (User code always passes our cudaDeviceProp, which extends CUDA 13's struct: see vf_types.h.)
cudaError_t cudaGetDeviceProperties(struct VF_DEVICE_PROP_PARAM* base, int device) {
    if (device != 0) return set_error(cudaErrorInvalidDevice);
    cudaDeviceProp* p = static_cast<cudaDeviceProp*>(base);
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
    p->cooperativeLaunch = 0;
    p->sharedMemPerBlockOptin = 232448;
    p->maxBlocksPerMultiProcessor = 32;
    p->reservedSharedMemPerBlock = 1024;
    p->hostNativeAtomicSupported = 1;
    p->pageableMemoryAccess = 1;
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
#endif
        case cudaDevAttrUnifiedAddressing: case cudaDevAttrManagedMemory: case cudaDevAttrConcurrentKernels:
        case cudaDevAttrCanMapHostMemory: *value = 1; break;
        default: *value = 0; break;
    }
    return cudaSuccess;
}

// ---- memory ----------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** ptr, size_t size) {
    if (cudaError_t e = sticky()) return e;
    if (!ptr) return set_error(cudaErrorInvalidValue);
    *ptr = device_alloc(size);
    return *ptr ? cudaSuccess : set_error(cudaErrorMemoryAllocation);
}
cudaError_t cudaMallocManaged(void** ptr, size_t size, unsigned int) { return cudaMalloc(ptr, size); }
cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t) { return cudaMalloc(ptr, size); }
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
    return device_free(ptr, AllocKind::kDevice) ? cudaSuccess : set_error(cudaErrorInvalidValue);
}
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t) { return cudaFree(ptr); }
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
    if (count) memmove(dst, src, count);
    return cudaSuccess;
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
    attr->type = a->kind == AllocKind::kHost ? cudaMemoryTypeHost : cudaMemoryTypeDevice;
    attr->devicePointer = const_cast<void*>(ptr);
    attr->hostPointer = a->kind == AllocKind::kHost ? const_cast<void*>(ptr) : nullptr;
    return cudaSuccess;
}
#endif
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind, cudaStream_t) {
    return cudaMemcpy(dst, src, count, kind);
}
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind) {
    if (cudaError_t e = sticky()) return e;
    if (width > dpitch || width > spitch) return set_error(cudaErrorInvalidValue);
    for (size_t r = 0; r < height; ++r)
        cudaMemcpy(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width, kind);
    return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind, cudaStream_t) {
    return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}
cudaError_t cudaMemset(void* ptr, int value, size_t count) {
    if (cudaError_t e = sticky()) return e;
    if (count && !ptr) return set_error(cudaErrorInvalidValue);
    memset(ptr, value, count);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t) { return cudaMemset(ptr, value, count); }
cudaError_t cudaMemset2D(void* ptr, size_t pitch, int value, size_t width, size_t height) {
    for (size_t r = 0; r < height; ++r) memset(static_cast<char*>(ptr) + r * pitch, value, width);
    return sticky();
}
// Symbols (__device__ / __constant__ variables) are ordinary host globals: the "symbol" the
// cuda_runtime.h templates pass is the variable's address.
cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind) {
    if (!symbol) return set_error(cudaErrorInvalidSymbol);
    return cudaMemcpy(const_cast<char*>(static_cast<const char*>(symbol)) + offset, src, count, kind);
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                 enum cudaMemcpyKind kind) {
    if (!symbol) return set_error(cudaErrorInvalidSymbol);
    return cudaMemcpy(dst, static_cast<const char*>(symbol) + offset, count, kind);
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind, cudaStream_t) {
    return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t) {
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
    *s = reinterpret_cast<cudaStream_t>(new Stream{0});
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
    *s = reinterpret_cast<cudaStream_t>(new Stream{flags});
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int) {
    return cudaStreamCreateWithFlags(s, flags);
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    delete reinterpret_cast<Stream*>(s);
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return sticky(); }
cudaError_t cudaStreamQuery(cudaStream_t) { return sticky(); }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return sticky(); }
cudaError_t cudaEventCreate(cudaEvent_t* e) {
    *e = reinterpret_cast<cudaEvent_t>(new Event{{}, false});
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete reinterpret_cast<Event*>(e);
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
    if (!e) return set_error(cudaErrorInvalidResourceHandle);
    Event* ev = reinterpret_cast<Event*>(e);
    ev->when = std::chrono::steady_clock::now();
    ev->recorded = true;
    return sticky();
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int) { return cudaEventRecord(e, s); }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return sticky(); }
cudaError_t cudaEventQuery(cudaEvent_t) { return sticky(); }
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
