// Padded shared-memory transpose with float2 global accesses, one float2 per thread
// (block TILE/2 x TILE): each thread reads two adjacent elements of a row and writes two adjacent
// elements of an output row, gathering them from two rows of the tile. Written for this benchmark.
template <int TILE>
__global__ void transpose_vec2(const float *__restrict__ in, float *__restrict__ out, int N) {
  __shared__ float tile[TILE][TILE + 1];
  const int W = N / 2;  // row length in float2 units
  int vx = blockIdx.x * (TILE / 2) + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  if (vx < W && y < N) {
    const float2 v = reinterpret_cast<const float2 *>(in)[y * W + vx];
    tile[threadIdx.y][threadIdx.x * 2 + 0] = v.x;
    tile[threadIdx.y][threadIdx.x * 2 + 1] = v.y;
  }
  __syncthreads();
  vx = blockIdx.y * (TILE / 2) + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  if (vx < W && y < N) {
    float2 v;
    v.x = tile[threadIdx.x * 2 + 0][threadIdx.y];
    v.y = tile[threadIdx.x * 2 + 1][threadIdx.y];
    reinterpret_cast<float2 *>(out)[y * W + vx] = v;
  }
}
