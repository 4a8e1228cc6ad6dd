void reference(const float* x, const float* bias, float* y, float scale, float lo, float hi,
               int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
            float v = scale * x[r * cols + c] + bias[c];
            if (v < lo) v = lo;
            if (v > hi) v = hi;
            y[r * cols + c] = v;
        }
    }
}
