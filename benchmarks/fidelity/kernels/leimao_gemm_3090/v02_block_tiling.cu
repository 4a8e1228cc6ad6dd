// FP32 GEMM with 2D block tiling (post's kernel V02): 32 x 32 thread block computes a 32 x 32
// tile of C, staging 32 x 32 tiles of A and B in shared memory (k-slab 32), one output per
// thread; bounds-checked scalar loads (zero fill). Written for this benchmark.
template <size_t BX, size_t BY, size_t BK, size_t NT>
__device__ void stage_tiles(const float *A, size_t lda, const float *B, size_t ldb, float As[BY][BK],
                            float Bs[BK][BX], size_t t, size_t lin, size_t m, size_t n, size_t k) {
#pragma unroll
  for (size_t it = 0; it < (BY * BK + NT - 1) / NT; ++it) {
    const size_t slot = lin + it * NT;
    const size_t r = slot / BK, c = slot % BK;
    const size_t gr = blockIdx.y * BY + r, gc = t * BK + c;
    float v = 0.0f;
    if (gr < m && gc < k) v = A[gr * lda + gc];
    As[r][c] = v;
  }
#pragma unroll
  for (size_t it = 0; it < (BK * BX + NT - 1) / NT; ++it) {
    const size_t slot = lin + it * NT;
    const size_t r = slot / BX, c = slot % BX;
    const size_t gr = t * BK + r, gc = blockIdx.x * BX + c;
    float v = 0.0f;
    if (gr < k && gc < n) v = B[gr * ldb + gc];
    Bs[r][c] = v;
  }
}

template <size_t BX, size_t BY, size_t BK>
__global__ void gemm_v02_style(size_t m, size_t n, size_t k, float alpha, const float *A, size_t lda,
                               const float *B, size_t ldb, float beta, float *C, size_t ldc) {
  constexpr size_t NT = BX * BY;
  const size_t lin = threadIdx.y * blockDim.x + threadIdx.x;
  const size_t col = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t row = blockIdx.y * blockDim.y + threadIdx.y;
  __shared__ float As[BY][BK];
  __shared__ float Bs[BK][BX];
  float acc = 0.0f;
  for (size_t t = 0; t < (k + BK - 1) / BK; ++t) {
    stage_tiles<BX, BY, BK, NT>(A, lda, B, ldb, As, Bs, t, lin, m, n, k);
    __syncthreads();
#pragma unroll
    for (size_t kk = 0; kk < BK; ++kk) acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) C[row * ldc + col] = alpha * acc + beta * C[row * ldc + col];
}
