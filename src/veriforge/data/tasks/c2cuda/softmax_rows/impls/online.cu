// Online softmax (Milakov & Gimelshein): each lane keeps a running max m and a running sum d of
// exp(x - m), rescaling d whenever m grows, so the max and the sum come out of ONE read pass. Lanes
// then merge their (m, d) pairs with shuffles. Total traffic: two reads + one write instead of three
// reads + one write.
#define WARPS 4

__device__ __forceinline__ void merge(float& m, float& d, float om, float od) {
    float nm = fmaxf(m, om);
    // An all -inf lane (no elements) has d == 0; guard so that exp(-inf - -inf) = NaN never appears.
    float a = (m == -INFINITY) ? 0.0f : d * __expf(m - nm);
    float b = (om == -INFINITY) ? 0.0f : od * __expf(om - nm);
    m = nm;
    d = a + b;
}

__global__ void softmax_online(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;   // warp-uniform
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;

    float m = -INFINITY, d = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        float v = __ldg(&in[c]);
        if (v > m) {
            d = d * expf(m - v) + 1.0f;   // m == -inf on first element: expf(-inf) == 0
            m = v;
        } else {
            d += expf(v - m);
        }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        float om = __shfl_xor_sync(0xffffffffu, m, off);
        float od = __shfl_xor_sync(0xffffffffu, d, off);
        merge(m, d, om, od);
    }
    float inv = 1.0f / d;
    for (int c = lane; c < cols; c += 32) out[c] = expf(__ldg(&in[c]) - m) * inv;
}

extern "C" void solve(const float* x, float* y, int rows, int cols) {
    softmax_online<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>(x, y, rows, cols);
}
