/* Serial reference: CSR sparse matrix times dense vector, accumulated in double. */
void reference(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y,
               int rows, int cols) {
    (void)cols;
    for (int r = 0; r < rows; ++r) {
        double acc = 0.0;
        for (int p = row_ptr[r]; p < row_ptr[r + 1]; ++p) acc += (double)values[p] * x[col_idx[p]];
        y[r] = (float)acc;
    }
}
