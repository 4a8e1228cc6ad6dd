/* Serial reference: C = alpha*A + beta*B over a dense row-major rows x cols matrix. */
void reference(const float* A, const float* B, float* C, int rows, int cols, float alpha, float beta) {
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
            long i = (long)r * cols + c;
            C[i] = alpha * A[i] + beta * B[i];
        }
    }
}
