// SGEMM, 2D block tiling with a 2D register tile per thread (worklog kernel 5):
// block tile BM x BN = 128 x 128, k-slab BK = 8, every thread computes TM x TN = 8 x 8 outputs,
// (BM*BN)/(TM*TN) = 256 threads. Scalar global loads into shared memory (several per thread),
// outer-product accumulation from register copies of a column of As and a row of Bs.
// Written for this benchmark.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN), 1)
    sgemm_blocktile_2d(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C) {
  constexpr int THREADS = (BM * BN) / (TM * TN);
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];

  const int tileRow = blockIdx.y * BM;  // first row of C of this block
  const int tileCol = blockIdx.x * BN;  // first column of C of this block
  const int tr = threadIdx.x / (BN / TN);  // thread's row of TM-tall sub-tiles
  const int tc = threadIdx.x % (BN / TN);  // thread's column of TN-wide sub-tiles

  // cooperative loading coordinates
  const int aRow = threadIdx.x / BK, aCol = threadIdx.x % BK;
  const int aStep = THREADS / BK;
  const int bRow = threadIdx.x / BN, bCol = threadIdx.x % BN;
  const int bStep = THREADS / BN;

  float acc[TM * TN] = {0.0f};
  float ra[TM];
  float rb[TN];

  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int r = 0; r < BM; r += aStep) {
      As[(aRow + r) * BK + aCol] = A[(tileRow + aRow + r) * K + k0 + aCol];
    }
    for (int r = 0; r < BK; r += bStep) {
      Bs[(bRow + r) * BN + bCol] = B[(k0 + bRow + r) * N + tileCol + bCol];
    }
    __syncthreads();
    for (int kk = 0; kk < BK; ++kk) {
      for (int i = 0; i < TM; ++i) ra[i] = As[(tr * TM + i) * BK + kk];
      for (int j = 0; j < TN; ++j) rb[j] = Bs[kk * BN + tc * TN + j];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i * TN + j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < TM; ++i) {
    for (int j = 0; j < TN; ++j) {
      const int idx = (tileRow + tr * TM + i) * N + tileCol + tc * TN + j;
      C[idx] = alpha * acc[i * TN + j] + beta * C[idx];
    }
  }
}
