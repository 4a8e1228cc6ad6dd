// veriforge CPU runtime: the CUDA runtime API for whole programs.
//
// Device memory is host memory (one address space, so every cudaMemcpy direction is a memcpy),
// streams and events are synchronous (work runs in issue order, which is a legal schedule of
// any correct CUDA program), and kernel faults become CUDA errors exactly where a program looks
// for them: the launch's error is returned by cudaGetLastError/cudaPeekAtLastError, and a fault
// inside a kernel is sticky like a real device fault (every later call returns it).
// The declarations come from CUDA's own cuda_runtime_api.h when it was found, so signatures,
// default arguments and the C++ template overloads of cuda_runtime.h match what nvcc users see.
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
void host_launch(const GridSpec& spec, cudaStream_t stream);
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

void vf::host_launch(const GridSpec& spec, cudaStream_t) {
    if (g_sticky_error != cudaSuccess) {
        set_error(g_sticky_error);
        return;
    }
    int err = vf::run_grid(spec);
    if (err == 0) return;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (g_in_call) {
            if (!g_call_error) {
                g_call_error = err;
                g_call_message = vf::last_fault_message();
            }
        } else {
            fprintf(stderr, "veriforge: %s\n", vf::last_fault_message());
            fflush(stderr);
        }
        if (err == cudaErrorLaunchFailure) g_sticky_error = cudaErrorLaunchFailure;
    }
    set_error((cudaError_t)err);
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
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* p, int device) {
    if (device != 0) return set_error(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
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
