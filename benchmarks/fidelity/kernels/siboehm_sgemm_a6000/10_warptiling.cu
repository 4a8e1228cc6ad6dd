// SGEMM with warp tiling (worklog kernel 10, A6000 configuration): 128 threads = 4 warps,
// block tile 128 x 128 x 16, each warp owns a WM x WN = 64 x 64 sub-tile which it covers in
// WNITER = 4 column steps of 16; each lane computes TM x TN = 8 x 4 outputs per step (8 x 16 in
// all). float4 global loads (A transposed into shared memory), float4 read-modify-write of C.
// Written for this benchmark.
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int THREADS>
__global__ void __launch_bounds__(THREADS)
    sgemm_warptiling(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C) {
  constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);  // = 1 for this configuration
  constexpr int SUBM = WM / WMITER;
  constexpr int SUBN = WN / WNITER;
  constexpr int A_STEP = THREADS * 4 / BK;
  constexpr int B_STEP = THREADS / (BN / 4);
  __shared__ float As[BK * BM];
  __shared__ float Bs[BK * BN];

  const unsigned row0 = blockIdx.y * BM;
  const unsigned col0 = blockIdx.x * BN;
  const unsigned warp = threadIdx.x / 32;
  const unsigned lane = threadIdx.x % 32;
  const unsigned wRow = warp / (BN / WN);
  const unsigned wCol = warp % (BN / WN);
  const unsigned lRow = lane / (SUBN / TN);
  const unsigned lCol = lane % (SUBN / TN);
  const unsigned aRow = threadIdx.x / (BK / 4), aQuad = threadIdx.x % (BK / 4);
  const unsigned bRow = threadIdx.x / (BN / 4), bQuad = threadIdx.x % (BN / 4);

  float acc[WMITER * TM * WNITER * TN] = {0.0f};
  float ra[WMITER * TM];
  float rb[WNITER * TN];
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
      for (int sm = 0; sm < WMITER; ++sm)
        for (int i = 0; i < TM; ++i) ra[sm * TM + i] = As[kk * BM + wRow * WM + sm * SUBM + lRow * TM + i];
      for (int sn = 0; sn < WNITER; ++sn)
        for (int j = 0; j < TN; ++j) rb[sn * TN + j] = Bs[kk * BN + wCol * WN + sn * SUBN + lCol * TN + j];
      for (int sm = 0; sm < WMITER; ++sm)
        for (int sn = 0; sn < WNITER; ++sn)
          for (int i = 0; i < TM; ++i)
            for (int j = 0; j < TN; ++j)
              acc[(sm * TM + i) * (WNITER * TN) + sn * TN + j] += ra[sm * TM + i] * rb[sn * TN + j];
    }
    __syncthreads();
  }
  for (int sm = 0; sm < WMITER; ++sm) {
    for (int sn = 0; sn < WNITER; ++sn) {
      for (int i = 0; i < TM; ++i) {
        for (int j = 0; j < TN; j += 4) {
          const int idx = (row0 + wRow * WM + sm * SUBM + lRow * TM + i) * N + col0 + wCol * WN + sn * SUBN +
                          lCol * TN + j;
          const int a = (sm * TM + i) * (WNITER * TN) + sn * TN + j;
          float4 v = reinterpret_cast<float4 *>(&C[idx])[0];
          v.x = alpha * acc[a + 0] + beta * v.x;
          v.y = alpha * acc[a + 1] + beta * v.y;
          v.z = alpha * acc[a + 2] + beta * v.z;
          v.w = alpha * acc[a + 3] + beta * v.w;
          reinterpret_cast<float4 *>(&C[idx])[0] = v;
        }
      }
    }
  }
}
