#include <cstdio>
#define TILE 16
__constant__ float coeffs[64];

__device__ __noinline__ float helper(float x, int n) {
    float acc = 0.f;
    for (int i = 0; i < n; ++i) acc += coeffs[i % 64] * x;
    return acc;
}

__global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B, float* C, int N) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < N / TILE; ++t) {
        As[threadIdx.y][threadIdx.x] = A[row * N + t * TILE + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * N + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * N + col] = acc;
}

template <int BLOCK, typename T>
__global__ void reduce_sum(const T* in, T* out, int n) {
    __shared__ T buf[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    buf[threadIdx.x] = i < n ? in[i] : T(0);
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = buf[0];
}
template __global__ void reduce_sum<256, float>(const float*, float*, int);
template __global__ void reduce_sum<128, double>(const double*, double*, int);

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void uses_helper(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = helper(out[i], n);
    if (i == 0) printf("hello %d\n", n);
}

extern __shared__ float dyn[];
__global__ void spiller(float* out, const float* in, int n) {
    float r[48];
#pragma unroll
    for (int k = 0; k < 48; ++k) r[k] = in[threadIdx.x * 48 + k] * (k + 1);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 48; ++k) for (int j = 0; j < 48; ++j) s += r[k] * r[(k * 7 + j) % 48] + dyn[j];
    out[threadIdx.x] = s;
}
