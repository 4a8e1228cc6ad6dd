// Padded shared-memory transpose with thread coarsening: a TILE x ROWS block moves a TILE x TILE
// tile, every thread handling TILE / ROWS rows (loop over j in steps of ROWS), no bounds checks
// (N is a multiple of TILE). Written for this benchmark.
template <int TILE, int ROWS>
__global__ void transpose_coarsen(const float *__restrict__ in, float *__restrict__ out, int N) {
  __shared__ float tile[TILE][TILE + 1];
  const int col = blockIdx.x * TILE + threadIdx.x;
  const int row = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS) {
    tile[threadIdx.y + j][threadIdx.x] = in[(row + j) * N + col];
  }
  __syncthreads();
  const int ocol = blockIdx.y * TILE + threadIdx.x;
  const int orow = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS) {
    out[(orow + j) * N + ocol] = tile[threadIdx.x][threadIdx.y + j];
  }
}
