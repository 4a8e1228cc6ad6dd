// SGEMM, the worklog's autotuned configuration for the A6000 (kernel 9): 256 threads,
// block tile BM x BN x BK = 128 x 128 x 16, 8 x 8 outputs per thread, float4 global loads (A
// stored transposed into shared memory, B copied as float4 over several row passes), float4
// read-modify-write of C. With this tile the per-warp sub-tiling of the original degenerates to a
// single 128 x 128 warp-group tile. Written for this benchmark.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__(256)
    sgemm_autotuned(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C) {
  constexpr int THREADS = 256;
  constexpr int A_STEP = THREADS * 4 / BK;      // rows of the A tile loaded per pass
  constexpr int B_STEP = THREADS / (BN / 4);    // rows of the B tile loaded per pass
  __shared__ float As[BK * BM];
  __shared__ float Bs[BK * BN];
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;
  const int tr = threadIdx.x / (BN / TN);
  const int tc = threadIdx.x % (BN / TN);
  const int aRow = threadIdx.x / (BK / 4), aQuad = threadIdx.x % (BK / 4);
  const int bRow = threadIdx.x / (BN / 4), bQuad = threadIdx.x % (BN / 4);

  float acc[TM * TN] = {0.0f};
  float ra[TM];
  float rb[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int p = 0; p + A_STEP <= BM; p += A_STEP) {
      const float4 va = reinterpret_cast<const float4 *>(&A[(row0 + aRow + p) * K + k0 + aQuad * 4])[0];
      As[(aQuad * 4 + 0) * BM + aRow + p] = va.x;
      As[(aQuad * 4 + 1) * BM + aRow + p] = va.y;
      As[(aQuad * 4 + 2) * BM + aRow + p] = va.z;
      As[(aQuad * 4 + 3) * BM + aRow + p] = va.w;
    }
    for (int p = 0; p + B_STEP <= BK; p += B_STEP) {
      reinterpret_cast<float4 *>(&Bs[(bRow + p) * BN + bQuad * 4])[0] =
          reinterpret_cast<const float4 *>(&B[(k0 + bRow + p) * N + col0 + bQuad * 4])[0];
    }
    __syncthreads();
    for (int kk = 0; kk < BK; ++kk) {
      for (int i = 0; i < TM; ++i) ra[i] = As[kk * BM + tr * TM + i];
      for (int j = 0; j < TN; ++j) rb[j] = Bs[kk * BN + tc * TN + j];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i * TN + j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < TM; ++i) {
    for (int j = 0; j < TN; j += 4) {
      const int idx = (row0 + tr * TM + i) * N + col0 + tc * TN + j;
      float4 v = reinterpret_cast<float4 *>(&C[idx])[0];
      v.x = alpha * acc[i * TN + j + 0] + beta * v.x;
      v.y = alpha * acc[i * TN + j + 1] + beta * v.y;
      v.z = alpha * acc[i * TN + j + 2] + beta * v.z;
      v.w = alpha * acc[i * TN + j + 3] + beta * v.w;
      reinterpret_cast<float4 *>(&C[idx])[0] = v;
    }
  }
}
