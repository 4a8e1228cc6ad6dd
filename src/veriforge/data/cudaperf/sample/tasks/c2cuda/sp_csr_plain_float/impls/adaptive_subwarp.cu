
// Sub-warp CSR: G lanes per row with G (2..32) chosen on the host from the average row length nnz / rows,
// so short rows do not waste a whole warp and long rows still read coalesced. The segmented shuffle
// reduction uses width G, so groups never mix.
template <int G>
__global__ void spmv_subwarp(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows, int cols, int nnz) {
    int g = (blockIdx.x * blockDim.x + threadIdx.x) / G;
    int sub = threadIdx.x & (G - 1);
    bool live = g < rows;            // every lane joins the shuffles
    int r = live ? g : rows - 1;
    float acc = 0;
    if (live)
        for (int q = row_ptr[r] + sub; q < row_ptr[r + 1]; q += G)
            acc += __ldg(&values[q]) * __ldg(&x[__ldg(&col_idx[q])]);
#pragma unroll
    for (int off = G / 2; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off, G);
    if (live && sub == 0) {
        y[r] = (float)(acc);
    }
}

template <int G>
static void launch(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows, int cols, int nnz) {
    long long threads = (long long)rows * G;
    spmv_subwarp<G><<<(unsigned)((threads + 255) / 256), 256>>>(row_ptr, col_idx, values, x, y, rows, cols, nnz);
}

extern "C" void solve(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows, int cols, int nnz) {
    if (rows <= 0) return;
    int avg = nnz / rows;
    if (avg <= 2) launch<2>(row_ptr, col_idx, values, x, y, rows, cols, nnz);
    else if (avg <= 4) launch<4>(row_ptr, col_idx, values, x, y, rows, cols, nnz);
    else if (avg <= 8) launch<8>(row_ptr, col_idx, values, x, y, rows, cols, nnz);
    else if (avg <= 16) launch<16>(row_ptr, col_idx, values, x, y, rows, cols, nnz);
    else launch<32>(row_ptr, col_idx, values, x, y, rows, cols, nnz);
}
