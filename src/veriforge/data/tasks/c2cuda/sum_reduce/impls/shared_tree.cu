#include <cuda_runtime.h>

#define BLOCK 256

// Classic shared-memory tree: each thread loads two elements, then halves the active range each step.
__global__ void block_sum(const float* in, float* partial, int n) {
    __shared__ float s[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * (BLOCK * 2) + tid;
    float v = 0.0f;
    if (i < n) v = in[i];
    if (i + BLOCK < n) v += in[i + BLOCK];
    s[tid] = v;
    __syncthreads();
    for (int step = BLOCK / 2; step > 0; step >>= 1) {
        if (tid < step) s[tid] += s[tid + step];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}

extern "C" void solve(const float* x, float* out, int n) {
    int blocks = (n + BLOCK * 2 - 1) / (BLOCK * 2);
    float* bufs[2] = {nullptr, nullptr};
    cudaMalloc(&bufs[0], sizeof(float) * blocks);
    cudaMalloc(&bufs[1], sizeof(float) * blocks);
    const float* in = x;
    int len = n;
    int which = 0;
    while (true) {
        int nb = (len + BLOCK * 2 - 1) / (BLOCK * 2);
        float* dst = (nb == 1) ? out : bufs[which];
        block_sum<<<nb, BLOCK>>>(in, dst, len);
        if (nb == 1) break;
        in = dst;
        len = nb;
        which ^= 1;
    }
    cudaFree(bufs[0]);
    cudaFree(bufs[1]);
}
