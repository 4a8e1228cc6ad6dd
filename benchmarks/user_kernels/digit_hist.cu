// Histogram of the last decimal digit of every value, one global atomic per element.
__global__ void digit_hist(const int* x, int* hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&hist[x[i] % 10], 1);
}
