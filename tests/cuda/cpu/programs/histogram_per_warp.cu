// 64-bin histogram with per-warp sub-histograms in dynamic shared memory, uchar4 vectorised loads,
// a block-level merge and a second kernel that merges per-block partial histograms (no global atomics).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define BIN_COUNT 64
#define WARP_SIZE 32
#define checkCudaErrors(x)                                                   \
    do {                                                                     \
        cudaError_t e_ = (x);                                                \
        if (e_ != cudaSuccess) {                                             \
            fprintf(stderr, "error %s line %d\n", cudaGetErrorString(e_), __LINE__); \
            exit(EXIT_FAILURE);                                              \
        }                                                                    \
    } while (0)

__device__ inline void addByte(unsigned int *s_WarpHist, unsigned int data) {
    atomicAdd(s_WarpHist + (data >> 2), 1);  // 8-bit values into 64 bins
}

__device__ inline void addWord(unsigned int *s_WarpHist, unsigned int data) {
    addByte(s_WarpHist, (data >> 0) & 0xFFU);
    addByte(s_WarpHist, (data >> 8) & 0xFFU);
    addByte(s_WarpHist, (data >> 16) & 0xFFU);
    addByte(s_WarpHist, (data >> 24) & 0xFFU);
}

__global__ void histogram64Kernel(unsigned int *d_PartialHistograms, const uchar4 *d_Data, unsigned int dataCount) {
    extern __shared__ unsigned int s_Hist[];
    const int warps = blockDim.x / WARP_SIZE;
    unsigned int *s_WarpHist = s_Hist + (threadIdx.x / WARP_SIZE) * BIN_COUNT;
    for (int i = threadIdx.x; i < warps * BIN_COUNT; i += blockDim.x) s_Hist[i] = 0;
    __syncthreads();
    for (unsigned int pos = blockIdx.x * blockDim.x + threadIdx.x; pos < dataCount; pos += blockDim.x * gridDim.x) {
        uchar4 d = d_Data[pos];
        unsigned int word = d.x | (d.y << 8) | (d.z << 16) | ((unsigned)d.w << 24);
        addWord(s_WarpHist, word);
    }
    __syncthreads();
    for (int bin = threadIdx.x; bin < BIN_COUNT; bin += blockDim.x) {
        unsigned int sum = 0;
        for (int w = 0; w < warps; ++w) sum += s_Hist[w * BIN_COUNT + bin];
        d_PartialHistograms[blockIdx.x * BIN_COUNT + bin] = sum;
    }
}

__global__ void mergeHistogram64Kernel(unsigned int *d_Histogram, const unsigned int *d_PartialHistograms,
                                       unsigned int histogramCount) {
    __shared__ unsigned int data[128];
    unsigned int sum = 0;
    for (unsigned int i = threadIdx.x; i < histogramCount; i += blockDim.x)
        sum += d_PartialHistograms[blockIdx.x + i * BIN_COUNT];
    data[threadIdx.x] = sum;
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        if (threadIdx.x < stride) data[threadIdx.x] += data[threadIdx.x + stride];
    }
    if (threadIdx.x == 0) d_Histogram[blockIdx.x] = data[0];
}

int main() {
    const unsigned int byteCount = 4 * 50000;
    const int blocks = 25, threads = 128;
    unsigned char *h_Data = (unsigned char *)malloc(byteCount);
    unsigned int h_Ref[BIN_COUNT] = {0}, h_Hist[BIN_COUNT];
    srand(2009);
    for (unsigned int i = 0; i < byteCount; i++) {
        h_Data[i] = rand() % 256;
        h_Ref[h_Data[i] >> 2]++;
    }
    unsigned char *d_Data;
    unsigned int *d_Partial, *d_Hist;
    checkCudaErrors(cudaMalloc((void **)&d_Data, byteCount));
    checkCudaErrors(cudaMalloc((void **)&d_Partial, blocks * BIN_COUNT * sizeof(unsigned int)));
    checkCudaErrors(cudaMalloc((void **)&d_Hist, BIN_COUNT * sizeof(unsigned int)));
    checkCudaErrors(cudaMemcpy(d_Data, h_Data, byteCount, cudaMemcpyHostToDevice));
    size_t smem = (threads / WARP_SIZE) * BIN_COUNT * sizeof(unsigned int);
    histogram64Kernel<<<blocks, threads, smem>>>(d_Partial, (const uchar4 *)d_Data, byteCount / 4);
    checkCudaErrors(cudaGetLastError());
    mergeHistogram64Kernel<<<BIN_COUNT, 128>>>(d_Hist, d_Partial, blocks);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaMemcpy(h_Hist, d_Hist, sizeof(h_Hist), cudaMemcpyDeviceToHost));
    int diff = 0;
    for (int i = 0; i < BIN_COUNT; i++)
        if (h_Hist[i] != h_Ref[i]) diff++;
    printf(" *** histogram64 %s (%d differing bins)\n", diff ? "mismatch" : "match", diff);
    cudaFree(d_Data); cudaFree(d_Partial); cudaFree(d_Hist);
    free(h_Data);
    printf(diff == 0 ? "PASSED\n" : "FAILED\n");
    return diff == 0 ? 0 : 1;
}
