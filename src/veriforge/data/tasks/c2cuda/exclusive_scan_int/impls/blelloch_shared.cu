#include <cuda_runtime.h>

#define THREADS 256
#define TILE (2 * THREADS)

// Blelloch scan of one 512-element tile: exclusive result in shared memory, tile total to `sums`.
// `inclusive` adds the element itself back when writing out.
__global__ void scan_tile(const int* in, int* out, int* sums, int n, bool inclusive) {
    __shared__ int s[TILE];
    int t = threadIdx.x;
    int base = blockIdx.x * TILE;
    int v0 = base + t < n ? in[base + t] : 0;
    int v1 = base + t + THREADS < n ? in[base + t + THREADS] : 0;
    s[t] = v0;
    s[t + THREADS] = v1;
    int offset = 1;
    for (int d = TILE >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1;
            int bi = offset * (2 * t + 2) - 1;
            s[bi] += s[ai];
        }
        offset <<= 1;
    }
    __syncthreads();
    if (t == 0) {
        if (sums) sums[blockIdx.x] = s[TILE - 1];
        s[TILE - 1] = 0;
    }
    for (int d = 1; d < TILE; d <<= 1) {
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1;
            int bi = offset * (2 * t + 2) - 1;
            int tmp = s[ai];
            s[ai] = s[bi];
            s[bi] += tmp;
        }
    }
    __syncthreads();
    if (base + t < n) out[base + t] = s[t] + (inclusive ? v0 : 0);
    if (base + t + THREADS < n) out[base + t + THREADS] = s[t + THREADS] + (inclusive ? v1 : 0);
}

__global__ void add_offsets(int* out, const int* offsets, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += offsets[i / TILE];
}

// Recursive driver: scan tiles, scan the tile totals (exclusive), add them back.
static void scan_device(const int* in, int* out, int n, bool inclusive) {
    int tiles = (n + TILE - 1) / TILE;
    if (tiles == 1) {
        scan_tile<<<1, THREADS>>>(in, out, nullptr, n, inclusive);
        return;
    }
    int* sums = nullptr;
    int* offsets = nullptr;
    cudaMalloc(&sums, sizeof(int) * tiles);
    cudaMalloc(&offsets, sizeof(int) * tiles);
    scan_tile<<<tiles, THREADS>>>(in, out, sums, n, inclusive);
    scan_device(sums, offsets, tiles, false);
    add_offsets<<<(n + THREADS - 1) / THREADS, THREADS>>>(out, offsets, n);
    cudaFree(sums);
    cudaFree(offsets);
}

extern "C" void solve(const int* x, int* y, int n) {
    scan_device(x, y, n, false);
}
