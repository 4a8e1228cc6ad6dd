// Warp-level primitives: __ballot_sync, __any_sync, __all_sync, __activemask inside a divergent
// branch (warp-aggregated atomics), __shfl_sync broadcast with a width argument, lane masks, warp-aggregated atomic increment
// (leader election with __ffs/__popc) for stream compaction, and __syncwarp with a partial mask.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                           \
    do {                                                                        \
        cudaError_t e = (x);                                                    \
        if (e != cudaSuccess) {                                                 \
            fprintf(stderr, "CUDA error: %s line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

__device__ int atomicAggInc(int *ctr) {
    unsigned int active = __activemask();
    int leader = __ffs(active) - 1;
    int change = __popc(active);
    int lane = threadIdx.x & 31;
    unsigned int rank = __popc(active & ((1u << lane) - 1));
    int warp_res = 0;
    if (lane == leader) warp_res = atomicAdd(ctr, change);
    warp_res = __shfl_sync(active, warp_res, leader);
    return warp_res + rank;
}

// keep positive elements (order between warps is arbitrary)
__global__ void filterPositive(const int *src, int *dst, int *nres, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n && src[i] > 0) dst[atomicAggInc(nres)] = src[i];
}

__global__ void voteKernel(const int *v, unsigned *ballots, int *anyOut, int *allOut, int *bcast, int *segMax, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int x = i < n ? v[i] : 0;
    unsigned b = __ballot_sync(0xffffffffu, x % 3 == 0);
    int anyNeg = __any_sync(0xffffffffu, x < 0);
    int allSmall = __all_sync(0xffffffffu, x < 900);
    // broadcast within 8-lane segments: each segment takes the value of its first lane
    int seg = __shfl_sync(0xffffffffu, x, 0, 8);
    // segment max via xor shuffles with width 8
    int m = x;
    for (int o = 4; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o, 8));
    int w = i / 32;
    if (lane == 0) {
        ballots[w] = b;
        anyOut[w] = anyNeg;
        allOut[w] = allSmall;
    }
    if (i < n) {
        bcast[i] = seg;
        segMax[i] = m;
    }
}

// even lanes only: they synchronise among themselves with a partial mask
__global__ void evenLanes(int *data) {
    __shared__ int buf[64];
    int lane = threadIdx.x & 31;
    buf[threadIdx.x] = data[blockIdx.x * 64 + threadIdx.x];
    __syncthreads();
    if ((lane & 1) == 0) {
        const unsigned evenMask = 0x55555555u;
        int t = buf[threadIdx.x] + buf[threadIdx.x ^ 2];  // partner even lane
        __syncwarp(evenMask);
        buf[threadIdx.x] = t;
        __syncwarp(evenMask);
        data[blockIdx.x * 64 + threadIdx.x] = buf[threadIdx.x] * 10 + 1;
    }
}

int main() {
    const int n = 4096;
    std::vector<int> h(n);
    srand(31337);
    for (auto &x : h) x = rand() % 2000 - 1000;
    for (int i = 64; i < 96; ++i) h[i] = i;  // warp 2: all non-negative and < 900
    int *d_src, *d_dst, *d_n;
    CUDA_CHECK(cudaMalloc(&d_src, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_dst, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_n, sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d_src, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_n, 0, sizeof(int)));
    filterPositive<<<n / 256, 256>>>(d_src, d_dst, d_n, n);
    CUDA_CHECK(cudaGetLastError());
    int count;
    CUDA_CHECK(cudaMemcpy(&count, d_n, sizeof(int), cudaMemcpyDeviceToHost));
    std::vector<int> got(count > 0 && count <= n ? count : 0);
    CUDA_CHECK(cudaMemcpy(got.data(), d_dst, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
    std::vector<int> ref;
    for (int x : h)
        if (x > 0) ref.push_back(x);
    std::sort(got.begin(), got.end());
    std::sort(ref.begin(), ref.end());
    bool ok = got == ref;
    printf("compaction: %d kept (expected %zu)\n", count, ref.size());

    const int warps = n / 32;
    unsigned *d_ballot;
    int *d_any, *d_all, *d_bcast, *d_segmax;
    CUDA_CHECK(cudaMalloc(&d_ballot, warps * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&d_any, warps * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_all, warps * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_bcast, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_segmax, n * sizeof(int)));
    voteKernel<<<n / 128, 128>>>(d_src, d_ballot, d_any, d_all, d_bcast, d_segmax, n);
    CUDA_CHECK(cudaGetLastError());
    std::vector<unsigned> ballot(warps);
    std::vector<int> any(warps), all(warps), bcast(n), segmax(n);
    CUDA_CHECK(cudaMemcpy(ballot.data(), d_ballot, warps * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(any.data(), d_any, warps * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(all.data(), d_all, warps * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(bcast.data(), d_bcast, n * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(segmax.data(), d_segmax, n * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int w = 0; w < warps; ++w) {
        unsigned b = 0;
        bool a = false, al = true;
        for (int l = 0; l < 32; ++l) {
            int x = h[w * 32 + l];
            if (x % 3 == 0) b |= 1u << l;
            a = a || x < 0;
            al = al && x < 900;
        }
        bad += ballot[w] != b;
        bad += (any[w] != 0) != a;
        bad += (all[w] != 0) != al;
    }
    bad += all[2] == 0 || any[2] != 0;  // the crafted warp
    for (int i = 0; i < n; ++i) {
        int s = i & ~7, m = h[s];
        for (int k = 1; k < 8; ++k) m = std::max(m, h[s + k]);
        bad += bcast[i] != h[s];
        bad += segmax[i] != m;
    }
    printf("vote/shuffle mismatches: %d\n", bad);
    ok = ok && bad == 0;

    std::vector<int> ev(256);
    for (int i = 0; i < 256; ++i) ev[i] = 3 * i + 1;
    CUDA_CHECK(cudaMemcpy(d_src, ev.data(), 256 * sizeof(int), cudaMemcpyHostToDevice));
    evenLanes<<<4, 64>>>(d_src);
    CUDA_CHECK(cudaGetLastError());
    std::vector<int> eo(256);
    CUDA_CHECK(cudaMemcpy(eo.data(), d_src, 256 * sizeof(int), cudaMemcpyDeviceToHost));
    int badE = 0;
    for (int i = 0; i < 256; ++i) {
        int t = i % 64, base = i - t;
        int expect = ((t & 1) == 0) ? (ev[base + t] + ev[base + (t ^ 2)]) * 10 + 1 : ev[i];
        badE += eo[i] != expect;
    }
    printf("partial-mask syncwarp mismatches: %d\n", badE);
    ok = ok && badE == 0;
    cudaFree(d_src); cudaFree(d_dst); cudaFree(d_n); cudaFree(d_ballot); cudaFree(d_any); cudaFree(d_all);
    cudaFree(d_bcast); cudaFree(d_segmax);
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
