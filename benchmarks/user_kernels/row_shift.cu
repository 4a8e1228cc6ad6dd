// The first half of a softmax: subtract the row maximum and exponentiate; one thread per row.
__global__ void row_shift(const float* A, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = A[r * cols];
    for (int c = 1; c < cols; ++c) m = fmaxf(m, A[r * cols + c]);
    for (int c = 0; c < cols; ++c) out[r * cols + c] = expf(A[r * cols + c] - m);
}
