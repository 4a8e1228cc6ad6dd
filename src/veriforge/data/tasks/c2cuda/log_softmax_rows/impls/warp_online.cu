// One warp per row. Each lane streams its share of the row once, maintaining a running max m and a
// running sum d of exp(x - m) (rescaled when m grows); lanes merge (m, d) with butterfly shuffles, so
// every lane ends with the row's log-sum-exp. A second pass writes x - lse.
#define WARPS 8

__global__ void log_softmax_online(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;   // warp-uniform
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;

    float m = -INFINITY, d = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        float v = __ldg(&in[c]);
        if (v > m) { d = d * expf(m - v) + 1.0f; m = v; }
        else       { d += expf(v - m); }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        float om = __shfl_xor_sync(0xffffffffu, m, off);
        float od = __shfl_xor_sync(0xffffffffu, d, off);
        float nm = fmaxf(m, om);
        float a = (m == -INFINITY) ? 0.0f : d * expf(m - nm);     // empty lanes contribute nothing
        float b = (om == -INFINITY) ? 0.0f : od * expf(om - nm);
        m = nm;
        d = a + b;
    }
    float lse = m + logf(d);
    for (int c = lane; c < cols; c += 32) out[c] = __ldg(&in[c]) - lse;
}

extern "C" void solve(const float* x, float* y, int rows, int cols) {
    log_softmax_online<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>(x, y, rows, cols);
}
