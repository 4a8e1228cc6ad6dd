// A 32 x 8 block covers 32 columns; its 8 row-lanes (threadIdx.y) interleave over the rows so each warp
// reads one 128-byte row segment per step (coalesced). x is staged through shared memory in chunks and
// reused by all 32 columns; the 8 row-lane partial sums are combined in shared memory at the end, so no
// atomics and a deterministic result.
#define COLS 32
#define LANES 8
#define XCHUNK 256

__global__ void gemv_t_tiled(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                             int M, int N) {
    __shared__ float xs[XCHUNK];
    __shared__ float part[LANES][COLS + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int tid = ty * COLS + tx;
    int j = blockIdx.x * COLS + tx;
    float acc = 0.0f;
    for (int i0 = 0; i0 < M; i0 += XCHUNK) {
        int rows = min(XCHUNK, M - i0);
        for (int t = tid; t < rows; t += COLS * LANES) xs[t] = x[i0 + t];
        __syncthreads();
        if (j < N) {
            for (int r = ty; r < rows; r += LANES) acc += A[(long long)(i0 + r) * N + j] * xs[r];
        }
        __syncthreads();
    }
    part[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && j < N) {
        float s = 0.0f;
#pragma unroll
        for (int l = 0; l < LANES; ++l) s += part[l][tx];
        y[j] = s;
    }
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    dim3 block(COLS, LANES);
    dim3 grid((N + COLS - 1) / COLS);
    gemv_t_tiled<<<grid, block>>>(A, x, y, M, N);
}
