#include <cuda_runtime.h>
#include <math.h>

#define BLOCK 256

__device__ __forceinline__ bool better(float va, int ia, float vb, int ib) {
    return va > vb || (va == vb && ia < ib);
}

// Reduces (value, index) pairs. `idx_in` is null on the first pass (the index is the position).
__global__ void argmax_block(const float* vals, const int* idx_in, float* vals_out, int* idx_out, int n) {
    __shared__ float sv[BLOCK];
    __shared__ int si[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    float v = -INFINITY;
    int k = 0x7fffffff;
    if (i < n) {
        v = vals[i];
        k = idx_in ? idx_in[i] : i;
    }
    sv[tid] = v;
    si[tid] = k;
    __syncthreads();
    for (int step = BLOCK / 2; step > 0; step >>= 1) {
        if (tid < step && better(sv[tid + step], si[tid + step], sv[tid], si[tid])) {
            sv[tid] = sv[tid + step];
            si[tid] = si[tid + step];
        }
        __syncthreads();
    }
    if (tid == 0) {
        vals_out[blockIdx.x] = sv[0];
        idx_out[blockIdx.x] = si[0];
    }
}

extern "C" void solve(const float* x, int* out, int n) {
    int blocks = (n + BLOCK - 1) / BLOCK;
    float* pv[2];
    int* pi[2];
    for (int b = 0; b < 2; ++b) {
        cudaMalloc(&pv[b], sizeof(float) * blocks);
        cudaMalloc(&pi[b], sizeof(int) * blocks);
    }
    const float* in_v = x;
    const int* in_i = nullptr;
    int len = n, which = 0;
    for (;;) {
        int nb = (len + BLOCK - 1) / BLOCK;
        argmax_block<<<nb, BLOCK>>>(in_v, in_i, pv[which], pi[which], len);
        if (nb == 1) break;
        in_v = pv[which];
        in_i = pi[which];
        len = nb;
        which ^= 1;
    }
    cudaMemcpy(out, pi[which], sizeof(int), cudaMemcpyDeviceToDevice);
    for (int b = 0; b < 2; ++b) {
        cudaFree(pv[b]);
        cudaFree(pi[b]);
    }
}
