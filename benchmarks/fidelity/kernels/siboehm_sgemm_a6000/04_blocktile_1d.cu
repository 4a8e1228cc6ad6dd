// SGEMM, shared-memory block tiles of BM x BK (A) and BK x BN (B) with a 1D register tile:
// each of the (BM*BN)/TM threads computes TM vertically adjacent outputs (worklog kernel 4,
// BM = BN = 64, BK = 8, TM = 8, 512 threads). Written for this benchmark.
template <int BM, int BN, int BK, int TM>
__global__ void sgemm_blocktile_1d(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                   float *C) {
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;
  const int oc = threadIdx.x % BN;  // output column inside the tile
  const int orow = threadIdx.x / BN;  // which group of TM rows
  const int ar = threadIdx.x / BK, ac = threadIdx.x % BK;  // one A element per thread
  const int br = threadIdx.x / BN, bc = threadIdx.x % BN;  // one B element per thread

  float acc[TM] = {0.0f};
  for (int k0 = 0; k0 < K; k0 += BK) {
    As[ar * BK + ac] = A[(row0 + ar) * K + k0 + ac];
    Bs[br * BN + bc] = B[(k0 + br) * N + col0 + bc];
    __syncthreads();
    for (int kk = 0; kk < BK; ++kk) {
      const float b = Bs[kk * BN + oc];
      for (int t = 0; t < TM; ++t) {
        acc[t] += As[(orow * TM + t) * BK + kk] * b;
      }
    }
    __syncthreads();
  }
  for (int t = 0; t < TM; ++t) {
    const int idx = (row0 + orow * TM + t) * N + col0 + oc;
    C[idx] = alpha * acc[t] + beta * C[idx];
  }
}
