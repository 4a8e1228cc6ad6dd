#define TILE 32

// Naive transpose: reads are coalesced, writes stride by `height` floats.
__global__ void transpose_naive(const float* in, float* out, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        out[x * height + y] = in[y * width + x];
    }
}

// Shared-memory transpose; PAD = 0 gives the [32][32] tile (column reads conflict 32-way),
// PAD = 1 the padded [32][33] tile.
template <int PAD>
__global__ void transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int width, int height) {
    __shared__ float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    out[y * height + x] = tile[threadIdx.x][threadIdx.y];
}
