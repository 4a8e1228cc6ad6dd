// Column sums of a row-major matrix: one thread per column walks down the rows.
__global__ void col_sum(const float* A, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (int r = 0; r < rows; ++r) s += A[r * cols + c];
        out[c] = s;
    }
}
