// Grid-stride loop with a grid sized to the machine rather than the data, so each thread handles
// several elements; the data-dependent src reads go through the read-only (texture) cache, which
// handles scattered 4-byte reads better than L1-allocating loads.
__global__ void gather_gs(const float* __restrict__ src, const int* __restrict__ idx, float* __restrict__ out,
                          int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = __ldg(&src[__ldg(&idx[i])]);
    }
}

extern "C" void solve(const float* src, const int* idx, float* out, int n_src, int n) {
    (void)n_src;
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    if (sms <= 0) sms = 16;
    int want = (n + 255) / 256;
    int blocks = want < sms * 8 ? want : sms * 8;
    if (blocks < 1) blocks = 1;
    gather_gs<<<blocks, 256>>>(src, idx, out, n);
}
