// SGEMM, one thread per output element with a 1D block of BS*BS threads (worklog kernel 2):
// consecutive threads of a warp take consecutive columns of one row of C, so the B loads and
// the C accesses are coalesced and the A load is a broadcast. Written for this benchmark.
template <int BS>
__global__ void sgemm_coalesced(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                float *C) {
  const int row = blockIdx.x * BS + threadIdx.x / BS;
  const int col = blockIdx.y * BS + threadIdx.x % BS;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      acc += A[row * K + k] * B[k * N + col];
    }
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
  }
}
