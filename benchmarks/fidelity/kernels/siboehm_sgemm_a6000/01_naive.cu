// SGEMM C = alpha*A*B + beta*C, row-major M x K times K x N.
// Strategy of the worklog's kernel 1: one thread per output element, 32x32 thread blocks,
// the row index follows threadIdx.x, so the 32 lanes of a warp walk 32 different rows of A
// (strided loads) and write 32 different rows of C. Written for this benchmark.
__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                            float *C) {
  const unsigned row = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      acc += A[row * K + k] * B[k * N + col];
    }
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
  }
}
