// FP32 GEMM with 2D block tiling (128 x 128, k-slab 16) and a 2D thread tile: 256 threads, each
// computes TY x TX = 8 x 8 outputs as outer products of register copies (post's kernel V05):
// the A tile is stored transposed (k-major) so a thread's 8 A values are contiguous;
// scalar loads and C accesses. Written for this benchmark.
template <size_t BX, size_t BY, size_t BK, size_t NT>
__device__ void stage_tiles_transposed(const float *A, size_t lda, const float *B, size_t ldb, float At[BK][BY],
                                       float Bs[BK][BX], size_t t, size_t lin, size_t m, size_t n, size_t k) {
#pragma unroll
  for (size_t it = 0; it < (BY * BK + NT - 1) / NT; ++it) {
    const size_t slot = lin + it * NT;
    const size_t r = slot / BK, c = slot % BK;
    const size_t gr = blockIdx.y * BY + r, gc = t * BK + c;
    float v = 0.0f;
    if (gr < m && gc < k) v = A[gr * lda + gc];
    At[c][r] = v;  // A tile kept transposed: k-major
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

template <size_t BX, size_t BY, size_t BK, size_t TX, size_t TY>
__global__ void gemm_v05_style(size_t m, size_t n, size_t k, float alpha, const float *A, size_t lda, const float *B,
                   size_t ldb, float beta, float *C, size_t ldc) {
  constexpr size_t NT = BX * BY / (TX * TY);
  const size_t lin = threadIdx.y * blockDim.x + threadIdx.x;
  const size_t arow = lin / (BX / TX) * TY;  // first tile row of this thread's outputs
  const size_t bcol = lin % (BX / TX) * TX;  // first tile column
  __shared__ float At[BK][BY];
  __shared__ float Bs[BK][BX];
  float acc[TY][TX] = {{0.0f}};
  float av[TY];
  float bv[TX];
  for (size_t t = 0; t < (k + BK - 1) / BK; ++t) {
    stage_tiles_transposed<BX, BY, BK, NT>(A, lda, B, ldb, At, Bs, t, lin, m, n, k);
    __syncthreads();
#pragma unroll
    for (size_t kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (size_t r = 0; r < TY; ++r) av[r] = At[kk][arow + r];
#pragma unroll
      for (size_t c = 0; c < TX; ++c) bv[c] = Bs[kk][bcol + c];
      for (size_t r = 0; r < TY; ++r)
        for (size_t c = 0; c < TX; ++c) acc[r][c] += av[r] * bv[c];
    }
    __syncthreads();
  }
#pragma unroll
  for (size_t r = 0; r < TY; ++r) {
#pragma unroll
    for (size_t c = 0; c < TX; ++c) {
      const size_t row = blockIdx.y * BY + arow + r;
      const size_t col = blockIdx.x * BX + bcol + c;
      if (row < m && col < n) C[row * ldc + col] = alpha * acc[r][c] + beta * C[row * ldc + col];
    }
  }
}
