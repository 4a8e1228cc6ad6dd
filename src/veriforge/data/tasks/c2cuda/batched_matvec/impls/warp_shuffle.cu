// One warp per output row of the flattened batch: lanes stride along the row (coalesced) and reduce
// with __shfl_xor_sync. x[b] is re-read by each of the M warps of batch b (served by L1/L2).
__global__ void bmv_warp(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                         int batch, int M, int N) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (warp >= batch * M) return;   // warp-uniform exit
    int b = warp / M;
    const float* a = A + (long long)warp * N;
    const float* v = x + (long long)b * N;
    float acc = 0.0f;
    for (int j = lane; j < N; j += 32) acc += __ldg(&a[j]) * __ldg(&v[j]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) y[warp] = acc;
}

extern "C" void solve(const float* A, const float* x, float* y, int batch, int M, int N) {
    long long threads = (long long)batch * M * 32;
    int block = 256;
    bmv_warp<<<(int)((threads + block - 1) / block), block>>>(A, x, y, batch, M, N);
}
