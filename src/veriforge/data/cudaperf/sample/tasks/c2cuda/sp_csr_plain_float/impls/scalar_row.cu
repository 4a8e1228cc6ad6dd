
// CSR-scalar: one thread per row. Lanes start at unrelated offsets of col_idx/values (no coalescing)
// and a warp runs as long as its longest row, which power-law rows make very uneven.
__global__ void spmv_scalar(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows, int cols, int nnz) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0;
    for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) acc += values[q] * x[col_idx[q]];
    y[r] = (float)(acc);
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows, int cols, int nnz) {
    if (rows <= 0) return;
    spmv_scalar<<<(rows + 127) / 128, 128>>>(row_ptr, col_idx, values, x, y, rows, cols, nnz);
}
