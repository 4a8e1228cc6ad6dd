// Launch-configuration APIs used by tuned code: cudaOccupancyMaxPotentialBlockSize,
// cudaOccupancyMaxActiveBlocksPerMultiprocessor, cudaFuncGetAttributes, cudaFuncSetAttribute for a
// large dynamic shared-memory opt-in, then launches with the suggested sizes.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                                 \
    do {                                                                              \
        cudaError_t e = (x);                                                          \
        if (e != cudaSuccess) {                                                       \
            fprintf(stderr, "CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

__global__ void square(int *array, int arrayCount) {
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    if (idx < arrayCount) array[idx] *= array[idx];
}

__global__ void bigShared(const int *in, int *out, int n) {
    extern __shared__ int buf[];  // 64 KB: needs the opt-in attribute on real GPUs
    const int words = 64 * 1024 / sizeof(int);
    for (int i = threadIdx.x; i < words; i += blockDim.x) buf[i] = i < n ? in[i] : 0;
    __syncthreads();
    for (int i = threadIdx.x; i < n && i < words; i += blockDim.x) out[i] = buf[words - 1 - i] + buf[i];
}

int main() {
    int blockSize = 0, minGridSize = 0, maxActive = 0;
    CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&minGridSize, &blockSize, square, 0, 0));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&maxActive, square, blockSize, 0));
    cudaFuncAttributes attr;
    CUDA_CHECK(cudaFuncGetAttributes(&attr, square));
    printf("suggested block %d, min grid %d, active blocks/SM %d, maxThreadsPerBlock %d\n", blockSize, minGridSize,
           maxActive, attr.maxThreadsPerBlock);
    bool ok = blockSize > 0 && blockSize <= 1024 && blockSize % 32 == 0 && minGridSize > 0 && maxActive > 0 &&
              attr.maxThreadsPerBlock >= blockSize;
    const int n = 10000;
    int *h = new int[n], *d;
    for (int i = 0; i < n; ++i) h[i] = i - 5000;
    CUDA_CHECK(cudaMalloc(&d, n * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));
    square<<<(n + blockSize - 1) / blockSize, blockSize>>>(d, n);
    CUDA_CHECK(cudaGetLastError());
    int *r = new int[n];
    CUDA_CHECK(cudaMemcpy(r, d, n * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += r[i] != (i - 5000) * (i - 5000);

    const int smem = 64 * 1024;
    CUDA_CHECK(cudaFuncSetAttribute(bigShared, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int *dout;
    CUDA_CHECK(cudaMalloc(&dout, n * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));
    bigShared<<<1, 256, smem>>>(d, dout, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(r, dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    const int words = smem / sizeof(int);
    for (int i = 0; i < n; ++i) {
        int mirror = words - 1 - i;
        bad += r[i] != (mirror < n ? h[mirror] : 0) + h[i];
    }
    printf("mismatches: %d\n", bad);
    ok = ok && bad == 0;
    cudaFree(d);
    cudaFree(dout);
    delete[] h;
    delete[] r;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
