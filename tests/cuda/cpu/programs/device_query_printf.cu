// deviceQuery-style output (cudaGetDeviceCount, cudaGetDeviceProperties, cudaDriverGetVersion,
// cudaRuntimeGetVersion, cudaDeviceGetAttribute), device-side printf from a few threads, cudaMemset
// byte patterns on int buffers, and an error path: cudaGetErrorString of an invalid launch.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define checkCudaErrors(val)                                                            \
    do {                                                                                \
        cudaError_t r_ = (val);                                                         \
        if (r_ != cudaSuccess) {                                                        \
            fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\"\n", __FILE__, __LINE__, \
                    (int)r_, cudaGetErrorName(r_), #val);                               \
            exit(EXIT_FAILURE);                                                         \
        }                                                                               \
    } while (0)

__global__ void hello(int *marks) {
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) printf("Hello from block %d, thread %d (gid %d)\n", blockIdx.x, threadIdx.x, gid);
    marks[gid] += gid;
}

int main() {
    int deviceCount = 0;
    checkCudaErrors(cudaGetDeviceCount(&deviceCount));
    printf("Detected %d CUDA Capable device(s)\n", deviceCount);
    bool ok = deviceCount >= 1;
    checkCudaErrors(cudaSetDevice(0));
    cudaDeviceProp deviceProp;
    checkCudaErrors(cudaGetDeviceProperties(&deviceProp, 0));
    int driverVersion = 0, runtimeVersion = 0;
    checkCudaErrors(cudaDriverGetVersion(&driverVersion));
    checkCudaErrors(cudaRuntimeGetVersion(&runtimeVersion));
    printf("\nDevice %d: \"%s\"\n", 0, deviceProp.name);
    printf("  CUDA Driver Version / Runtime Version          %d.%d / %d.%d\n", driverVersion / 1000,
           (driverVersion % 100) / 10, runtimeVersion / 1000, (runtimeVersion % 100) / 10);
    printf("  CUDA Capability Major/Minor version number:    %d.%d\n", deviceProp.major, deviceProp.minor);
    printf("  Total amount of global memory:                 %.0f MBytes\n", (float)deviceProp.totalGlobalMem / 1048576.0f);
    printf("  Multiprocessors:                               %d\n", deviceProp.multiProcessorCount);
    printf("  Total amount of shared memory per block:       %zu bytes\n", deviceProp.sharedMemPerBlock);
    printf("  Total number of registers available per block: %d\n", deviceProp.regsPerBlock);
    printf("  Warp size:                                     %d\n", deviceProp.warpSize);
    printf("  Maximum number of threads per block:           %d\n", deviceProp.maxThreadsPerBlock);
    printf("  Max dimension size of a thread block (x,y,z): (%d, %d, %d)\n", deviceProp.maxThreadsDim[0],
           deviceProp.maxThreadsDim[1], deviceProp.maxThreadsDim[2]);
    printf("  Max dimension size of a grid size    (x,y,z): (%d, %d, %d)\n", deviceProp.maxGridSize[0],
           deviceProp.maxGridSize[1], deviceProp.maxGridSize[2]);
    int smPerMulti = 0;
    checkCudaErrors(cudaDeviceGetAttribute(&smPerMulti, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    printf("  Shared memory per multiprocessor:              %d bytes\n", smPerMulti);
    ok = ok && deviceProp.warpSize == 32 && deviceProp.maxThreadsPerBlock >= 1024 && deviceProp.multiProcessorCount > 0 &&
         deviceProp.major >= 3 && deviceProp.sharedMemPerBlock >= 48 * 1024 && deviceProp.totalGlobalMem > 0 &&
         strlen(deviceProp.name) > 0 && deviceProp.maxThreadsDim[0] >= 1024 && deviceProp.maxGridSize[0] >= 65535 &&
         smPerMulti > 0;

    // cudaMemset writes bytes: 0x01 in every byte of an int is 0x01010101
    const int n = 4 * 64;
    int *d, h[n];
    checkCudaErrors(cudaMalloc(&d, n * sizeof(int)));
    checkCudaErrors(cudaMemset(d, 0x01, n * sizeof(int)));
    checkCudaErrors(cudaMemset(d + n / 2, 0, (n / 2) * sizeof(int)));
    hello<<<4, 64>>>(d);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaDeviceSynchronize());  // flushes device printf
    checkCudaErrors(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += h[i] != (i < n / 2 ? 0x01010101 : 0) + i;
    printf("memset/kernel mismatches: %d\n", bad);
    ok = ok && bad == 0;

    // an invalid configuration must be reported, not silently run (2048 threads per block > 1024)
    hello<<<1, 2048>>>(d);
    cudaError_t launchErr = cudaGetLastError();
    printf("invalid launch reports: %s\n", cudaGetErrorString(launchErr));
    ok = ok && launchErr != cudaSuccess;
    // the error is not sticky: the next call succeeds and the last error was cleared
    ok = ok && cudaGetLastError() == cudaSuccess;
    checkCudaErrors(cudaFree(d));
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
