// veriforge CPU runtime: minimal stand-ins for CUDA's host headers, used only when no CUDA
// installation (or nvidia-cuda-runtime wheel) was found. Layouts and names follow CUDA's
// vector_types.h / driver_types.h / cuda_runtime_api.h for everything the runtime implements;
// __half / __nv_bfloat16 are deliberately absent (their headers then fail with a clear message).
#pragma once
#include <cstddef>

#define CUDART_VERSION 13000
#define __CUDART_API_VERSION 13000
#define CUDARTAPI

struct __attribute__((aligned(1))) char1 { signed char x; };
inline char1 make_char1(signed char x) { return char1{x}; }
struct __attribute__((aligned(2))) char2 { signed char x; signed char y; };
inline char2 make_char2(signed char x, signed char y) { return char2{x, y}; }
struct __attribute__((aligned(1))) char3 { signed char x; signed char y; signed char z; };
inline char3 make_char3(signed char x, signed char y, signed char z) { return char3{x, y, z}; }
struct __attribute__((aligned(4))) char4 { signed char x; signed char y; signed char z; signed char w; };
inline char4 make_char4(signed char x, signed char y, signed char z, signed char w) { return char4{x, y, z, w}; }
struct __attribute__((aligned(1))) uchar1 { unsigned char x; };
inline uchar1 make_uchar1(unsigned char x) { return uchar1{x}; }
struct __attribute__((aligned(2))) uchar2 { unsigned char x; unsigned char y; };
inline uchar2 make_uchar2(unsigned char x, unsigned char y) { return uchar2{x, y}; }
struct __attribute__((aligned(1))) uchar3 { unsigned char x; unsigned char y; unsigned char z; };
inline uchar3 make_uchar3(unsigned char x, unsigned char y, unsigned char z) { return uchar3{x, y, z}; }
struct __attribute__((aligned(4))) uchar4 { unsigned char x; unsigned char y; unsigned char z; unsigned char w; };
inline uchar4 make_uchar4(unsigned char x, unsigned char y, unsigned char z, unsigned char w) { return uchar4{x, y, z, w}; }
struct __attribute__((aligned(2))) short1 { short x; };
inline short1 make_short1(short x) { return short1{x}; }
struct __attribute__((aligned(4))) short2 { short x; short y; };
inline short2 make_short2(short x, short y) { return short2{x, y}; }
struct __attribute__((aligned(2))) short3 { short x; short y; short z; };
inline short3 make_short3(short x, short y, short z) { return short3{x, y, z}; }
struct __attribute__((aligned(8))) short4 { short x; short y; short z; short w; };
inline short4 make_short4(short x, short y, short z, short w) { return short4{x, y, z, w}; }
struct __attribute__((aligned(2))) ushort1 { unsigned short x; };
inline ushort1 make_ushort1(unsigned short x) { return ushort1{x}; }
struct __attribute__((aligned(4))) ushort2 { unsigned short x; unsigned short y; };
inline ushort2 make_ushort2(unsigned short x, unsigned short y) { return ushort2{x, y}; }
struct __attribute__((aligned(2))) ushort3 { unsigned short x; unsigned short y; unsigned short z; };
inline ushort3 make_ushort3(unsigned short x, unsigned short y, unsigned short z) { return ushort3{x, y, z}; }
struct __attribute__((aligned(8))) ushort4 { unsigned short x; unsigned short y; unsigned short z; unsigned short w; };
inline ushort4 make_ushort4(unsigned short x, unsigned short y, unsigned short z, unsigned short w) { return ushort4{x, y, z, w}; }
struct __attribute__((aligned(4))) int1 { int x; };
inline int1 make_int1(int x) { return int1{x}; }
struct __attribute__((aligned(8))) int2 { int x; int y; };
inline int2 make_int2(int x, int y) { return int2{x, y}; }
struct __attribute__((aligned(4))) int3 { int x; int y; int z; };
inline int3 make_int3(int x, int y, int z) { return int3{x, y, z}; }
struct __attribute__((aligned(16))) int4 { int x; int y; int z; int w; };
inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
struct __attribute__((aligned(4))) uint1 { unsigned int x; };
inline uint1 make_uint1(unsigned int x) { return uint1{x}; }
struct __attribute__((aligned(8))) uint2 { unsigned int x; unsigned int y; };
inline uint2 make_uint2(unsigned int x, unsigned int y) { return uint2{x, y}; }
struct __attribute__((aligned(4))) uint3 { unsigned int x; unsigned int y; unsigned int z; };
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }
struct __attribute__((aligned(16))) uint4 { unsigned int x; unsigned int y; unsigned int z; unsigned int w; };
inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return uint4{x, y, z, w}; }
struct __attribute__((aligned(8))) long1 { long x; };
inline long1 make_long1(long x) { return long1{x}; }
struct __attribute__((aligned(16))) long2 { long x; long y; };
inline long2 make_long2(long x, long y) { return long2{x, y}; }
struct __attribute__((aligned(8))) long3 { long x; long y; long z; };
inline long3 make_long3(long x, long y, long z) { return long3{x, y, z}; }
struct __attribute__((aligned(16))) long4 { long x; long y; long z; long w; };
inline long4 make_long4(long x, long y, long z, long w) { return long4{x, y, z, w}; }
struct __attribute__((aligned(8))) ulong1 { unsigned long x; };
inline ulong1 make_ulong1(unsigned long x) { return ulong1{x}; }
struct __attribute__((aligned(16))) ulong2 { unsigned long x; unsigned long y; };
inline ulong2 make_ulong2(unsigned long x, unsigned long y) { return ulong2{x, y}; }
struct __attribute__((aligned(8))) ulong3 { unsigned long x; unsigned long y; unsigned long z; };
inline ulong3 make_ulong3(unsigned long x, unsigned long y, unsigned long z) { return ulong3{x, y, z}; }
struct __attribute__((aligned(16))) ulong4 { unsigned long x; unsigned long y; unsigned long z; unsigned long w; };
inline ulong4 make_ulong4(unsigned long x, unsigned long y, unsigned long z, unsigned long w) { return ulong4{x, y, z, w}; }
struct __attribute__((aligned(8))) longlong1 { long long x; };
inline longlong1 make_longlong1(long long x) { return longlong1{x}; }
struct __attribute__((aligned(16))) longlong2 { long long x; long long y; };
inline longlong2 make_longlong2(long long x, long long y) { return longlong2{x, y}; }
struct __attribute__((aligned(8))) longlong3 { long long x; long long y; long long z; };
inline longlong3 make_longlong3(long long x, long long y, long long z) { return longlong3{x, y, z}; }
struct __attribute__((aligned(16))) longlong4 { long long x; long long y; long long z; long long w; };
inline longlong4 make_longlong4(long long x, long long y, long long z, long long w) { return longlong4{x, y, z, w}; }
struct __attribute__((aligned(8))) ulonglong1 { unsigned long long x; };
inline ulonglong1 make_ulonglong1(unsigned long long x) { return ulonglong1{x}; }
struct __attribute__((aligned(16))) ulonglong2 { unsigned long long x; unsigned long long y; };
inline ulonglong2 make_ulonglong2(unsigned long long x, unsigned long long y) { return ulonglong2{x, y}; }
struct __attribute__((aligned(8))) ulonglong3 { unsigned long long x; unsigned long long y; unsigned long long z; };
inline ulonglong3 make_ulonglong3(unsigned long long x, unsigned long long y, unsigned long long z) { return ulonglong3{x, y, z}; }
struct __attribute__((aligned(16))) ulonglong4 { unsigned long long x; unsigned long long y; unsigned long long z; unsigned long long w; };
inline ulonglong4 make_ulonglong4(unsigned long long x, unsigned long long y, unsigned long long z, unsigned long long w) { return ulonglong4{x, y, z, w}; }
struct __attribute__((aligned(4))) float1 { float x; };
inline float1 make_float1(float x) { return float1{x}; }
struct __attribute__((aligned(8))) float2 { float x; float y; };
inline float2 make_float2(float x, float y) { return float2{x, y}; }
struct __attribute__((aligned(4))) float3 { float x; float y; float z; };
inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
struct __attribute__((aligned(16))) float4 { float x; float y; float z; float w; };
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
struct __attribute__((aligned(8))) double1 { double x; };
inline double1 make_double1(double x) { return double1{x}; }
struct __attribute__((aligned(16))) double2 { double x; double y; };
inline double2 make_double2(double x, double y) { return double2{x, y}; }
struct __attribute__((aligned(8))) double3 { double x; double y; double z; };
inline double3 make_double3(double x, double y, double z) { return double3{x, y, z}; }
struct __attribute__((aligned(16))) double4 { double x; double y; double z; double w; };
inline double4 make_double4(double x, double y, double z, double w) { return double4{x, y, z, w}; }

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

