#include <cuda_runtime.h>
#include <math.h>

#define BLOCK 256

__global__ void block_max(const float* in, float* partial, int n) {
    __shared__ float s[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK * 2 + tid;
    float v = -INFINITY;
    if (i < n) v = in[i];
    if (i + BLOCK < n) v = fmaxf(v, in[i + BLOCK]);
    s[tid] = v;
    __syncthreads();
    for (int step = BLOCK / 2; step > 0; step >>= 1) {
        if (tid < step) s[tid] = fmaxf(s[tid], s[tid + step]);
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}

extern "C" void solve(const float* x, float* out, int n) {
    int first = (n + BLOCK * 2 - 1) / (BLOCK * 2);
    float* tmp[2] = {nullptr, nullptr};
    cudaMalloc(&tmp[0], sizeof(float) * first);
    cudaMalloc(&tmp[1], sizeof(float) * first);
    const float* in = x;
    int len = n, which = 0;
    for (;;) {
        int blocks = (len + BLOCK * 2 - 1) / (BLOCK * 2);
        float* dst = blocks == 1 ? out : tmp[which];
        block_max<<<blocks, BLOCK>>>(in, dst, len);
        if (blocks == 1) break;
        in = dst;
        len = blocks;
        which ^= 1;
    }
    cudaFree(tmp[0]);
    cudaFree(tmp[1]);
}
