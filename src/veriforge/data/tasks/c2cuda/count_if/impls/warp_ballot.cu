#include <cuda_runtime.h>
#include <stdint.h>

__global__ void count_ballot(const float* __restrict__ x, float threshold, int* out, int n, bool aligned) {
    __shared__ int warp_counts[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int stride = blockDim.x * gridDim.x;
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = aligned ? n / 4 : 0;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    int c = 0;
    // Per-lane counts for the vector body; the loop bound is uniform per warp only at the end, so
    // counts stay in registers and the ballot runs once per warp below on a full mask.
    for (int i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        c += (v.x > threshold) + (v.y > threshold) + (v.z > threshold) + (v.w > threshold);
    }
    // Tail (< 4 elements) and the unaligned path: every lane takes part in each ballot round.
    int start = n4 * 4;
    int rounds = (n - start + stride - 1) / stride;
    for (int r = 0; r < rounds; ++r) {
        int i = start + r * stride + tid;
        unsigned int hits = __ballot_sync(0xffffffffu, i < n && x[i] > threshold);
        if (lane == 0) c += __popc(hits);
    }
    for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
    if (lane == 0) warp_counts[warp] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        int total = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) total += warp_counts[w];
        atomicAdd(out, total);
    }
}

extern "C" void solve(const float* x, float threshold, int* out, int n) {
    cudaMemset(out, 0, sizeof(int));
    const int threads = 256;
    bool aligned = (reinterpret_cast<uintptr_t>(x) & 15) == 0;
    int work = aligned ? (n + 3) / 4 : n;
    int blocks = (work + threads - 1) / threads;
    if (blocks > 264) blocks = 264;
    if (blocks < 1) blocks = 1;
    count_ballot<<<blocks, threads>>>(x, threshold, out, n, aligned);
}
