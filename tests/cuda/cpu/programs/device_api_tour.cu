// The device-management and memory API that samples and benchmark harnesses call around their
// kernels: properties (deviceQuery fields), attributes, versions, flags, pinned memory,
// cudaMemcpyDefault, async memset on a non-blocking stream, events with flags, cudaMemGetInfo,
// cudaDeviceReset. Checks the values for consistency, not for one particular GPU.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, __LINE__); \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

__global__ void increment(int *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1;
}

int main() {
    int ok = 1;
    CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    CHECK(cudaSetDevice(0));
    int driver = 0, runtime = 0;
    CHECK(cudaDriverGetVersion(&driver));
    CHECK(cudaRuntimeGetVersion(&runtime));
    printf("devices=%d driver=%d runtime=%d\n", count, driver, runtime);
    ok &= count >= 1 && driver >= runtime && runtime >= 11000;

    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("name: %s\n", prop.name);
    printf("compute capability %d.%d, %d SMs, warp %d\n", prop.major, prop.minor, prop.multiProcessorCount,
           prop.warpSize);
    printf("max threads/block %d, dims (%d, %d, %d), grid (%d, %d, %d)\n", prop.maxThreadsPerBlock,
           prop.maxThreadsDim[0], prop.maxThreadsDim[1], prop.maxThreadsDim[2], prop.maxGridSize[0],
           prop.maxGridSize[1], prop.maxGridSize[2]);
    printf("shared/block %zu, regs/block %d, global %zu MB, L2 %d KB, bus %d bit\n", prop.sharedMemPerBlock,
           prop.regsPerBlock, prop.totalGlobalMem >> 20, prop.l2CacheSize >> 10, prop.memoryBusWidth);
    int clock_khz = 0, mem_clock_khz = 0;
#if CUDART_VERSION < 13000 || defined(VERIFORGE_CPU_RUNTIME)
    clock_khz = prop.clockRate;  // removed from cudaDeviceProp in CUDA 13; old code reads it
    mem_clock_khz = prop.memoryClockRate;
#endif
    int attr_clock = 0, attr_mem_clock = 0;
    CHECK(cudaDeviceGetAttribute(&attr_clock, cudaDevAttrClockRate, 0));
    CHECK(cudaDeviceGetAttribute(&attr_mem_clock, cudaDevAttrMemoryClockRate, 0));
    if (clock_khz == 0) clock_khz = attr_clock;
    if (mem_clock_khz == 0) mem_clock_khz = attr_mem_clock;
    double bandwidth_gbs = 2.0 * mem_clock_khz * 1e3 * (prop.memoryBusWidth / 8) / 1e9;
    printf("clock %.2f GHz, memory clock %.2f GHz, peak bandwidth %.0f GB/s\n", clock_khz * 1e-6,
           mem_clock_khz * 1e-6, bandwidth_gbs);
    ok &= clock_khz == attr_clock && mem_clock_khz == attr_mem_clock && clock_khz > 0 && bandwidth_gbs > 0;
    ok &= prop.major >= 3 && prop.multiProcessorCount > 0 && prop.warpSize == 32;
    ok &= prop.maxThreadsPerBlock >= 1024 && prop.maxThreadsDim[0] >= 1024 && prop.maxGridSize[0] >= 65535;
    ok &= prop.sharedMemPerBlock >= 48 * 1024 && prop.regsPerBlock > 0 && prop.totalGlobalMem > 0;
    ok &= prop.l2CacheSize > 0 && prop.memoryBusWidth > 0 && strlen(prop.name) > 0;

    int sms = 0, warp = 0, max_threads = 0, major = 0, minor = 0, smem = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, 0));
    CHECK(cudaDeviceGetAttribute(&max_threads, cudaDevAttrMaxThreadsPerBlock, 0));
    CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
    CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlock, 0));
    ok &= sms == prop.multiProcessorCount && warp == prop.warpSize && max_threads == prop.maxThreadsPerBlock;
    ok &= major == prop.major && minor == prop.minor && (size_t)smem == prop.sharedMemPerBlock;
    printf("attributes agree with properties: %s\n", ok ? "yes" : "no");

    size_t free0 = 0, total = 0;
    CHECK(cudaMemGetInfo(&free0, &total));
    const int n = 4096;
    int *d = nullptr, *h = nullptr;
    CHECK(cudaMalloc(&d, 64 << 20));
    size_t free1 = 0;
    CHECK(cudaMemGetInfo(&free1, &total));
    printf("cudaMemGetInfo: total %zu MB, a 64 MB allocation is visible: %s\n", total >> 20,
           free1 <= free0 - (64 << 20) ? "yes" : "no");
    ok &= total > 0 && free0 <= total && free1 <= free0 - (64 << 20);

    CHECK(cudaHostAlloc((void **)&h, n * sizeof(int), cudaHostAllocDefault));
    for (int i = 0; i < n; ++i) h[i] = i;
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaEvent_t start, stop, marker;
    CHECK(cudaEventCreateWithFlags(&start, cudaEventDefault));
    CHECK(cudaEventCreateWithFlags(&stop, cudaEventBlockingSync));
    CHECK(cudaEventCreateWithFlags(&marker, cudaEventDisableTiming));
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaMemsetAsync(d, 0, n * sizeof(int), stream));
    CHECK(cudaMemcpyAsync(d, h, n / 2 * sizeof(int), cudaMemcpyDefault, stream));
    increment<<<(n + 255) / 256, 256, 0, stream>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(marker, stream));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = -1.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    CHECK(cudaStreamSynchronize(stream));
    memset(h, 0xff, n * sizeof(int));
    CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDefault));
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += h[i] != (i < n / 2 ? i + 1 : 1);
    printf("memsetAsync + memcpy(Default) + kernel on a non-blocking stream: %d wrong, elapsed >= 0: %s\n", wrong,
           ms >= 0.0f ? "yes" : "no");
    ok &= wrong == 0 && ms >= 0.0f;

    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaEventDestroy(marker));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(d));
    CHECK(cudaDeviceReset());
    // the device is usable again after a reset
    CHECK(cudaMalloc(&d, sizeof(int)));
    CHECK(cudaMemset(d, 0, sizeof(int)));
    increment<<<1, 1>>>(d, 1);
    int one = 0;
    CHECK(cudaMemcpy(&one, d, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d));
    ok &= one == 1;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
