/* Serial reference: out[b] = transpose(in[b]) for each of `batch` row-major rows x cols matrices. */
void reference(const float* in, float* out, int batch, int rows, int cols) {
    for (int b = 0; b < batch; ++b) {
        const float* src = in + (long)b * rows * cols;
        float* dst = out + (long)b * rows * cols;
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c)
                dst[(long)c * rows + r] = src[(long)r * cols + c];
    }
}