enum cudaError {
    cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9, cudaErrorInvalidSymbol = 13, cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInvalidDeviceFunction = 98, cudaErrorNoDevice = 100, cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400, cudaErrorNotReady = 600, cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701, cudaErrorLaunchTimeout = 702, cudaErrorAssert = 710,
    cudaErrorLaunchFailure = 719, cudaErrorCooperativeLaunchTooLarge = 720, cudaErrorNotSupported = 801,
    cudaErrorUnknown = 999,
    cudaErrorInvalidDevicePointer = 17, cudaErrorUnsupportedLimit = 215, cudaErrorPeerAccessUnsupported = 217,
    cudaErrorPeerAccessAlreadyEnabled = 704, cudaErrorPeerAccessNotEnabled = 705, cudaErrorNotPermitted = 800
};
typedef enum cudaError cudaError_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
                      cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef void (*cudaStreamCallback_t)(cudaStream_t stream, cudaError_t status, void* user_data);
typedef void (*cudaHostFn_t)(void* user_data);
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
enum cudaFuncCache { cudaFuncCachePreferNone = 0, cudaFuncCachePreferShared = 1, cudaFuncCachePreferL1 = 2,
                     cudaFuncCachePreferEqual = 3 };
enum cudaLimit { cudaLimitStackSize = 0, cudaLimitPrintfFifoSize = 1, cudaLimitMallocHeapSize = 2 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
                         cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxBlockDimX = 2, cudaDevAttrMaxBlockDimY = 3,
    cudaDevAttrMaxBlockDimZ = 4, cudaDevAttrMaxGridDimX = 5, cudaDevAttrMaxGridDimY = 6, cudaDevAttrMaxGridDimZ = 7,
    cudaDevAttrMaxSharedMemoryPerBlock = 8, cudaDevAttrTotalConstantMemory = 9, cudaDevAttrWarpSize = 10,
    cudaDevAttrMaxRegistersPerBlock = 12, cudaDevAttrClockRate = 13, cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrCanMapHostMemory = 19, cudaDevAttrConcurrentKernels = 31, cudaDevAttrGlobalMemoryBusWidth = 37,
    cudaDevAttrL2CacheSize = 38, cudaDevAttrMaxThreadsPerMultiProcessor = 39, cudaDevAttrUnifiedAddressing = 41,
    cudaDevAttrComputeCapabilityMajor = 75, cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81, cudaDevAttrMaxRegistersPerMultiprocessor = 82,
    cudaDevAttrManagedMemory = 83, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
    cudaDevAttrMaxBlocksPerMultiprocessor = 106, cudaDevAttrCooperativeLaunch = 95
};
enum cudaMemLocationType { cudaMemLocationTypeInvalid = 0, cudaMemLocationTypeDevice = 1, cudaMemLocationTypeHost = 2 };
struct cudaMemLocation { enum cudaMemLocationType type; int id; };
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaHostAllocDefault 0x00
#define cudaHostAllocMapped 0x02
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceMapHost 0x08
#define cudaOccupancyDefault 0x00

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock;
    int regsPerBlock, warpSize;
    size_t memPitch;
    int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
    int clockRate;
    size_t totalConstMem;
    int major, minor;
    size_t textureAlignment, texturePitchAlignment;
    int deviceOverlap, multiProcessorCount, kernelExecTimeoutEnabled, integrated, canMapHostMemory, computeMode;
    int concurrentKernels, ECCEnabled, pciBusID, pciDeviceID, pciDomainID, tccDriver, asyncEngineCount;
    int unifiedAddressing, memoryClockRate, memoryBusWidth, l2CacheSize, persistingL2CacheMaxSize;
    int maxThreadsPerMultiProcessor, streamPrioritiesSupported, globalL1CacheSupported, localL1CacheSupported;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor, managedMemory, isMultiGpuBoard, multiGpuBoardGroupID, hostNativeAtomicSupported;
    int pageableMemoryAccess, concurrentManagedAccess, computePreemptionSupported, cooperativeLaunch;
    size_t sharedMemPerBlockOptin;
    int maxBlocksPerMultiProcessor;
    size_t reservedSharedMemPerBlock;
    int reserved[64];
};
struct cudaFuncAttributes {
    size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
    int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, cacheModeCA, maxDynamicSharedSizeBytes;
    int preferredShmemCarveout;
};

