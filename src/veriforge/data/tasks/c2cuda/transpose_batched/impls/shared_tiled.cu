// Tiled transpose per matrix: blockIdx.z selects the matrix, (blockIdx.x, blockIdx.y) the 32x32 tile.
// Loads and stores are both coalesced; the +1 padding column avoids shared-memory bank conflicts.
#define TILE 32
#define PASS 8

__global__ void transpose_batched_tiled(const float* __restrict__ in, float* __restrict__ out,
                                        int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    const float* src = in + (long long)blockIdx.z * rows * cols;
    float* dst = out + (long long)blockIdx.z * rows * cols;

    int c = blockIdx.x * TILE + threadIdx.x;
    for (int k = threadIdx.y; k < TILE; k += PASS) {
        int r = blockIdx.y * TILE + k;
        if (r < rows && c < cols) tile[k][threadIdx.x] = src[r * cols + c];
    }
    __syncthreads();

    int r = blockIdx.y * TILE + threadIdx.x;
    for (int k = threadIdx.y; k < TILE; k += PASS) {
        int oc = blockIdx.x * TILE + k;   // row of the transposed matrix
        if (oc < cols && r < rows) dst[oc * rows + r] = tile[threadIdx.x][k];
    }
}

extern "C" void solve(const float* in, float* out, int batch, int rows, int cols) {
    dim3 block(TILE, PASS);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE, batch);
    transpose_batched_tiled<<<grid, block>>>(in, out, rows, cols);
}
