// Padded shared-memory transpose with float4 global accesses, one float4 per thread
// (block TILE/4 x TILE). Written for this benchmark.
template <int TILE>
__global__ void transpose_vec4(const float *__restrict__ in, float *__restrict__ out, int N) {
  __shared__ float tile[TILE][TILE + 1];
  const int W = N / 4;  // row length in float4 units
  int vx = blockIdx.x * (TILE / 4) + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  if (vx < W && y < N) {
    const float4 v = reinterpret_cast<const float4 *>(in)[y * W + vx];
    tile[threadIdx.y][threadIdx.x * 4 + 0] = v.x;
    tile[threadIdx.y][threadIdx.x * 4 + 1] = v.y;
    tile[threadIdx.y][threadIdx.x * 4 + 2] = v.z;
    tile[threadIdx.y][threadIdx.x * 4 + 3] = v.w;
  }
  __syncthreads();
  vx = blockIdx.y * (TILE / 4) + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  if (vx < W && y < N) {
    float4 v;
    v.x = tile[threadIdx.x * 4 + 0][threadIdx.y];
    v.y = tile[threadIdx.x * 4 + 1][threadIdx.y];
    v.z = tile[threadIdx.x * 4 + 2][threadIdx.y];
    v.w = tile[threadIdx.x * 4 + 3][threadIdx.y];
    reinterpret_cast<float4 *>(out)[y * W + vx] = v;
  }
}
