// Dot product with 128-bit vectorised loads (reinterpret_cast<const float4*>), __ldg, a scalar
// tail loop, warp-shuffle + shared-memory block reduction and a final second-pass kernel.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                                \
    do {                                                                                \
        const cudaError_t error_code = call;                                            \
        if (error_code != cudaSuccess) {                                                \
            printf("CUDA Error:\n    File: %s\n    Line: %d\n    Error text: %s\n", __FILE__, \
                   __LINE__, cudaGetErrorString(error_code));                           \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

constexpr int kBlock = 256;

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ float block_sum(float v) {
    __shared__ float warp_partials[kBlock / 32];
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) warp_partials[threadIdx.x >> 5] = v;
    __syncthreads();
    v = threadIdx.x < kBlock / 32 ? warp_partials[threadIdx.x] : 0.0f;
    if (threadIdx.x < 32) v = warp_sum(v);
    return v;
}

__global__ void __launch_bounds__(kBlock) dot_vec4(const float *__restrict__ a, const float *__restrict__ b,
                                                   float *__restrict__ partial, int n) {
    const float4 *a4 = reinterpret_cast<const float4 *>(a);
    const float4 *b4 = reinterpret_cast<const float4 *>(b);
    int n4 = n / 4;
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += blockDim.x * gridDim.x) {
        float4 x = __ldg(&a4[i]);
        float4 y = __ldg(&b4[i]);
        acc += x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
    }
    // tail elements not covered by float4
    for (int i = 4 * n4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += a[i] * b[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void finish(const float *partial, float *out, int m) {
    float v = 0.0f;
    for (int i = threadIdx.x; i < m; i += blockDim.x) v += partial[i];
    v = block_sum(v);
    if (threadIdx.x == 0) *out = v;
}

int main() {
    const int n = (1 << 18) + 3;
    const int blocks = 64;
    float *ha = (float *)malloc(n * sizeof(float)), *hb = (float *)malloc(n * sizeof(float));
    srand(123);
    double ref = 0.0, refAbs = 0.0;
    for (int i = 0; i < n; ++i) {
        ha[i] = 2.0f * rand() / RAND_MAX - 1.0f;
        hb[i] = 2.0f * rand() / RAND_MAX - 1.0f;
        ref += (double)ha[i] * hb[i];
        refAbs += fabs((double)ha[i] * hb[i]);
    }
    float *da, *db, *dp, *dout;
    CUDA_CHECK(cudaMalloc(&da, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&db, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dp, blocks * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dout, sizeof(float)));
    CUDA_CHECK(cudaMemcpy(da, ha, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db, hb, n * sizeof(float), cudaMemcpyHostToDevice));
    dot_vec4<<<blocks, kBlock>>>(da, db, dp, n);
    CUDA_CHECK(cudaGetLastError());
    finish<<<1, kBlock>>>(dp, dout, blocks);
    CUDA_CHECK(cudaGetLastError());
    float result;
    CUDA_CHECK(cudaMemcpy(&result, dout, sizeof(float), cudaMemcpyDeviceToHost));
    double err = fabs(result - ref);
    printf("dot = %.6f (reference %.6f), error %.3e (scale %.1f)\n", result, ref, err, refAbs);
    bool ok = err <= 1e-5 * refAbs;
    cudaFree(da); cudaFree(db); cudaFree(dp); cudaFree(dout);
    free(ha); free(hb);
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
