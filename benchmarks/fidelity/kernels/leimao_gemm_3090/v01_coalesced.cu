// FP32 GEMM, one thread per output, 32 x 32 blocks, output column from threadIdx.x (coalesced
// B and C accesses, broadcast A). Post's kernel V01. Written for this benchmark.
__global__ void gemm_v01_style(size_t m, size_t n, size_t k, float alpha, const float *A, size_t lda,
                               const float *B, size_t ldb, float beta, float *C, size_t ldc) {
  const size_t col = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < m && col < n) {
    float acc = 0.0f;
    for (size_t kk = 0; kk < k; ++kk) acc += A[row * lda + kk] * B[kk * ldb + col];
    C[row * ldc + col] = alpha * acc + beta * C[row * ldc + col];
  }
}
