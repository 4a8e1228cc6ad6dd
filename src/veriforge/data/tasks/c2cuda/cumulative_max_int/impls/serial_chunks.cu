#include <cuda_runtime.h>

// The "parallelise the outer loop" approach: each thread scans its own 64-element chunk serially, one
// single GPU thread then runs through the chunk maxima to turn them into carries, and a final pass
// folds each chunk's carry into its elements. Neighbouring threads read addresses 256 bytes apart
// (uncoalesced) and the carry pass is completely serial.
#define CHUNK 64
#define INT_LOWEST (-2147483647 - 1)

__global__ void chunk_scan(const int* x, int* y, int* chunk_max, int n, int chunks) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= chunks) return;
    int begin = c * CHUNK;
    int end = min(begin + CHUNK, n);
    int m = INT_LOWEST;
    for (int i = begin; i < end; ++i) {
        m = max(m, x[i]);
        y[i] = m;
    }
    chunk_max[c] = m;
}

// Replaces every chunk maximum by the maximum of all chunks before it (exclusive scan), serially.
__global__ void serial_carries(int* chunk_max, int chunks) {
    int running = INT_LOWEST;
    for (int c = 0; c < chunks; ++c) {
        int here = chunk_max[c];
        chunk_max[c] = running;
        running = max(running, here);
    }
}

__global__ void apply_carries(int* y, const int* carry, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = max(y[i], carry[i / CHUNK]);
}

extern "C" void solve(const int* x, int* y, int n) {
    int chunks = (n + CHUNK - 1) / CHUNK;
    int* chunk_max = nullptr;
    cudaMalloc(&chunk_max, sizeof(int) * chunks);
    int threads = 128;
    chunk_scan<<<(chunks + threads - 1) / threads, threads>>>(x, y, chunk_max, n, chunks);
    serial_carries<<<1, 1>>>(chunk_max, chunks);
    apply_carries<<<(n + 255) / 256, 256>>>(y, chunk_max, n);
    cudaFree(chunk_max);
}
