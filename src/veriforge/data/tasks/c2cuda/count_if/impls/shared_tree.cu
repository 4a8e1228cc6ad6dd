#include <cuda_runtime.h>

#define BLOCK 256

__global__ void count_tree(const float* x, float threshold, int* out, int n) {
    __shared__ int s[BLOCK];
    int tid = threadIdx.x;
    int c = 0;
    for (int i = blockIdx.x * BLOCK + tid; i < n; i += BLOCK * gridDim.x) {
        c += x[i] > threshold ? 1 : 0;
    }
    s[tid] = c;
    __syncthreads();
    for (int step = BLOCK / 2; step > 0; step >>= 1) {
        if (tid < step) s[tid] += s[tid + step];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, s[0]);
}

extern "C" void solve(const float* x, float threshold, int* out, int n) {
    cudaMemset(out, 0, sizeof(int));
    int blocks = (n + BLOCK - 1) / BLOCK;
    if (blocks > 512) blocks = 512;
    count_tree<<<blocks, BLOCK>>>(x, threshold, out, n);
}
