// Padded shared-memory transpose with float2 global accesses and thread coarsening:
// block TILE/2 x ROWS, each thread moves TILE / ROWS float2 per phase, no bounds checks.
// Written for this benchmark.
template <int TILE, int ROWS>
__global__ void transpose_vec2_coarsen(const float *__restrict__ in, float *__restrict__ out, int N) {
  __shared__ float tile[TILE][TILE + 1];
  const int W = N / 2;
  const int vx = blockIdx.x * (TILE / 2) + threadIdx.x;
  const int y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS) {
    const float2 v = reinterpret_cast<const float2 *>(in)[(y + j) * W + vx];
    tile[threadIdx.y + j][threadIdx.x * 2 + 0] = v.x;
    tile[threadIdx.y + j][threadIdx.x * 2 + 1] = v.y;
  }
  __syncthreads();
  const int ovx = blockIdx.y * (TILE / 2) + threadIdx.x;
  const int oy = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS) {
    float2 v;
    v.x = tile[threadIdx.x * 2 + 0][threadIdx.y + j];
    v.y = tile[threadIdx.x * 2 + 1][threadIdx.y + j];
    reinterpret_cast<float2 *>(out)[(oy + j) * W + ovx] = v;
  }
}
