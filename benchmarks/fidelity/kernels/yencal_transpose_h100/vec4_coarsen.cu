// Padded shared-memory transpose with float4 global accesses and thread coarsening:
// block TILE/4 x ROWS, each thread moves TILE / ROWS float4 per phase, no bounds checks.
// Written for this benchmark.
template <int TILE, int ROWS>
__global__ void transpose_vec4_coarsen(const float *__restrict__ in, float *__restrict__ out, int N) {
  __shared__ float tile[TILE][TILE + 1];
  const int W = N / 4;
  const int vx = blockIdx.x * (TILE / 4) + threadIdx.x;
  const int y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS) {
    const float4 v = reinterpret_cast<const float4 *>(in)[(y + j) * W + vx];
    tile[threadIdx.y + j][threadIdx.x * 4 + 0] = v.x;
    tile[threadIdx.y + j][threadIdx.x * 4 + 1] = v.y;
    tile[threadIdx.y + j][threadIdx.x * 4 + 2] = v.z;
    tile[threadIdx.y + j][threadIdx.x * 4 + 3] = v.w;
  }
  __syncthreads();
  const int ovx = blockIdx.y * (TILE / 4) + threadIdx.x;
  const int oy = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS) {
    float4 v;
    v.x = tile[threadIdx.x * 4 + 0][threadIdx.y + j];
    v.y = tile[threadIdx.x * 4 + 1][threadIdx.y + j];
    v.z = tile[threadIdx.x * 4 + 2][threadIdx.y + j];
    v.w = tile[threadIdx.x * 4 + 3][threadIdx.y + j];
    reinterpret_cast<float4 *>(out)[(oy + j) * W + ovx] = v;
  }
}
