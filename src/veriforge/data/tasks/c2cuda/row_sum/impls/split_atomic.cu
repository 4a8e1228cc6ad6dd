#include <cuda_runtime.h>

// Split every row into chunks of CHUNK columns and give each (row, chunk) pair to one block, so even a
// handful of very long rows fills the GPU. A block reduces its chunk with warp shuffles plus one
// shared-memory step and adds the result into y[row] with a single atomicAdd; y is zeroed first because
// it arrives uninitialised.
#define THREADS 256
#define CHUNK 2048

__inline__ __device__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

__global__ void row_sum_chunks(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float warp_partials[THREADS / 32];
    int row = blockIdx.y;
    int begin = blockIdx.x * CHUNK;
    int end = min(begin + CHUNK, cols);
    const float* rp = x + (size_t)row * cols;
    float s = 0.0f;
    for (int c = begin + threadIdx.x; c < end; c += THREADS) s += rp[c];
    s = warp_sum(s);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_partials[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < THREADS / 32 ? warp_partials[lane] : 0.0f;
        s = warp_sum(s);
        if (lane == 0) atomicAdd(&y[row], s);
    }
}

extern "C" void solve(const float* x, float* y, int rows, int cols) {
    cudaMemset(y, 0, sizeof(float) * (size_t)rows);
    dim3 grid((cols + CHUNK - 1) / CHUNK, rows);
    row_sum_chunks<<<grid, THREADS>>>(x, y, cols);
}
