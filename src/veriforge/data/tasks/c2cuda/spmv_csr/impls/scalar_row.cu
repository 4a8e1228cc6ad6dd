// CSR-scalar: one thread per row. The lanes of a warp start at unrelated offsets of values/col_idx
// (no coalescing), and a warp runs as long as its longest row.
__global__ void spmv_scalar(const int* row_ptr, const int* col_idx, const float* values, const float* x,
                            float* y, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int p = row_ptr[r]; p < row_ptr[r + 1]; ++p) acc += values[p] * x[col_idx[p]];
        y[r] = acc;
    }
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y,
                      int rows, int cols) {
    (void)cols;
    spmv_scalar<<<(rows + 127) / 128, 128>>>(row_ptr, col_idx, values, x, y, rows);
}
