__global__ void gather(const int* idx, const float* src, float* dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[idx[i]];
}

__global__ void csr_row(const int* rowptr, const float* vals, float* y, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.0f;
        for (int j = rowptr[r]; j < rowptr[r + 1]; ++j) s += vals[j];
        y[r] = s;
    }
}

__global__ void walk_ptr(float* p) {
    while (*p > 0.0f) { *p = 0.0f; p += 32; }
}
