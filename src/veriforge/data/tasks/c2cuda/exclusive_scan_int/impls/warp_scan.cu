#include <cuda_runtime.h>

#define THREADS 256
#define ITEMS 4
#define TILE (THREADS * ITEMS)
#define WARPS (THREADS / 32)

template <typename T>
__device__ __forceinline__ T warp_inclusive(T v, int lane) {
    for (int off = 1; off < 32; off <<= 1) {
        T o = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v += o;
    }
    return v;
}

// Block-wide exclusive scan of one value per thread; every thread gets the block total too.
template <typename T>
__device__ T block_exclusive(T v, T* warp_sums, T& total) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    T inc = warp_inclusive(v, lane);
    T exc = __shfl_up_sync(0xffffffffu, inc, 1);
    if (lane == 0) exc = T(0);
    if (lane == 31) warp_sums[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        T w = lane < WARPS ? warp_sums[lane] : T(0);
        T wi = warp_inclusive(w, lane);
        T we = __shfl_up_sync(0xffffffffu, wi, 1);
        if (lane == 0) we = T(0);
        if (lane < WARPS) warp_sums[lane] = we;
        if (lane == WARPS - 1) warp_sums[32] = wi;
    }
    __syncthreads();
    T result = warp_sums[warp] + exc;
    total = warp_sums[32];
    __syncthreads();
    return result;
}

template <typename T>
__global__ void tile_sums(const T* __restrict__ in, T* __restrict__ sums, int n) {
    __shared__ T warp_sums[33];
    int base = blockIdx.x * TILE;
    T v = T(0);
    for (int k = 0; k < ITEMS; ++k) {
        int i = base + k * THREADS + threadIdx.x;
        if (i < n) v += in[i];
    }
    T total;
    block_exclusive(v, warp_sums, total);
    if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

// One block walks the tile totals in chunks, carrying the running sum.
template <typename T>
__global__ void scan_sums(const T* __restrict__ sums, T* __restrict__ offsets, int m) {
    __shared__ T warp_sums[33];
    T carry = T(0);
    for (int start = 0; start < m; start += THREADS) {
        int i = start + threadIdx.x;
        T v = i < m ? sums[i] : T(0);
        T total;
        T ex = block_exclusive(v, warp_sums, total);
        if (i < m) offsets[i] = carry + ex;
        carry += total;
    }
}

template <typename T>
__global__ void tile_scan(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ offsets, int n,
                          bool inclusive) {
    __shared__ T s[TILE];
    __shared__ T warp_sums[33];
    int base = blockIdx.x * TILE;
    for (int k = 0; k < ITEMS; ++k) {           // coalesced load of the tile
        int idx = k * THREADS + threadIdx.x;
        s[idx] = base + idx < n ? in[base + idx] : T(0);
    }
    __syncthreads();
    T r[ITEMS];
    T local = T(0);
    for (int k = 0; k < ITEMS; ++k) {           // each thread owns ITEMS consecutive elements
        r[k] = s[threadIdx.x * ITEMS + k];
        local += r[k];
    }
    T total;
    T run = block_exclusive(local, warp_sums, total) + offsets[blockIdx.x];
    for (int k = 0; k < ITEMS; ++k) {
        if (inclusive) {
            run += r[k];
            s[threadIdx.x * ITEMS + k] = run;
        } else {
            s[threadIdx.x * ITEMS + k] = run;
            run += r[k];
        }
    }
    __syncthreads();
    for (int k = 0; k < ITEMS; ++k) {           // coalesced store
        int idx = k * THREADS + threadIdx.x;
        if (base + idx < n) out[base + idx] = s[idx];
    }
}

extern "C" void solve(const int* x, int* y, int n) {
    int tiles = (n + TILE - 1) / TILE;
    int* sums = nullptr;
    int* offsets = nullptr;
    cudaMalloc(&sums, sizeof(int) * tiles);
    cudaMalloc(&offsets, sizeof(int) * tiles);
    tile_sums<int><<<tiles, THREADS>>>(x, sums, n);
    scan_sums<int><<<1, THREADS>>>(sums, offsets, tiles);
    tile_scan<int><<<tiles, THREADS>>>(x, y, offsets, n, false);
    cudaFree(sums);
    cudaFree(offsets);
}
