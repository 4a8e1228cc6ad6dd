// One warp per row: max and sum are reduced with butterfly shuffles, which leave the result in every
// lane (no broadcast step, no shared memory, no block barrier). Rows are short enough that the row
// stays in L1 between the three passes.
#define WARPS 4

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__global__ void softmax_warp(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;   // warp-uniform
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;

    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, in[c]);
    m = warp_max(m);
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += expf(in[c] - m);
    s = warp_sum(s);
    float inv = 1.0f / s;
    for (int c = lane; c < cols; c += 32) out[c] = expf(in[c] - m) * inv;
}

extern "C" void solve(const float* x, float* y, int rows, int cols) {
    softmax_warp<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>(x, y, rows, cols);
}
