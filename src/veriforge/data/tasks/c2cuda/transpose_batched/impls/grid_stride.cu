// Grid-stride loop over OUTPUT elements: consecutive threads write consecutive addresses; the matching
// loads are strided and go through the read-only data cache. The grid is capped so each thread does
// several elements, amortising the index arithmetic and launch cost.
__global__ void transpose_batched_gs(const float* __restrict__ in, float* __restrict__ out,
                                     int batch, int rows, int cols) {
    long long total = (long long)batch * rows * cols;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += stride) {
        int r = (int)(o % rows);          // out is (b, c, r)
        long long bc = o / rows;
        int c = (int)(bc % cols);
        long long b = bc / cols;
        out[o] = __ldg(&in[(b * rows + r) * cols + c]);
    }
}

extern "C" void solve(const float* in, float* out, int batch, int rows, int cols) {
    long long total = (long long)batch * rows * cols;
    int threads = 256;
    long long want = (total + threads - 1) / threads;
    int blocks = (int)(want < 1024 ? want : 1024);
    if (blocks < 1) blocks = 1;
    transpose_batched_gs<<<blocks, threads>>>(in, out, batch, rows, cols);
}
