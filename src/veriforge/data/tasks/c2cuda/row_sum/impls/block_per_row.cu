// One block per row: the threads stride across the row together (coalesced), each keeps a private
// partial sum, and the block combines the partials with a shared-memory tree reduction. Good for long
// rows; for short rows most of the 128 threads have nothing to do.
#define THREADS 128

__global__ void row_sum_block(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float partial[THREADS];
    const float* row = x + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) s += row[c];
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[blockIdx.x] = partial[0];
}

extern "C" void solve(const float* x, float* y, int rows, int cols) {
    row_sum_block<<<rows, THREADS>>>(x, y, cols);
}
