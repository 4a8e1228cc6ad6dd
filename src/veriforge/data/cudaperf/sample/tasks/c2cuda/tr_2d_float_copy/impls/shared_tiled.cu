// 32x32 tiles over the (input-innermost, output-innermost) axis pair: the tile is read with
// coalesced loads along axis 1 and written with coalesced stores along axis 0; the padding column
// keeps the transposed shared-memory reads free of bank conflicts. blockIdx.z enumerates the other axes.
#define TILE 32
#define ROWS 8

__global__ void permute_tiled(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    
    int a0 = blockIdx.x * TILE, b0 = blockIdx.y * TILE;
    for (int k = 0; k < TILE; k += ROWS) {
        int c1 = a0 + threadIdx.x, c0 = b0 + threadIdx.y + k;
        if (c1 < cols && c0 < rows) tile[threadIdx.y + k][threadIdx.x] = in[((long long)c0 * cols + c1)];
    }
    __syncthreads();
    for (int k = 0; k < TILE; k += ROWS) {
        int c0 = b0 + threadIdx.x, c1 = a0 + threadIdx.y + k;
        if (c1 < cols && c0 < rows) {
            float v = tile[threadIdx.x][threadIdx.y + k];
            out[((long long)c1 * rows + c0)] = (float)(v);
        }
    }
}

extern "C" void solve(const float* in, float* out, int rows, int cols) {
    if (rows * cols <= 0) return;
    dim3 block(TILE, ROWS);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE, 1);
    permute_tiled<<<grid, block>>>(in, out, rows, cols);
}
