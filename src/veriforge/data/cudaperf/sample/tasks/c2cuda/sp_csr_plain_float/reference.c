/* Serial reference (csr, epilogue plain). */
void reference(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows, int cols, int nnz) {
    for (int r = 0; r < rows; ++r) {
        double t = 0;
        for (int q = row_ptr[r]; q < row_ptr[r + 1]; ++q) t += (double)values[q] * x[col_idx[q]];
        y[r] = (float)(t);
    }
}
