__global__ void zero(int* hist, int bins) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < bins) hist[b] = 0;
}

__global__ void count_shared(const int* x, int* hist, int n, int bins) {
    extern __shared__ int local[];
    for (int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[x[i]], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += blockDim.x)
        if (local[b]) atomicAdd(&hist[b], local[b]);
}

extern "C" void solve(const int* x, int* hist, int n, int bins) {
    zero<<<(bins + 127) / 128, 128>>>(hist, bins);
    count_shared<<<8, 128, bins * sizeof(int)>>>(x, hist, n, bins);
}
