#define T float
#define S_COUNT (rows)
#define L (cols)
#define OFF(s, e) ((long long)(s) * cols + (e))
#define LOAD(s, e) ((float)x[OFF(s, e)])

// One block per slice. Threads stride along the contiguous row, so loads coalesce. Each reduction is a shared-memory tree whose result every thread reads.
#define THREADS 128

__device__ T block_reduce(T val, T* buf, bool is_max) {
    buf[threadIdx.x] = val;
    __syncthreads();
    for (int k = THREADS / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) {
            T o = buf[threadIdx.x + k];
            buf[threadIdx.x] = is_max ? fmaxf(buf[threadIdx.x], o) : buf[threadIdx.x] + o;
        }
        __syncthreads();
    }
    T r = buf[0];
    __syncthreads();   // all threads have read buf[0] before the buffer is reused
    return r;
}

__global__ void norm_block(const float* x, float* y, int rows, int cols) {
    __shared__ T buf[THREADS];
    int s = blockIdx.x;
    float m = -INFINITY;
    for (int e = threadIdx.x; e < L; e += THREADS) { float v = LOAD(s, e); m = fmaxf(m, v); }
    m = block_reduce(m, buf, true);
    float d = 0.0f;
    for (int e = threadIdx.x; e < L; e += THREADS) { float v = LOAD(s, e); d = d + expf(v - m); }
    d = block_reduce(d, buf, false);
    for (int e = threadIdx.x; e < L; e += THREADS) { float v = LOAD(s, e); y[OFF(s, e)] = (T)(expf(v - m) / d); }
}

extern "C" void solve(const float* x, float* y, int rows, int cols) {
    int slices = S_COUNT;
    if (slices <= 0) return;
    norm_block<<<slices, THREADS>>>(x, y, rows, cols);
}
