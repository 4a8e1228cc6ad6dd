// One warp per row, eight rows per 256-thread block. Lanes stride over the row and the 32 partials are
// combined with a butterfly of __shfl_xor_sync (no shared memory, no block barrier). When cols % 4 == 0
// every row starts 16-byte aligned, so the row is read as float4 (four floats per load instruction);
// otherwise a scalar loop is used. Short rows still keep a whole warp busy, and long rows stream at
// full bandwidth.
#define WARPS 8

__global__ void row_sum_warp(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;   // warp-uniform: the whole warp leaves together
    const float* rp = x + (size_t)row * cols;
    float s = 0.0f;
    if ((cols & 3) == 0) {
        const float4* r4 = reinterpret_cast<const float4*>(rp);
        int n4 = cols >> 2;
        for (int c = lane; c < n4; c += 32) {
            float4 v = __ldg(&r4[c]);
            s += (v.x + v.y) + (v.z + v.w);
        }
    } else {
        for (int c = lane; c < cols; c += 32) s += __ldg(&rp[c]);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) y[row] = s;
}

extern "C" void solve(const float* x, float* y, int rows, int cols) {
    row_sum_warp<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>(x, y, rows, cols);
}
