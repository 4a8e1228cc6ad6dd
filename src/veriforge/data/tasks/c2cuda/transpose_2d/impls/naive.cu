// Naive transpose: thread (x, y) copies in[y][x] to out[x][y]. Neighbouring threads read neighbouring
// addresses but write addresses `rows` floats apart, so every store is its own memory transaction.
__global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        out[c * rows + r] = in[r * cols + c];
    }
}

extern "C" void solve(const float* in, float* out, int rows, int cols) {
    dim3 block(16, 16);
    dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    transpose_naive<<<grid, block>>>(in, out, rows, cols);
}
