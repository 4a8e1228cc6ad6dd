// Batcher's odd-even merge sort in shared memory for float keys (one array per block), then a
// global odd-even transposition pass kernel launched repeatedly to merge two sorted halves.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cuda_runtime.h>

#define N_PER_BLOCK 512
#define CUDA_CHECK(x)                                                                 \
    do {                                                                              \
        cudaError_t err_ = (x);                                                       \
        if (err_ != cudaSuccess) {                                                    \
            printf("CUDA error: %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, __LINE__); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

__device__ __forceinline__ void cmpSwap(float &a, float &b) {
    if (a > b) {
        float t = a;
        a = b;
        b = t;
    }
}

__global__ void oddEvenMergeSortShared(float *d, int n) {
    __shared__ float s[N_PER_BLOCK];
    float *base = d + blockIdx.x * N_PER_BLOCK;
    for (int i = threadIdx.x; i < N_PER_BLOCK; i += blockDim.x) s[i] = base[i];
    for (int size = 2; size <= N_PER_BLOCK; size <<= 1) {
        // first stage of the merge: compare elements stride size/2 apart
        int stride = size / 2;
        int offset = threadIdx.x & (stride - 1);
        {
            __syncthreads();
            int pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
            cmpSwap(s[pos], s[pos + stride]);
        }
        for (stride >>= 1; stride > 0; stride >>= 1) {
            __syncthreads();
            int pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
            offset = threadIdx.x & ((size / 2) - 1);
            if (offset >= stride) cmpSwap(s[pos - stride], s[pos]);
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < N_PER_BLOCK; i += blockDim.x) base[i] = s[i];
}

// One odd-even transposition phase over the whole array.
__global__ void oddEvenPhase(float *d, int n, int phase) {
    int i = 2 * (blockIdx.x * blockDim.x + threadIdx.x) + (phase & 1);
    if (i + 1 < n) cmpSwap(d[i], d[i + 1]);
}

int main() {
    const int blocks = 8, n = blocks * N_PER_BLOCK;
    float *h = new float[n], *r = new float[n];
    srand(55);
    for (int i = 0; i < n; ++i) h[i] = (float)rand() / RAND_MAX * 100.0f - 50.0f;
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    oddEvenMergeSortShared<<<blocks, N_PER_BLOCK / 2>>>(d, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(r, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < blocks; ++b) {
        std::sort(h + b * N_PER_BLOCK, h + (b + 1) * N_PER_BLOCK);
        for (int i = 0; i < N_PER_BLOCK; ++i)
            if (r[b * N_PER_BLOCK + i] != h[b * N_PER_BLOCK + i]) ++bad;
    }
    printf("per-block odd-even merge sort: %d mismatches\n", bad);
    // merge only the first two sorted blocks with transposition phases (needs <= n phases)
    const int m = 2 * N_PER_BLOCK;
    for (int p = 0; p < m; ++p) oddEvenPhase<<<(m / 2 + 127) / 128, 128>>>(d, m, p);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(r, d, m * sizeof(float), cudaMemcpyDeviceToHost));
    std::sort(h, h + m);
    int bad2 = 0;
    for (int i = 0; i < m; ++i)
        if (r[i] != h[i]) ++bad2;
    printf("transposition merge: %d mismatches\n", bad2);
    cudaFree(d);
    delete[] h;
    delete[] r;
    bool ok = bad == 0 && bad2 == 0;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
