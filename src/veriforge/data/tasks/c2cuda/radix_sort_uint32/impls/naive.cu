// Binary LSD radix sort: for each of the 32 bits, a stable split puts keys with the bit clear before
// keys with the bit set. zeros_before[i] (number of 0-bits before i) comes from an exclusive prefix sum
// done by ONE thread, the obvious but serial way. Then key i goes to zeros_before[i] if its bit is 0,
// else to total_zeros + (i - zeros_before[i]).
__global__ void flag_zero(const unsigned int* src, int* zeros_before, int n, int bit) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) zeros_before[i] = ((src[i] >> bit) & 1u) == 0u;
}

__global__ void serial_exclusive_scan(int* data, int n, int* total) {
    int run = 0;
    for (int i = 0; i < n; ++i) {
        int v = data[i];
        data[i] = run;
        run += v;
    }
    *total = run;
}

__global__ void split_scatter(const unsigned int* src, unsigned int* dst, const int* zeros_before,
                              const int* total_zeros, int n, int bit) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned int k = src[i];
        int z = zeros_before[i];
        int pos = ((k >> bit) & 1u) ? (*total_zeros + i - z) : z;
        dst[pos] = k;
    }
}

extern "C" void solve(const unsigned int* keys_in, unsigned int* keys_out, int n) {
    unsigned int* tmp;
    int* zeros;
    int* total;
    cudaMalloc((void**)&tmp, (size_t)n * sizeof(unsigned int));
    cudaMalloc((void**)&zeros, (size_t)n * sizeof(int));
    cudaMalloc((void**)&total, sizeof(int));
    cudaMemcpy(keys_out, keys_in, (size_t)n * sizeof(unsigned int), cudaMemcpyDeviceToDevice);
    unsigned int* src = keys_out;
    unsigned int* dst = tmp;
    int blocks = (n + 255) / 256;
    for (int bit = 0; bit < 32; ++bit) {   // even number of passes: the result ends in keys_out
        flag_zero<<<blocks, 256>>>(src, zeros, n, bit);
        serial_exclusive_scan<<<1, 1>>>(zeros, n, total);
        split_scatter<<<blocks, 256>>>(src, dst, zeros, total, n, bit);
        unsigned int* t = src; src = dst; dst = t;
    }
    cudaFree(tmp);
    cudaFree(zeros);
    cudaFree(total);
}
