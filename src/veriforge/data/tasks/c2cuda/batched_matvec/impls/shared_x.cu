// Grid = (row groups, batch). Each block copies x[b] into shared memory once (coalesced) and its 8 warps
// take up to 4 rows each, reading A[b] coalesced and x from shared memory; partial sums stay in
// registers and are reduced with shuffles at the end. x is processed in shared-memory-sized chunks, so
// any N works (for N <= XS_MAX there is exactly one chunk).
#define WARPS 8
#define ROWS_PER_WARP 4
#define XS_MAX 4096

__global__ void bmv_shared_x(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                             int M, int N) {
    __shared__ float xs[XS_MAX];
    const int b = blockIdx.y;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int rowBegin = blockIdx.x * (WARPS * ROWS_PER_WARP);
    const float* v = x + (long long)b * N;

    float acc[ROWS_PER_WARP] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int j0 = 0; j0 < N; j0 += XS_MAX) {
        int len = min(XS_MAX, N - j0);
        __syncthreads();   // previous chunk fully consumed before it is overwritten
        for (int t = threadIdx.x; t < len; t += WARPS * 32) xs[t] = v[j0 + t];
        __syncthreads();
#pragma unroll
        for (int s = 0; s < ROWS_PER_WARP; ++s) {
            int r = rowBegin + warp + s * WARPS;
            if (r < M) {
                const float* a = A + ((long long)b * M + r) * N + j0;
                for (int j = lane; j < len; j += 32) acc[s] += __ldg(&a[j]) * xs[j];
            }
        }
    }
#pragma unroll
    for (int s = 0; s < ROWS_PER_WARP; ++s) {
        int r = rowBegin + warp + s * WARPS;   // warp-uniform, so the shuffles below are safe
        if (r < M) {
            float t = acc[s];
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) t += __shfl_xor_sync(0xffffffffu, t, off);
            if (lane == 0) y[(long long)b * M + r] = t;
        }
    }
}

extern "C" void solve(const float* A, const float* x, float* y, int batch, int M, int N) {
    const int rowsPerBlock = WARPS * ROWS_PER_WARP;
    dim3 grid((M + rowsPerBlock - 1) / rowsPerBlock, batch);
    bmv_shared_x<<<grid, WARPS * 32>>>(A, x, y, M, N);
}
