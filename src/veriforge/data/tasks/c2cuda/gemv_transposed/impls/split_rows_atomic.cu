// Split-K style: blockIdx.y selects a chunk of ROWS_PER_CHUNK rows, so there is parallelism even when N
// is small. Each thread sums its column over the chunk and atomically adds the partial into y, which is
// cleared first with cudaMemset (same stream, so ordered before the kernel).
#define ROWS_PER_CHUNK 64

__global__ void gemv_t_split(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                             int M, int N) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i0 = blockIdx.y * ROWS_PER_CHUNK;
    int i1 = min(i0 + ROWS_PER_CHUNK, M);
    if (j >= N) return;
    float acc = 0.0f;
    for (int i = i0; i < i1; ++i) acc += A[(long long)i * N + j] * __ldg(&x[i]);
    atomicAdd(&y[j], acc);
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int N) {
    cudaMemset(y, 0, (size_t)N * sizeof(float));
    dim3 block(128);
    dim3 grid((N + block.x - 1) / block.x, (M + ROWS_PER_CHUNK - 1) / ROWS_PER_CHUNK);
    gemv_t_split<<<grid, block>>>(A, x, y, M, N);
}
