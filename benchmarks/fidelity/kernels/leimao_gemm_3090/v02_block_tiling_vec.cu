// FP32 GEMM with 2D block tiling and 128-bit global loads (post's kernel V02 vectorized):
// same 32 x 32 x 32 tiling and 32 x 32 thread block as V02; the tiles are loaded as float4 by
// load slots that cover four times the tile, so 3/4 of the threads fetch data they then discard.
// Written for this benchmark.
// 128-bit loads: every thread takes load slots lin, lin + NT, ... of (rows x 4-float vectors); as in
// the post, a slot is fetched from global memory whenever it lies inside the matrix, but stored
// to shared memory only when it lies inside the tile (slots past the tile are wasted loads).
template <size_t BX, size_t BY, size_t BK, size_t NT>
__device__ void stage_tiles_vec(const float *A, size_t lda, const float *B, size_t ldb, float As[BY][BK],
                                float Bs[BK][BX], size_t t, size_t lin, size_t m, size_t n, size_t k) {
#pragma unroll
  for (size_t it = 0; it < (BY * (BK / 4) + NT - 1) / NT; ++it) {
    const size_t slot = lin + it * NT;
    const size_t r = slot / (BK / 4), c = slot % (BK / 4) * 4;
    const size_t gr = blockIdx.y * BY + r, gc = t * BK + c;
    float4 v = {0.0f, 0.0f, 0.0f, 0.0f};
    if (gr < m && gc < k) v = *reinterpret_cast<const float4 *>(&A[gr * lda + gc]);
    if (gc + 4 > k) {  // zero the lanes past the last column
      if (gc + 1 >= k) v.y = 0.0f;
      if (gc + 2 >= k) v.z = 0.0f;
      if (gc + 3 >= k) v.w = 0.0f;
    }
    if (r < BY && c < BK) *reinterpret_cast<float4 *>(&As[r][c]) = v;
  }
#pragma unroll
  for (size_t it = 0; it < (BK * (BX / 4) + NT - 1) / NT; ++it) {
    const size_t slot = lin + it * NT;
    const size_t r = slot / (BX / 4), c = slot % (BX / 4) * 4;
    const size_t gr = t * BK + r, gc = blockIdx.x * BX + c;
    float4 v = {0.0f, 0.0f, 0.0f, 0.0f};
    if (gr < k && gc < n) v = *reinterpret_cast<const float4 *>(&B[gr * ldb + gc]);
    if (gc + 4 > n) {  // zero the lanes past the last column
      if (gc + 1 >= n) v.y = 0.0f;
      if (gc + 2 >= n) v.z = 0.0f;
      if (gc + 3 >= n) v.w = 0.0f;
    }
    if (r < BK && c < BX) *reinterpret_cast<float4 *>(&Bs[r][c]) = v;
  }
}

template <size_t BX, size_t BY, size_t BK>
__global__ void gemm_v02_vec_style(size_t m, size_t n, size_t k, float alpha, const float *A, size_t lda,
                                   const float *B, size_t ldb, float beta, float *C, size_t ldc) {
  constexpr size_t NT = BX * BY;
  const size_t lin = threadIdx.y * blockDim.x + threadIdx.x;
  const size_t col = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t row = blockIdx.y * blockDim.y + threadIdx.y;
  __shared__ float As[BY][BK];
  __shared__ float Bs[BK][BX];
  float acc = 0.0f;
  for (size_t t = 0; t < (k + BK - 1) / BK; ++t) {
    stage_tiles_vec<BX, BY, BK, NT>(A, lda, B, ldb, As, Bs, t, lin, m, n, k);
    __syncthreads();
#pragma unroll
    for (size_t kk = 0; kk < BK; ++kk) acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) C[row * ldc + col] = alpha * acc + beta * C[row * ldc + col];
}
