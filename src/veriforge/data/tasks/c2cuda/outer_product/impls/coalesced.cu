// Column index on threadIdx.x: every warp stores 32 consecutive floats of one row (one 128-byte line).
__global__ void outer_coalesced(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ C,
                                int M, int N) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < M && j < N) C[(long long)i * N + j] = __ldg(&x[i]) * __ldg(&y[j]);
}

extern "C" void solve(const float* x, const float* y, float* C, int M, int N) {
    dim3 block(64, 4);
    dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y);
    outer_coalesced<<<grid, block>>>(x, y, C, M, N);
}
