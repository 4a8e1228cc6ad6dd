// LSD radix sort of 32-bit keys, 4 bits per pass: per-block digit counts, an exclusive scan of the
// (digit-major) count table on the host, and a stable scatter whose in-block ranks come from
// __ballot_sync/__popc over each warp plus per-warp counts in shared memory.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#define RADIX_BITS 4
#define RADIX (1 << RADIX_BITS)
#define THREADS 256
#define WARPS (THREADS / 32)
#define CUDA_CHECK(x)                                                          \
    do {                                                                       \
        cudaError_t e = (x);                                                   \
        if (e != cudaSuccess) {                                                \
            fprintf(stderr, "CUDA: %s at line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

// counts[digit * numBlocks + block]
__global__ void digitCounts(const unsigned *keys, unsigned *counts, int n, int shift) {
    __shared__ unsigned s_cnt[RADIX];
    if (threadIdx.x < RADIX) s_cnt[threadIdx.x] = 0;
    __syncthreads();
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i < n) atomicAdd(&s_cnt[(keys[i] >> shift) & (RADIX - 1)], 1u);
    __syncthreads();
    if (threadIdx.x < RADIX) counts[threadIdx.x * gridDim.x + blockIdx.x] = s_cnt[threadIdx.x];
}

__global__ void scatter(const unsigned *keysIn, unsigned *keysOut, const unsigned *offsets, int n, int shift) {
    __shared__ unsigned s_warpCnt[RADIX][WARPS];
    int i = blockIdx.x * THREADS + threadIdx.x;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    bool valid = i < n;
    unsigned key = valid ? keysIn[i] : 0u;
    unsigned digit = valid ? (key >> shift) & (RADIX - 1) : RADIX;  // RADIX = "no digit"
    unsigned lanesBelow = (1u << lane) - 1u;
    unsigned myRank = 0;
    for (int d = 0; d < RADIX; ++d) {
        unsigned mask = __ballot_sync(0xffffffffu, digit == (unsigned)d);
        if (digit == (unsigned)d) myRank = __popc(mask & lanesBelow);
        if (lane == 0) s_warpCnt[d][warp] = __popc(mask);
    }
    __syncthreads();
    if (valid) {
        unsigned pos = offsets[digit * gridDim.x + blockIdx.x];
        for (int w = 0; w < warp; ++w) pos += s_warpCnt[digit][w];
        keysOut[pos + myRank] = key;
    }
}

int main() {
    const int n = 40000;
    const int blocks = (n + THREADS - 1) / THREADS;
    std::vector<unsigned> h(n), out(n), counts(RADIX * blocks);
    srand(606);
    for (auto &k : h) k = ((unsigned)rand() << 16) ^ (unsigned)rand();
    unsigned *d_a, *d_b, *d_cnt;
    CUDA_CHECK(cudaMalloc(&d_a, n * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&d_b, n * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&d_cnt, RADIX * blocks * sizeof(unsigned)));
    CUDA_CHECK(cudaMemcpy(d_a, h.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    for (int shift = 0; shift < 32; shift += RADIX_BITS) {
        digitCounts<<<blocks, THREADS>>>(d_a, d_cnt, n, shift);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaMemcpy(counts.data(), d_cnt, counts.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
        unsigned run = 0;
        for (auto &c : counts) {
            unsigned t = c;
            c = run;
            run += t;
        }
        if (run != (unsigned)n) {
            printf("count mismatch %u\n", run);
            printf("FAILED\n");
            return 1;
        }
        CUDA_CHECK(cudaMemcpy(d_cnt, counts.data(), counts.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
        scatter<<<blocks, THREADS>>>(d_a, d_b, d_cnt, n, shift);
        CUDA_CHECK(cudaGetLastError());
        std::swap(d_a, d_b);
    }
    CUDA_CHECK(cudaMemcpy(out.data(), d_a, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    std::sort(h.begin(), h.end());
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != h[i];
    printf("radix sort %d keys: %d mismatches\n", n, bad);
    cudaFree(d_a); cudaFree(d_b); cudaFree(d_cnt);
    printf(bad ? "FAILED\n" : "PASSED\n");
    return bad ? 1 : 0;
}