extern "C" {
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDeviceFlags(unsigned int flags);
cudaError_t cudaGetDeviceFlags(unsigned int* flags);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaThreadSynchronize(void);
cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value);
cudaError_t cudaDeviceGetLimit(size_t* value, enum cudaLimit limit);
cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache config);
cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache* config);
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaMalloc(void** ptr, size_t size);
cudaError_t cudaMallocManaged(void** ptr, size_t size, unsigned int flags = cudaMemAttachGlobal);
cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t stream);
cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height);
cudaError_t cudaMallocHost(void** ptr, size_t size);
cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void* ptr);
cudaError_t cudaHostGetDevicePointer(void** dev, void* host, unsigned int flags);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream = 0);
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind, cudaStream_t stream = 0);
cudaError_t cudaMemset(void* ptr, int value, size_t count);
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream = 0);
cudaError_t cudaMemset2D(void* ptr, size_t pitch, int value, size_t width, size_t height);
cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset = 0,
                               enum cudaMemcpyKind kind = cudaMemcpyHostToDevice);
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset = 0,
                                 enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost);
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset = 0,
                                    enum cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t stream = 0);
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset = 0,
                                      enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost, cudaStream_t stream = 0);
cudaError_t cudaGetSymbolAddress(void** dev, const void* symbol);
cudaError_t cudaMemPrefetchAsync(const void* ptr, size_t count, struct cudaMemLocation location, unsigned int flags,
                                 cudaStream_t stream = 0);
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);
cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority);
cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int* flags);
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* user_data,
                                  unsigned int flags);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data);
cudaError_t cudaCtxResetPersistingL2Cache(void);
cudaError_t cudaDeviceCanAccessPeer(int* can_access, int device, int peer_device);
cudaError_t cudaDeviceEnablePeerAccess(int peer_device, unsigned int flags);
cudaError_t cudaDeviceDisablePeerAccess(int peer_device);
cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t count);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream = 0, unsigned int flags = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value);
cudaError_t cudaFuncSetCacheConfig(const void* func, enum cudaFuncCache config);
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void* func);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func, int block_size, size_t smem);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* func, int block_size,
                                                                    size_t smem, unsigned int flags);
}
inline cudaError_t cudaEventCreate(cudaEvent_t* event, unsigned int flags) { return cudaEventCreateWithFlags(event, flags); }
