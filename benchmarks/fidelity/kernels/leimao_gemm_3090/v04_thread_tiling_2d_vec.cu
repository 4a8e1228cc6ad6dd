// FP32 GEMM with 2D block tiling (128 x 128, k-slab 16) and a 2D thread tile: 256 threads, each
// computes TY x TX = 8 x 8 outputs as outer products of register copies (post's kernel V04 vectorized):
// scalar tile loads as V04, but the thread's 8 B values are read from shared memory as two
// float4 and C is read-modify-written as float4. Written for this benchmark.
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

template <size_t BX, size_t BY, size_t BK, size_t TX, size_t TY>
__global__ void gemm_v04_vec_style(size_t m, size_t n, size_t k, float alpha, const float *A, size_t lda, const float *B,
                   size_t ldb, float beta, float *C, size_t ldc) {
  constexpr size_t NT = BX * BY / (TX * TY);
  const size_t lin = threadIdx.y * blockDim.x + threadIdx.x;
  const size_t arow = lin / (BX / TX) * TY;  // first tile row of this thread's outputs
  const size_t bcol = lin % (BX / TX) * TX;  // first tile column
  __shared__ float As[BY][BK];
  __shared__ float Bs[BK][BX];
  float acc[TY][TX] = {{0.0f}};
  float av[TY];
  float bv[TX];
  for (size_t t = 0; t < (k + BK - 1) / BK; ++t) {
    stage_tiles<BX, BY, BK, NT>(A, lda, B, ldb, As, Bs, t, lin, m, n, k);
    __syncthreads();
#pragma unroll
    for (size_t kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (size_t r = 0; r < TY; ++r) av[r] = As[arow + r][kk];
#pragma unroll
      for (size_t q = 0; q < TX / 4; ++q) {
        const float4 w = *reinterpret_cast<const float4 *>(&Bs[kk][bcol + q * 4]);
        bv[q * 4 + 0] = w.x;
        bv[q * 4 + 1] = w.y;
        bv[q * 4 + 2] = w.z;
        bv[q * 4 + 3] = w.w;
      }
      for (size_t r = 0; r < TY; ++r)
        for (size_t c = 0; c < TX; ++c) acc[r][c] += av[r] * bv[c];
    }
    __syncthreads();
  }
#pragma unroll
  for (size_t r = 0; r < TY; ++r) {
#pragma unroll
    for (size_t q = 0; q < TX / 4; ++q) {
      const size_t row = blockIdx.y * BY + arow + r;
      const size_t col = blockIdx.x * BX + bcol + q * 4;
      float4 cv = *reinterpret_cast<const float4 *>(&C[row * ldc + col]);
      cv.x = alpha * acc[r][q * 4 + 0] + beta * cv.x;
      cv.y = alpha * acc[r][q * 4 + 1] + beta * cv.y;
      cv.z = alpha * acc[r][q * 4 + 2] + beta * cv.z;
      cv.w = alpha * acc[r][q * 4 + 3] + beta * cv.w;
      if (row < m && col < n) *reinterpret_cast<float4 *>(&C[row * ldc + col]) = cv;
    }
  }
}
