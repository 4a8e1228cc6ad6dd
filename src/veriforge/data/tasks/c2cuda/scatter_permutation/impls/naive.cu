// One thread per source element; the store address is data-dependent (uncoalesced by nature).
__global__ void scatter_naive(const float* src, const int* idx, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[idx[i]] = src[i];
}

extern "C" void solve(const float* src, const int* idx, float* out, int n) {
    scatter_naive<<<(n + 255) / 256, 256>>>(src, idx, out, n);
}
