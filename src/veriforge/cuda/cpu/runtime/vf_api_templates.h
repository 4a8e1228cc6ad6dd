// The C++ conveniences of cuda_runtime.h (symbol and kernel overloads taking references and
// function pointers). CUDA only declares them when nvcc compiles (`__CUDACC__`), so they are
// repeated here for g++. Each forwards to the C API in host_api.cpp.
#pragma once

namespace vf {
void note_symbol(const void* address, size_t size);  // host_api.cpp (vf_core.h)
}

// Pre-CUDA-4 names of the device functions, which CUDA 13's headers no longer declare.
extern "C" {
cudaError_t cudaThreadSynchronize(void);
cudaError_t cudaThreadExit(void);
cudaError_t cudaThreadSetLimit(enum cudaLimit limit, size_t value);
cudaError_t cudaThreadGetLimit(size_t* value, enum cudaLimit limit);
cudaError_t cudaThreadSetCacheConfig(enum cudaFuncCache config);
cudaError_t cudaThreadGetCacheConfig(enum cudaFuncCache* config);
}

template <class T>
inline cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, size_t count, size_t offset = 0,
                                      cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
    return ::cudaMemcpyToSymbol(static_cast<const void*>(&symbol), src, count, offset, kind);
}
template <class T>
inline cudaError_t cudaMemcpyToSymbolAsync(const T& symbol, const void* src, size_t count, size_t offset = 0,
                                           cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t s = 0) {
    return ::cudaMemcpyToSymbolAsync(static_cast<const void*>(&symbol), src, count, offset, kind, s);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t count, size_t offset = 0,
                                        cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
    return ::cudaMemcpyFromSymbol(dst, static_cast<const void*>(&symbol), count, offset, kind);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const T& symbol, size_t count, size_t offset = 0,
                                             cudaMemcpyKind kind = cudaMemcpyDeviceToHost, cudaStream_t s = 0) {
    return ::cudaMemcpyFromSymbolAsync(dst, static_cast<const void*>(&symbol), count, offset, kind, s);
}
// A string naming the symbol (`cudaMemcpyToSymbol("c_clusters", ...)`, Rodinia) was removed in CUDA
// 5.0: the call fails with cudaErrorInvalidSymbol and copies nothing, as it does with CUDA >= 5.
template <size_t N>
inline cudaError_t cudaMemcpyToSymbol(const char (&)[N], const void* src, size_t count, size_t offset = 0,
                                      cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
    return ::cudaMemcpyToSymbol(static_cast<const void*>(nullptr), src, count, offset, kind);
}
template <size_t N>
inline cudaError_t cudaMemcpyToSymbolAsync(const char (&)[N], const void* src, size_t count, size_t offset = 0,
                                           cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t s = 0) {
    return ::cudaMemcpyToSymbolAsync(static_cast<const void*>(nullptr), src, count, offset, kind, s);
}
template <size_t N>
inline cudaError_t cudaMemcpyFromSymbol(void* dst, const char (&)[N], size_t count, size_t offset = 0,
                                        cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
    return ::cudaMemcpyFromSymbol(dst, static_cast<const void*>(nullptr), count, offset, kind);
}
template <size_t N>
inline cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const char (&)[N], size_t count, size_t offset = 0,
                                             cudaMemcpyKind kind = cudaMemcpyDeviceToHost, cudaStream_t s = 0) {
    return ::cudaMemcpyFromSymbolAsync(dst, static_cast<const void*>(nullptr), count, offset, kind, s);
}
template <class T> inline cudaError_t cudaGetSymbolAddress(void** dev, const T& symbol) {
    ::vf::note_symbol(static_cast<const void*>(&symbol), sizeof(T));
    return ::cudaGetSymbolAddress(dev, static_cast<const void*>(&symbol));
}
template <class T> inline cudaError_t cudaGetSymbolSize(size_t* size, const T&) {
    *size = sizeof(T);
    return cudaSuccess;
}
template <class T> inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, T* entry) {
    return ::cudaFuncGetAttributes(attr, reinterpret_cast<const void*>(entry));
}
template <class T> inline cudaError_t cudaFuncSetAttribute(T* entry, cudaFuncAttribute attr, int value) {
    return ::cudaFuncSetAttribute(reinterpret_cast<const void*>(entry), attr, value);
}
template <class T> inline cudaError_t cudaFuncSetCacheConfig(T* entry, cudaFuncCache config) {
    return ::cudaFuncSetCacheConfig(reinterpret_cast<const void*>(entry), config);
}
#if !defined(VF_HAVE_CUDA_HEADERS)
// cuda_runtime.h defines these for every compiler; only the fallback needs them.
// The block size with the highest occupancy (ties: the largest), as cuda_runtime.h computes it.
template <class T>
inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int* min_grid, int* block, T func, size_t smem = 0,
                                                      int limit = 0) {
    int best_block = 32, best_active = 0;
    int cap = limit > 0 && limit < 1024 ? limit : 1024;
    for (int b = 32; b <= cap; b += 32) {
        int blocks = 0;
        ::cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reinterpret_cast<const void*>(func), b, smem);
        if (blocks * b >= best_active) {
            best_active = blocks * b;
            best_block = b;
        }
    }
    int sms = 0;
    ::cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    *block = best_block;
    *min_grid = sms * (best_active / best_block);
    return cudaSuccess;
}
template <class T>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, T func, int block_size, size_t smem) {
    return ::cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, reinterpret_cast<const void*>(func), block_size,
                                                           smem);
}
template <class T>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, T func, int block_size,
                                                                          size_t smem, unsigned flags) {
    return ::cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        blocks, reinterpret_cast<const void*>(func), block_size, smem, flags);
}
template <class T> inline cudaError_t cudaMalloc(T** ptr, size_t size) {
    return ::cudaMalloc(reinterpret_cast<void**>(ptr), size);
}
template <class T> inline cudaError_t cudaMallocHost(T** ptr, size_t size, unsigned flags = 0) {
    (void)flags;
    return ::cudaMallocHost(reinterpret_cast<void**>(ptr), size);
}
template <class T> inline cudaError_t cudaHostAlloc(T** ptr, size_t size, unsigned flags) {
    return ::cudaHostAlloc(reinterpret_cast<void**>(ptr), size, flags);
}
template <class T> inline cudaError_t cudaMallocManaged(T** ptr, size_t size, unsigned flags = cudaMemAttachGlobal) {
    return ::cudaMallocManaged(reinterpret_cast<void**>(ptr), size, flags);
}
template <class T> inline cudaError_t cudaMallocPitch(T** ptr, size_t* pitch, size_t width, size_t height) {
    return ::cudaMallocPitch(reinterpret_cast<void**>(ptr), pitch, width, height);
}
template <class T> inline cudaError_t cudaMallocAsync(T** ptr, size_t size, cudaStream_t s) {
    return ::cudaMallocAsync(reinterpret_cast<void**>(ptr), size, s);
}
#endif
