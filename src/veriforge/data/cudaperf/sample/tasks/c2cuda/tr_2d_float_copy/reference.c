/* Serial reference: out = permute(in, axes (1, 0)) with epilogue 'copy'. */
void reference(const float* in, float* out, int rows, int cols) {
    for (int c1 = 0; c1 < cols; ++c1)
        for (int c0 = 0; c0 < rows; ++c0)
            out[(c1 * rows + c0)] = (float)(in[(c0 * cols + c1)]);
}
