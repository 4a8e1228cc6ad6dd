#include <cuda_runtime.h>
#include <stdint.h>
#include <limits.h>
#include <math.h>

static int ck_grid(long long work, int threads, int blocks_per_sm) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (sms <= 0) sms = 16;
    long long blocks = (work + threads - 1) / threads;
    long long cap = (long long)sms * blocks_per_sm;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    return (int)blocks;
}

static bool ck_aligned(const void* p, int bytes) {
    return (reinterpret_cast<uintptr_t>(p) % (uintptr_t)bytes) == 0;
}

struct Acc { int s; };

__device__ __forceinline__ Acc acc_identity(void) {
    Acc a;
    a.s = 0;
    return a;
}

__device__ __forceinline__ Acc acc_lift(int x, int r) {
    Acc a;
    (void)r;
    a.s = x;
    return a;
}

__device__ __forceinline__ Acc acc_merge(Acc a, Acc b) {
    a.s += b.s;
    return a;
}

__device__ __forceinline__ int acc_final(Acc a, int R) {
    (void)R;
    return (int)a.s;
}

using E = Acc;

__device__ __forceinline__ E e_identity(void) {
    return acc_identity();
}

__device__ __forceinline__ E e_lift(int x, int r) {
    return acc_lift(x, r);
}

__device__ __forceinline__ E e_merge(E p, E q) {
    return acc_merge(p, q);
}

__device__ __forceinline__ int e_out(E e) {
    return acc_final(e, 0);
}

__device__ __forceinline__ int e_excl(E prev, E cur) {
    (void)cur;
    return acc_final(prev, 0);
}

// Hillis-Steele inclusive scan of one value per thread through sh[0..tile); every thread must call it.
// On return sh[t] holds the inclusive prefix of thread t (sh[tile - 1] the chunk total).
__device__ E hs_inclusive(E* sh, E mine, int tile) {
    int t = threadIdx.x;
    sh[t] = mine;
    __syncthreads();
    for (int off = 1; off < tile; off <<= 1) {
        E prev = t >= off ? sh[t - off] : e_identity();
        __syncthreads();
        if (t >= off) sh[t] = e_merge(prev, sh[t]);
        __syncthreads();
    }
    return sh[t];
}

__device__ __forceinline__ E e_shfl_up(E e, unsigned int delta) {
    E r;
    r.s = __shfl_up_sync(0xffffffffu, e.s, delta);
    return r;
}

__device__ __forceinline__ E e_shfl_down(E e, unsigned int delta) {
    E r;
    r.s = __shfl_down_sync(0xffffffffu, e.s, delta);
    return r;
}

__device__ __forceinline__ E e_shfl_idx(E e, int src) {
    E r;
    r.s = __shfl_sync(0xffffffffu, e.s, src);
    return r;
}

#define TILE 256
#define WARPS (TILE / 32)

// Exclusive scan of the tile totals by one block, in chunks of TILE with a running carry.
__global__ void scan_totals(const E* totals, E* offsets, int count) {
    __shared__ E sh[TILE];
    E carry = e_identity();
    for (int base = 0; base < count; base += TILE) {
        int k = base + threadIdx.x;
        hs_inclusive(sh, k < count ? totals[k] : e_identity(), TILE);
        if (k < count) offsets[k] = threadIdx.x > 0 ? e_merge(carry, sh[threadIdx.x - 1]) : carry;
        E chunk = sh[TILE - 1];
        __syncthreads();
        carry = e_merge(carry, chunk);
    }
}

// Pass 1: ordered fold of each tile (warp shuffles, then the warp totals in order).
__global__ void tile_totals(const int* __restrict__ x, int* __restrict__ out, int n, E* totals) {
    __shared__ E ws[WARPS];
    int i = blockIdx.x * TILE + threadIdx.x;
    E v = i < n ? e_lift(x[(i)], i) : e_identity();
    for (int off = 1; off < 32; off <<= 1) {
        E other = e_shfl_down(v, off);
        if ((threadIdx.x & 31) + off < 32) v = e_merge(v, other);
    }
    if ((threadIdx.x & 31) == 0) ws[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        E t = ws[0];
        for (int w = 1; w < WARPS; ++w) t = e_merge(t, ws[w]);
        totals[blockIdx.x] = t;
    }
}

// Pass 3: rescan each tile with warp shuffles (inclusive Kogge-Stone per warp) and the tile offset.
__global__ void scan_apply(const int* __restrict__ x, int* __restrict__ out, int n, const E* offsets) {
    __shared__ E ws[WARPS];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int i = blockIdx.x * TILE + threadIdx.x;
    E v = i < n ? e_lift(x[(i)], i) : e_identity();
    E mine = v;
    for (int off = 1; off < 32; off <<= 1) {
        E up = e_shfl_up(v, off);
        if (lane >= off) v = e_merge(up, v);
    }
    E before = e_shfl_up(v, 1);
    if (lane == 31) ws[warp] = v;
    __syncthreads();
    E prefix = offsets[blockIdx.x];
    for (int w = 0; w < warp; ++w) prefix = e_merge(prefix, ws[w]);
    if (i < n) {
        (void)before;
        (void)mine;
        out[(i)] = e_out(e_merge(prefix, v));
    }
}

extern "C" void solve(const int* x, int* out, int n) {
    int tiles = (n + TILE - 1) / TILE;
    E* totals = nullptr;
    E* offsets = nullptr;
    cudaMalloc(&totals, sizeof(E) * tiles);
    cudaMalloc(&offsets, sizeof(E) * tiles);
    tile_totals<<<tiles, TILE>>>(x, out, n, totals);
    scan_totals<<<1, TILE>>>(totals, offsets, tiles);
    scan_apply<<<tiles, TILE>>>(x, out, n, offsets);
    cudaFree(totals);
    cudaFree(offsets);
}
