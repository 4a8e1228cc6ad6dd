// SGEMM as kernel 6 (128 x 128 x 8 block tile, 8 x 8 outputs per thread, float4 global accesses)
// with the rows of the B tile padded by PAD = 5 words in shared memory (worklog kernel 8,
// "offset"); the B tile is written element by element because padded rows break 16-byte alignment.
// Written for this benchmark.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void sgemm_padded_bs(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C) {
  __shared__ float As[BK * BM];  // transposed: As[k * BM + m]
  constexpr int PAD = 5;
  __shared__ float Bs[BK * (BN + PAD)];
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
    const float4 va = reinterpret_cast<const float4 *>(&A[(row0 + aRow) * K + k0 + aQuad * 4])[0];
    As[(aQuad * 4 + 0) * BM + aRow] = va.x;
    As[(aQuad * 4 + 1) * BM + aRow] = va.y;
    As[(aQuad * 4 + 2) * BM + aRow] = va.z;
    As[(aQuad * 4 + 3) * BM + aRow] = va.w;
    const float4 vb = reinterpret_cast<const float4 *>(&B[(k0 + bRow) * N + col0 + bQuad * 4])[0];
    Bs[bRow * (BN + PAD) + bQuad * 4 + 0] = vb.x;
    Bs[bRow * (BN + PAD) + bQuad * 4 + 1] = vb.y;
    Bs[bRow * (BN + PAD) + bQuad * 4 + 2] = vb.z;
    Bs[bRow * (BN + PAD) + bQuad * 4 + 3] = vb.w;
    __syncthreads();
    for (int kk = 0; kk < BK; ++kk) {
      for (int i = 0; i < TM; ++i) ra[i] = As[kk * BM + tr * TM + i];
      for (int j = 0; j < TN; ++j) rb[j] = Bs[kk * (BN + PAD) + tc * TN + j];
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
