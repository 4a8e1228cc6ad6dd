#include <cuda_runtime.h>

// Classic three-phase scan: each 512-thread block runs a Hillis-Steele max-scan over its tile in
// double-buffered shared memory and records the tile maximum; the tile maxima are scanned recursively
// with the same kernel; then every tile except the first folds in the scanned maximum of the tiles
// before it. Coalesced, but Hillis-Steele does log2(512) = 9 full passes over the tile.
#define TILE 512
#define INT_LOWEST (-2147483647 - 1)

__global__ void tile_max_scan(const int* __restrict__ in, int* __restrict__ out, int* __restrict__ tile_max,
                              int n) {
    __shared__ int buf[2][TILE];
    int i = blockIdx.x * TILE + threadIdx.x;
    int p = 0;
    buf[0][threadIdx.x] = i < n ? in[i] : INT_LOWEST;
    __syncthreads();
    for (int off = 1; off < TILE; off <<= 1) {
        int v = buf[p][threadIdx.x];
        if (threadIdx.x >= off) v = max(v, buf[p][threadIdx.x - off]);
        buf[p ^ 1][threadIdx.x] = v;
        p ^= 1;
        __syncthreads();
    }
    if (i < n) out[i] = buf[p][threadIdx.x];
    if (tile_max != nullptr && threadIdx.x == TILE - 1) tile_max[blockIdx.x] = buf[p][TILE - 1];
}

// Tile b (b > 0) takes the inclusive scan of tile maxima up to tile b-1 as its carry.
__global__ void fold_carry(int* out, const int* scanned_tile_max, int n) {
    if (blockIdx.x == 0) return;
    int i = blockIdx.x * TILE + threadIdx.x;
    if (i < n) out[i] = max(out[i], scanned_tile_max[blockIdx.x - 1]);
}

static void max_scan(const int* in, int* out, int n) {
    int tiles = (n + TILE - 1) / TILE;
    if (tiles == 1) {
        tile_max_scan<<<1, TILE>>>(in, out, nullptr, n);
        return;
    }
    int* tile_max = nullptr;
    int* scanned = nullptr;
    cudaMalloc(&tile_max, sizeof(int) * tiles);
    cudaMalloc(&scanned, sizeof(int) * tiles);
    tile_max_scan<<<tiles, TILE>>>(in, out, tile_max, n);
    max_scan(tile_max, scanned, tiles);
    fold_carry<<<tiles, TILE>>>(out, scanned, n);
    cudaFree(tile_max);
    cudaFree(scanned);
}

extern "C" void solve(const int* x, int* y, int n) {
    max_scan(x, y, n);
}
