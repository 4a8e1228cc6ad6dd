// One block per row: threads stride across the row so loads are coalesced, then the partial sums are
// combined with a classic shared-memory tree reduction. Good for long rows, wasteful for short ones
// (most threads idle when N < blockDim).
#define THREADS 128

__global__ void gemv_block_row(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                               int M, int N) {
    __shared__ float partial[THREADS];
    int row = blockIdx.x;
    const float* a = A + (long long)row * N;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < N; j += THREADS) acc += a[j] * x[j];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[row] = partial[0];
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    gemv_block_row<<<M, THREADS>>>(A, x, y, M, N);
}
