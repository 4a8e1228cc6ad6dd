#include <cuda_runtime.h>
#include <math.h>

__device__ __forceinline__ void take_better(float& v, int& i, float ov, int oi) {
    if (ov > v || (ov == v && oi < i)) {
        v = ov;
        i = oi;
    }
}

__device__ __forceinline__ void warp_argmax(float& v, int& i) {
    for (int off = 16; off > 0; off >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, off);
        int oi = __shfl_xor_sync(0xffffffffu, i, off);
        take_better(v, i, ov, oi);
    }
}

__global__ void argmax_blocks(const float* __restrict__ x, float* pv, int* pi, int n) {
    __shared__ float wv[32];
    __shared__ int wi[32];
    float v = -INFINITY;
    int idx = 0x7fffffff;
    // Each thread scans increasing indices, so a strict '>' keeps its first occurrence.
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float e = x[i];
        if (e > v) {
            v = e;
            idx = i;
        }
    }
    warp_argmax(v, idx);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        wv[warp] = v;
        wi[warp] = idx;
    }
    __syncthreads();
    if (warp == 0) {
        bool has = lane < (int)(blockDim.x >> 5);
        v = has ? wv[lane] : -INFINITY;
        idx = has ? wi[lane] : 0x7fffffff;
        warp_argmax(v, idx);
        if (lane == 0) {
            pv[blockIdx.x] = v;
            pi[blockIdx.x] = idx;
        }
    }
}

__global__ void argmax_final(const float* pv, const int* pi, int* out, int m) {
    float v = -INFINITY;
    int idx = 0x7fffffff;
    for (int k = threadIdx.x; k < m; k += 32) take_better(v, idx, pv[k], pi[k]);
    warp_argmax(v, idx);
    if (threadIdx.x == 0) out[0] = idx;
}

extern "C" void solve(const float* x, int* out, int n) {
    const int threads = 256;
    int blocks = (n + threads - 1) / threads;
    if (blocks > 264) blocks = 264;
    float* pv = nullptr;
    int* pi = nullptr;
    cudaMalloc(&pv, sizeof(float) * blocks);
    cudaMalloc(&pi, sizeof(int) * blocks);
    argmax_blocks<<<blocks, threads>>>(x, pv, pi, n);
    argmax_final<<<1, 32>>>(pv, pi, out, blocks);
    cudaFree(pv);
    cudaFree(pi);
}
