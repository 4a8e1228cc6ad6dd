// Out-of-place transpose of an N x N float matrix, one element per thread, 32 x 32 blocks:
// the read of `in` is coalesced, the write of `out` has a stride of N elements between lanes.
// Written for this benchmark.
__global__ void transpose_naive(const float *__restrict__ in, float *__restrict__ out, int N) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (col < N && row < N) {
    out[col * N + row] = in[row * N + col];
  }
}
