
// CSR-vector: one warp per row; lanes stride over the row's entries (coalesced) and a shuffle reduction
// combines them. Rows shorter than 32 leave lanes idle.
#define WARPS 4

__global__ void spmv_vector(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows, int cols, int nnz) {
    int r = blockIdx.x * WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= rows) return;   // warp-uniform
    float acc = 0;
    for (int q = row_ptr[r] + lane; q < row_ptr[r + 1]; q += 32)
        acc += __ldg(&values[q]) * __ldg(&x[__ldg(&col_idx[q])]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) {
        y[r] = (float)(acc);
    }
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows, int cols, int nnz) {
    if (rows <= 0) return;
    spmv_vector<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>(row_ptr, col_idx, values, x, y, rows, cols, nnz);
}
