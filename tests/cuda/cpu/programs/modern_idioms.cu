// Idioms of newer CUDA C++ code: extern "C" and namespaced kernels, __launch_bounds__(256, 2),
// templates with default arguments, if constexpr, lambdas inside kernels, cooperative_groups
// coalesced_threads() for warp-aggregated atomics, __match_any_sync and __reduce_add_sync (sm_80+),
// shared-memory float atomics, 64-bit atomicMax and float atomicExch.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cooperative_groups.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;

#define CUDA_CHECK(x)                                                              \
    do {                                                                           \
        cudaError_t e = (x);                                                       \
        if (e != cudaSuccess) {                                                    \
            fprintf(stderr, "CUDA error %s line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

extern "C" __global__ void scale_c_linkage(float *x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

namespace kernels {
namespace detail {
template <typename T>
__device__ __forceinline__ T clampT(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }
}  // namespace detail

template <typename T, int ITEMS = 4, bool CLAMP = false>
__global__ void __launch_bounds__(256, 2) process(const T *in, T *out, int n) {
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;
    auto f = [](T v) { return v * v + T(1); };  // plain lambda inside device code
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int i = base + k;
        if (i < n) {
            T r = f(in[i]);
            if constexpr (CLAMP) r = detail::clampT(r, T(0), T(50));
            out[i] = r;
        }
    }
}
}  // namespace kernels

__device__ int aggInc(int *ctr) {
    cg::coalesced_group active = cg::coalesced_threads();
    int prev = 0;
    if (active.thread_rank() == 0) prev = atomicAdd(ctr, (int)active.size());
    return active.shfl(prev, 0) + active.thread_rank();
}

__global__ void compactMultiplesOf3(const int *in, int *out, int *count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && in[i] % 3 == 0) out[aggInc(count)] = in[i];
}

// Per-key counts: lanes with equal keys find each other with __match_any_sync; the lowest lane of
// each group adds the group size. __reduce_add_sync gives the warp total for a cross-check.
__global__ void keyCounts(const int *keys, int *counts, int *warpTotals, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int key = i < n ? keys[i] : -1;
    unsigned peers = __match_any_sync(0xffffffffu, key);
    int leader = __ffs(peers) - 1;
    if (key >= 0 && lane == leader) atomicAdd(&counts[key], __popc(peers));
    unsigned total = __reduce_add_sync(0xffffffffu, key >= 0 ? 1u : 0u);
    if (lane == 0) warpTotals[i / 32] = (int)total;
}

__global__ void sharedFloatAtomics(const float *x, float *blockSums, long long *maxBits, float *lastSeen, int n) {
    __shared__ float acc[4];
    if (threadIdx.x < 4) acc[threadIdx.x] = 0.f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&acc[i & 3], x[i]);
        atomicMax(maxBits, (long long)(x[i] * 1000.0f));
        atomicExch(lastSeen, 42.0f);
    }
    __syncthreads();
    if (threadIdx.x < 4) blockSums[blockIdx.x * 4 + threadIdx.x] = acc[threadIdx.x];
}

int main() {
    const int n = 3000;
    std::vector<float> hx(n);
    std::vector<int> hk(n);
    srand(2468);
    for (int i = 0; i < n; ++i) {
        hx[i] = (float)rand() / RAND_MAX * 10.f;
        hk[i] = rand() % 50;
    }
    float *dx, *dy, *dsums, *dlast;
    int *dk, *dcounts, *dtot, *dout, *dcount;
    long long *dmax;
    const int blocks = (n + 255) / 256;
    CUDA_CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dy, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dsums, blocks * 4 * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dlast, sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dk, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dcounts, 50 * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dtot, blocks * 8 * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dout, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dcount, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dmax, sizeof(long long)));
    CUDA_CHECK(cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dk, hk.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dcounts, 0, 50 * sizeof(int)));
    CUDA_CHECK(cudaMemset(dcount, 0, sizeof(int)));
    CUDA_CHECK(cudaMemset(dmax, 0, sizeof(long long)));
    CUDA_CHECK(cudaMemset(dlast, 0, sizeof(float)));
    int bad = 0;

    kernels::process<float><<<(n / 4 + 255) / 256, 256>>>(dx, dy, n);
    std::vector<float> hy(n);
    CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) bad += fabsf(hy[i] - (hx[i] * hx[i] + 1.f)) > 1e-4f;
    kernels::process<float, 2, true><<<(n / 2 + 255) / 256, 256>>>(dx, dy, n);
    CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) bad += fabsf(hy[i] - fminf(hx[i] * hx[i] + 1.f, 50.f)) > 1e-4f;
    scale_c_linkage<<<blocks, 256>>>(dy, 0.5f, n);
    CUDA_CHECK(cudaMemcpy(hy.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) bad += fabsf(hy[i] - 0.5f * fminf(hx[i] * hx[i] + 1.f, 50.f)) > 1e-4f;
    printf("templates/lambdas/extern C: %d mismatches\n", bad);

    compactMultiplesOf3<<<blocks, 256>>>(dk, dout, dcount, n);
    keyCounts<<<blocks, 256>>>(dk, dcounts, dtot, n);
    sharedFloatAtomics<<<blocks, 256>>>(dx, dsums, dmax, dlast, n);
    CUDA_CHECK(cudaGetLastError());
    int count;
    CUDA_CHECK(cudaMemcpy(&count, dcount, sizeof(int), cudaMemcpyDeviceToHost));
    std::vector<int> got(std::max(0, std::min(count, n)));
    CUDA_CHECK(cudaMemcpy(got.data(), dout, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
    std::vector<int> ref;
    for (int k : hk)
        if (k % 3 == 0) ref.push_back(k);
    std::sort(got.begin(), got.end());
    std::sort(ref.begin(), ref.end());
    bad += got != ref;
    std::vector<int> counts(50), tot(blocks * 8);
    CUDA_CHECK(cudaMemcpy(counts.data(), dcounts, 50 * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(tot.data(), dtot, tot.size() * sizeof(int), cudaMemcpyDeviceToHost));
    std::vector<int> refCounts(50, 0);
    for (int k : hk) refCounts[k]++;
    bad += counts != refCounts;
    for (int w = 0; w < blocks * 8; ++w) {
        int valid = std::max(0, std::min(32, n - w * 32));
        bad += tot[w] != valid;
    }
    std::vector<float> sums(blocks * 4);
    long long mx;
    float last;
    CUDA_CHECK(cudaMemcpy(sums.data(), dsums, sums.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&mx, dmax, sizeof(mx), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&last, dlast, sizeof(float), cudaMemcpyDeviceToHost));
    long long refMax = 0;
    for (int b = 0; b < blocks; ++b)
        for (int r = 0; r < 4; ++r) {
            double s = 0;
            for (int i = b * 256; i < std::min(n, (b + 1) * 256); ++i)
                if ((i & 3) == r) s += hx[i];
            bad += fabs(sums[b * 4 + r] - s) > 1e-3 * (1 + s);
        }
    for (int i = 0; i < n; ++i) refMax = std::max(refMax, (long long)(hx[i] * 1000.0f));
    bad += mx != refMax || last != 42.0f;
    printf("compaction %d/%zu, total mismatches %d\n", count, ref.size(), bad);
    cudaFree(dx); cudaFree(dy); cudaFree(dsums); cudaFree(dlast); cudaFree(dk); cudaFree(dcounts);
    cudaFree(dtot); cudaFree(dout); cudaFree(dcount); cudaFree(dmax);
    printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
    return bad == 0 ? 0 : 1;
}
