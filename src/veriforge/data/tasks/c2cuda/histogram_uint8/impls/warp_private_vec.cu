#include <cuda_runtime.h>
#include <stdint.h>

#define BINS 256
#define THREADS 256
#define WARPS (THREADS / 32)

// One sub-histogram per warp: threads of different warps never contend on the same shared word.
__global__ void hist_warp_private(const unsigned char* __restrict__ data, unsigned int* __restrict__ hist,
                                  int n, int head) {
    __shared__ unsigned int sub[WARPS][BINS];
    unsigned int* mine = sub[threadIdx.x >> 5];
    for (int k = threadIdx.x; k < WARPS * BINS; k += THREADS) (&sub[0][0])[k] = 0;
    __syncthreads();
    int tid = blockIdx.x * THREADS + threadIdx.x;
    int stride = THREADS * gridDim.x;
    // Unaligned head bytes (before the first 4-byte boundary) and the tail are counted one by one.
    if (tid < head) atomicAdd(&mine[data[tid]], 1u);
    const unsigned int* words = reinterpret_cast<const unsigned int*>(data + head);
    int nwords = (n - head) / 4;
    for (int w = tid; w < nwords; w += stride) {
        unsigned int v = __ldg(words + w);
        atomicAdd(&mine[v & 0xffu], 1u);
        atomicAdd(&mine[(v >> 8) & 0xffu], 1u);
        atomicAdd(&mine[(v >> 16) & 0xffu], 1u);
        atomicAdd(&mine[v >> 24], 1u);
    }
    for (int i = head + nwords * 4 + tid; i < n; i += stride) atomicAdd(&mine[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += THREADS) {
        unsigned int c = 0;
        for (int w = 0; w < WARPS; ++w) c += sub[w][b];
        if (c) atomicAdd(&hist[b], c);
    }
}

extern "C" void solve(const unsigned char* data, unsigned int* hist, int n) {
    cudaMemset(hist, 0, BINS * sizeof(unsigned int));
    int misalign = static_cast<int>(reinterpret_cast<uintptr_t>(data) & 3);
    int head = misalign ? 4 - misalign : 0;
    if (head > n) head = n;
    int words = (n - head) / 4;
    int blocks = (words + THREADS - 1) / THREADS;
    if (blocks > 264) blocks = 264;
    if (blocks < 1) blocks = 1;
    hist_warp_private<<<blocks, THREADS>>>(data, hist, n, head);
}
