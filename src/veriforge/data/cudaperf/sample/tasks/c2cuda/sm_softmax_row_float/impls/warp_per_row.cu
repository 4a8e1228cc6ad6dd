#define T float
#define S_COUNT (rows)
#define L (cols)
#define OFF(s, e) ((long long)(s) * cols + (e))
#define LOAD(s, e) ((float)x[OFF(s, e)])

// One warp per slice, four slices per block. Lanes stride along the contiguous row (coalesced). Reductions are butterfly shuffles that leave the
// result in every lane: no shared memory, no block barrier.
#define WARPS 4

__device__ __forceinline__ T warp_reduce(T val, bool is_max) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        T o = __shfl_xor_sync(0xffffffffu, val, off);
        val = is_max ? fmaxf(val, o) : val + o;
    }
    return val;
}

__global__ void norm_warp(const float* x, float* y, int rows, int cols) {
    int s = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (s >= S_COUNT) return;   // warp-uniform
    float m = -INFINITY;
    for (int e = lane; e < L; e += 32) { float v = LOAD(s, e); m = fmaxf(m, v); }
    m = warp_reduce(m, true);
    float d = 0.0f;
    for (int e = lane; e < L; e += 32) { float v = LOAD(s, e); d = d + expf(v - m); }
    d = warp_reduce(d, false);
    for (int e = lane; e < L; e += 32) { float v = LOAD(s, e); y[OFF(s, e)] = (T)(expf(v - m) / d); }
}

extern "C" void solve(const float* x, float* y, int rows, int cols) {
    int slices = S_COUNT;
    if (slices <= 0) return;
    norm_warp<<<(slices + WARPS - 1) / WARPS, WARPS * 32>>>(x, y, rows, cols);
}
