// One warp per row (8 rows per 256-thread block): lanes read consecutive elements (coalesced), keep a
// running sum in a register and finish with a butterfly of warp shuffles, no shared memory or
// __syncthreads. Four independent accumulators per lane expose memory-level parallelism.
#define WARPS_PER_BLOCK 8

__global__ void gemv_warp(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                          int M, int N) {
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= M) return;   // whole warp exits together: row is warp-uniform
    const float* a = A + (long long)row * N;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    int j = lane;
    for (; j + 96 < N; j += 128) {
        s0 += __ldg(&a[j]) * __ldg(&x[j]);
        s1 += __ldg(&a[j + 32]) * __ldg(&x[j + 32]);
        s2 += __ldg(&a[j + 64]) * __ldg(&x[j + 64]);
        s3 += __ldg(&a[j + 96]) * __ldg(&x[j + 96]);
    }
    for (; j < N; j += 32) s0 += __ldg(&a[j]) * __ldg(&x[j]);
    float s = (s0 + s1) + (s2 + s3);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane == 0) y[row] = s;
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    int blocks = (M + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    gemv_warp<<<blocks, WARPS_PER_BLOCK * 32>>>(A, x, y, M, N);
}
