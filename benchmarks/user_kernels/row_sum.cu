// Row sums of a row-major matrix: one thread per row.
__global__ void row_sum(const float* A, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.0f;
        for (int c = 0; c < cols; ++c) s += A[r * cols + c];
        out[r] = s;
    }
}
