// Classic tiled transpose: a 32x32 tile is read with coalesced loads into shared memory and written back
// transposed with coalesced stores. The extra column of padding puts tile[k][x] and tile[k+1][x] in
// different banks, so the column-wise reads are conflict-free. 32x8 threads each move 4 elements.
#define TILE 32
#define ROWS_PER_PASS 8

__global__ void transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];

    int c = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += ROWS_PER_PASS) {
        int r = r0 + k;
        if (r < rows && c < cols) {
            tile[threadIdx.y + k][threadIdx.x] = in[r * cols + c];
        }
    }
    __syncthreads();

    // Swap the block coordinates: this block now writes rows [blockIdx.x*TILE, +TILE) of out.
    int oc = blockIdx.y * TILE + threadIdx.x;        // column of out (row index of in)
    int orow0 = blockIdx.x * TILE + threadIdx.y;     // row of out (column index of in)
    for (int k = 0; k < TILE; k += ROWS_PER_PASS) {
        int orow = orow0 + k;
        if (orow < cols && oc < rows) {
            out[orow * rows + oc] = tile[threadIdx.x][threadIdx.y + k];
        }
    }
}

extern "C" void solve(const float* in, float* out, int rows, int cols) {
    dim3 block(TILE, ROWS_PER_PASS);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_tiled<<<grid, block>>>(in, out, rows, cols);
}
