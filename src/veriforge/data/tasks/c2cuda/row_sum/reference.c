/* Serial reference: y[r] = sum of row r of a dense row-major rows x cols matrix, accumulated in double. */
void reference(const float* x, float* y, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        const float* row = x + (long)r * cols;
        double s = 0.0;
        for (int c = 0; c < cols; ++c) s += row[c];
        y[r] = (float)s;
    }
}
