// CSR-vector (Bell & Garland): one warp per row. Lanes stride through the row's entries, so the
// col_idx/values reads are coalesced; partial sums are combined with a shuffle reduction. Rows shorter
// than 32 leave lanes idle, which the adaptive variant addresses.
#define WARPS 8

__global__ void spmv_vector(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                            const float* __restrict__ values, const float* __restrict__ x,
                            float* __restrict__ y, int rows) {
    int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;   // warp-uniform
    int begin = __ldg(&row_ptr[row]), end = __ldg(&row_ptr[row + 1]);
    float acc = 0.0f;
    for (int p = begin + lane; p < end; p += 32) acc += __ldg(&values[p]) * __ldg(&x[__ldg(&col_idx[p])]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) y[row] = acc;
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y,
                      int rows, int cols) {
    (void)cols;
    spmv_vector<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>(row_ptr, col_idx, values, x, y, rows);
}
