// SGEMM with BS x BS tiles of A and B staged through shared memory (worklog kernel 3):
// 1D block of BS*BS threads, each computes one element of C from a BS-long dot product per tile.
// Written for this benchmark.
template <int BS>
__global__ void sgemm_smem_cache(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                 float *C) {
  __shared__ float tileA[BS * BS];
  __shared__ float tileB[BS * BS];
  const int r = threadIdx.x / BS;
  const int c = threadIdx.x % BS;
  const int row0 = blockIdx.x * BS;  // first row of C handled by this block
  const int col0 = blockIdx.y * BS;  // first column
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BS) {
    tileA[r * BS + c] = A[(row0 + r) * K + k0 + c];
    tileB[r * BS + c] = B[(k0 + r) * N + col0 + c];
    __syncthreads();
    for (int kk = 0; kk < BS; ++kk) {
      acc += tileA[r * BS + kk] * tileB[kk * BS + c];
    }
    __syncthreads();
  }
  C[(row0 + r) * N + col0 + c] = alpha * acc + beta * C[(row0 + r) * N + col0 + c];
}
