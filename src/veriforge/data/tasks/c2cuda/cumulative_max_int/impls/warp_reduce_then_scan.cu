#include <cuda_runtime.h>

// Reduce-then-scan over 2048-element tiles (256 threads x 8 consecutive items). Each thread reads its
// 8 items as two 16-byte int4 loads and scans them in registers; thread aggregates are scanned across
// the warp with __shfl_up_sync and across the 8 warps through a 9-int shared array. Pass 1 only
// reduces each tile to its maximum, pass 2 (one block) turns tile maxima into carries, pass 3 rescans
// with the carry. Global traffic is ~3 reads + 1 write of int per element and every load is
// vectorised.
#define THREADS 256
#define ITEMS 8
#define TILE (THREADS * ITEMS)
#define WARPS (THREADS / 32)
#define INT_LOWEST (-2147483647 - 1)

// Loads this thread's ITEMS consecutive elements starting at `first`; out-of-range items get INT_LOWEST.
__device__ __forceinline__ void load_items(const int* __restrict__ x, int first, int n, int (&v)[ITEMS]) {
    if (first + ITEMS <= n) {
        const int4* p = reinterpret_cast<const int4*>(x + first);
        int4 a = __ldg(p);
        int4 b = __ldg(p + 1);
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
        v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) v[k] = first + k < n ? x[first + k] : INT_LOWEST;
    }
}

__device__ __forceinline__ int warp_inclusive_max(int v, int lane) {
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        int o = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v = max(v, o);
    }
    return v;
}

// Exclusive max-scan of one value per thread across the block; `total` receives the block maximum.
__device__ int block_exclusive_max(int v, int* warp_max, int& total) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int inc = warp_inclusive_max(v, lane);
    int exc = __shfl_up_sync(0xffffffffu, inc, 1);
    if (lane == 0) exc = INT_LOWEST;
    if (lane == 31) warp_max[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        int w = lane < WARPS ? warp_max[lane] : INT_LOWEST;
        int wi = warp_inclusive_max(w, lane);
        int we = __shfl_up_sync(0xffffffffu, wi, 1);
        if (lane == 0) we = INT_LOWEST;
        if (lane < WARPS) warp_max[lane] = we;
        if (lane == 31) warp_max[WARPS] = wi;
    }
    __syncthreads();
    int result = max(warp_max[warp], exc);
    total = warp_max[WARPS];
    __syncthreads();   // warp_max may be reused by the caller's next call
    return result;
}

__global__ void tile_reduce(const int* __restrict__ x, int* __restrict__ tile_max, int n) {
    __shared__ int warp_max[32];
    int v[ITEMS];
    load_items(x, blockIdx.x * TILE + threadIdx.x * ITEMS, n, v);
    int m = v[0];
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) m = max(m, v[k]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, off));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_max[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = lane < WARPS ? warp_max[lane] : INT_LOWEST;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, off));
        if (lane == 0) tile_max[blockIdx.x] = m;
    }
}

// One block: carry[t] = max(tile_max[0..t-1]), INT_LOWEST for t = 0, walking the tiles in chunks.
__global__ void tile_carries(const int* __restrict__ tile_max, int* __restrict__ carry, int tiles) {
    __shared__ int warp_max[32];
    int running = INT_LOWEST;
    for (int start = 0; start < tiles; start += THREADS) {
        int t = start + threadIdx.x;
        int total;
        int exc = block_exclusive_max(t < tiles ? tile_max[t] : INT_LOWEST, warp_max, total);
        if (t < tiles) carry[t] = max(running, exc);
        running = max(running, total);
    }
}

__global__ void tile_scan(const int* __restrict__ x, int* __restrict__ y, const int* __restrict__ carry, int n) {
    __shared__ int warp_max[32];
    int first = blockIdx.x * TILE + threadIdx.x * ITEMS;
    int v[ITEMS];
    load_items(x, first, n, v);
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) v[k] = max(v[k], v[k - 1]);   // thread-local inclusive scan
    int total;
    int prefix = max(block_exclusive_max(v[ITEMS - 1], warp_max, total), carry[blockIdx.x]);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) v[k] = max(v[k], prefix);
    if (first + ITEMS <= n) {
        int4* p = reinterpret_cast<int4*>(y + first);
        p[0] = make_int4(v[0], v[1], v[2], v[3]);
        p[1] = make_int4(v[4], v[5], v[6], v[7]);
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            if (first + k < n) y[first + k] = v[k];
    }
}

extern "C" void solve(const int* x, int* y, int n) {
    int tiles = (n + TILE - 1) / TILE;
    int* tile_max = nullptr;
    int* carry = nullptr;
    cudaMalloc(&tile_max, sizeof(int) * tiles);
    cudaMalloc(&carry, sizeof(int) * tiles);
    tile_reduce<<<tiles, THREADS>>>(x, tile_max, n);
    tile_carries<<<1, THREADS>>>(tile_max, carry, tiles);
    tile_scan<<<tiles, THREADS>>>(x, y, carry, n);
    cudaFree(tile_max);
    cudaFree(carry);
}
