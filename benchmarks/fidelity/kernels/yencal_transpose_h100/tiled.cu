// Transpose through a TILE x TILE shared-memory tile, one element per thread (block TILE x TILE):
// coalesced read of a tile row, coalesced write of the transposed tile. PAD = 0 leaves the tile
// unpadded, so the column-wise read of shared memory is a 32-way bank conflict; PAD = 1 pads each
// tile row by one word and removes it. Written for this benchmark.
template <int TILE, int PAD>
__global__ void transpose_tiled(const float *__restrict__ in, float *__restrict__ out, int N) {
  __shared__ float tile[TILE][TILE + PAD];
  int col = blockIdx.x * TILE + threadIdx.x;
  int row = blockIdx.y * TILE + threadIdx.y;
  if (col < N && row < N) {
    tile[threadIdx.y][threadIdx.x] = in[row * N + col];
  }
  __syncthreads();
  col = blockIdx.y * TILE + threadIdx.x;  // the block's tile lands at the mirrored position
  row = blockIdx.x * TILE + threadIdx.y;
  if (col < N && row < N) {
    out[row * N + col] = tile[threadIdx.x][threadIdx.y];
  }
}
