// One block per row. Threads stride over the row (coalesced), and the row max and the row sum are
// each combined with a shared-memory tree reduction followed by a broadcast through shared memory.
#define THREADS 256

__device__ float block_reduce(float v, float* buf, bool is_max) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            float o = buf[threadIdx.x + s];
            buf[threadIdx.x] = is_max ? fmaxf(buf[threadIdx.x], o) : buf[threadIdx.x] + o;
        }
        __syncthreads();
    }
    float result = buf[0];
    __syncthreads();   // everyone has read buf[0] before the buffer is reused
    return result;
}

__global__ void softmax_block(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float buf[THREADS];
    const float* in = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;

    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, in[c]);
    m = block_reduce(m, buf, true);

    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) s += expf(in[c] - m);
    s = block_reduce(s, buf, false);

    float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += THREADS) out[c] = expf(in[c] - m) * inv;
}

extern "C" void solve(const float* x, float* y, int rows, int cols) {
    softmax_block<<<rows, THREADS>>>(x, y, cols);
}
