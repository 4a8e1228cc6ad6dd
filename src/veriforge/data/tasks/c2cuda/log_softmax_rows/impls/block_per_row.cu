// One block per row: coalesced strided passes; max and sum combined by shared-memory tree reductions.
#define THREADS 256

__global__ void log_softmax_block(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float red[THREADS];
    const float* in = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    int t = threadIdx.x;

    float m = -INFINITY;
    for (int c = t; c < cols; c += THREADS) m = fmaxf(m, in[c]);
    red[t] = m;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = fmaxf(red[t], red[t + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int c = t; c < cols; c += THREADS) sum += expf(in[c] - m);
    red[t] = sum;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        __syncthreads();
    }
    float lse = m + logf(red[0]);
    for (int c = t; c < cols; c += THREADS) out[c] = in[c] - lse;
}

extern "C" void solve(const float* x, float* y, int rows, int cols) {
    log_softmax_block<<<rows, THREADS>>>(x, y, cols);
}
