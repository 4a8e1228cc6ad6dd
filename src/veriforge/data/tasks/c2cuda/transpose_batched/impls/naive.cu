// One thread per input element: decode (b, r, c) from the flat index, write to the transposed slot.
// Loads coalesce, stores jump `rows` floats between neighbouring threads.
__global__ void transpose_batched_naive(const float* in, float* out, int batch, int rows, int cols) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = (long long)batch * rows * cols;
    if (i < total) {
        int c = (int)(i % cols);
        long long br = i / cols;
        int r = (int)(br % rows);
        long long b = br / rows;
        out[(b * cols + c) * rows + r] = in[i];
    }
}

extern "C" void solve(const float* in, float* out, int batch, int rows, int cols) {
    long long total = (long long)batch * rows * cols;
    int threads = 256;
    int blocks = (int)((total + threads - 1) / threads);
    transpose_batched_naive<<<blocks, threads>>>(in, out, batch, rows, cols);
}
