// One warp per row with 128-bit accesses. A row starts at x + row*cols, which is 16-byte aligned only
// when row*cols % 4 == 0, so each row is split into a scalar head (up to the first aligned element), a
// float4 body and a scalar tail. gamma is read with the same split only when its offset matches the
// row's (cols % 4 == 0); otherwise gamma is read with scalar loads inside the body.
#define WARPS 8

__global__ void rmsnorm_vec4(const float* __restrict__ x, const float* __restrict__ gamma,
                             float* __restrict__ y, int rows, int cols, float eps) {
    int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;   // warp-uniform
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;

    int head = (int)((4 - ((reinterpret_cast<unsigned long long>(in) >> 2) & 3)) & 3);
    if (head > cols) head = cols;
    int nvec = (cols - head) / 4;
    int tail0 = head + nvec * 4;
    const float4* in4 = reinterpret_cast<const float4*>(in + head);

    float ss = 0.0f;
    if (lane < head) { float v = in[lane]; ss += v * v; }
    for (int i = lane; i < nvec; i += 32) {
        float4 v = __ldg(&in4[i]);
        ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    for (int c = tail0 + lane; c < cols; c += 32) { float v = in[c]; ss += v * v; }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    float inv = rsqrtf(ss / cols + eps);

    float4* out4 = reinterpret_cast<float4*>(out + head);
    bool gamma_aligned = ((reinterpret_cast<unsigned long long>(gamma + head) & 15ull) == 0);
    if (lane < head) out[lane] = in[lane] * inv * gamma[lane];
    for (int i = lane; i < nvec; i += 32) {
        float4 v = __ldg(&in4[i]);
        int c = head + 4 * i;
        float4 g;
        if (gamma_aligned) g = __ldg(reinterpret_cast<const float4*>(gamma + c));
        else g = make_float4(__ldg(&gamma[c]), __ldg(&gamma[c + 1]), __ldg(&gamma[c + 2]), __ldg(&gamma[c + 3]));
        out4[i] = make_float4(v.x * inv * g.x, v.y * inv * g.y, v.z * inv * g.z, v.w * inv * g.w);
    }
    for (int c = tail0 + lane; c < cols; c += 32) out[c] = in[c] * inv * gamma[c];
}

extern "C" void solve(const float* x, const float* gamma, float* y, int rows, int cols, float eps) {
    rmsnorm_vec4<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>(x, gamma, y, rows, cols, eps);
}
