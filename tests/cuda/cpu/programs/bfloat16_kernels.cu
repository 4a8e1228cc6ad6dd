// bfloat16 kernels with cuda_bf16.h: conversion (__float2bfloat16, __bfloat162float), a bf16 GEMV
// accumulating in fp32, __nv_bfloat162 packed multiply-add (__hfma2) and a row-wise RMSNorm that
// writes bf16 output.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                              \
    do {                                                                              \
        cudaError_t e = (call);                                                       \
        if (e != cudaSuccess) {                                                       \
            fprintf(stderr, "CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

typedef __nv_bfloat16 bf16;

__global__ void gemvBf16(const bf16 *W, const bf16 *x, float *y, int rows, int cols) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    float acc = 0.f;
    for (int c = lane; c < cols; c += 32) acc += __bfloat162float(W[row * cols + c]) * __bfloat162float(x[c]);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
    if (lane == 0) y[row] = acc;
}

__global__ void fma2Bf16(const __nv_bfloat162 *a, const __nv_bfloat162 *b, __nv_bfloat162 *c, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) c[i] = __hfma2(a[i], b[i], c[i]);
}

__global__ void rmsNormBf16(const float *in, const float *weight, bf16 *out, int cols, float eps) {
    extern __shared__ float red[];
    const float *x = in + blockIdx.x * cols;
    float ss = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) ss += x[c] * x[c];
    red[threadIdx.x] = ss;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float inv = rsqrtf(red[0] / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[blockIdx.x * cols + c] = __float2bfloat16(x[c] * inv * weight[c]);
}

static float bfRound(float f) { return __bfloat162float(__float2bfloat16(f)); }

int main() {
    const int rows = 96, cols = 200;
    bf16 *hW = new bf16[rows * cols], *hx = new bf16[cols];
    float *fW = new float[rows * cols], *fx = new float[cols];
    srand(77);
    for (int i = 0; i < rows * cols; ++i) {
        hW[i] = __float2bfloat16((float)rand() / RAND_MAX - 0.5f);
        fW[i] = __bfloat162float(hW[i]);
    }
    for (int i = 0; i < cols; ++i) {
        hx[i] = __float2bfloat16((float)rand() / RAND_MAX - 0.5f);
        fx[i] = __bfloat162float(hx[i]);
    }
    bf16 *dW, *dx;
    float *dy;
    CUDA_CHECK(cudaMalloc(&dW, rows * cols * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dx, cols * sizeof(bf16)));
    CUDA_CHECK(cudaMalloc(&dy, rows * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dW, hW, rows * cols * sizeof(bf16), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dx, hx, cols * sizeof(bf16), cudaMemcpyHostToDevice));
    gemvBf16<<<(rows + 3) / 4, 128>>>(dW, dx, dy, rows, cols);
    CUDA_CHECK(cudaGetLastError());
    float *y = new float[rows];
    CUDA_CHECK(cudaMemcpy(y, dy, rows * sizeof(float), cudaMemcpyDeviceToHost));
    double e1 = 0;
    for (int r = 0; r < rows; ++r) {
        double s = 0;
        for (int c = 0; c < cols; ++c) s += (double)fW[r * cols + c] * fx[c];
        e1 = fmax(e1, fabs(y[r] - s));
    }
    printf("bf16 gemv max abs error %.3e\n", e1);
    bool ok = e1 < 1e-4;

    // packed fma on the first rows*cols/2 pairs: c = a*b + c with a=W, b=W (squares), c=W
    const int n2 = rows * cols / 2;
    bf16 *dc;
    CUDA_CHECK(cudaMalloc(&dc, rows * cols * sizeof(bf16)));
    CUDA_CHECK(cudaMemcpy(dc, hW, rows * cols * sizeof(bf16), cudaMemcpyHostToDevice));
    fma2Bf16<<<(n2 + 255) / 256, 256>>>((const __nv_bfloat162 *)dW, (const __nv_bfloat162 *)dW, (__nv_bfloat162 *)dc,
                                        n2);
    CUDA_CHECK(cudaGetLastError());
    bf16 *hc = new bf16[rows * cols];
    CUDA_CHECK(cudaMemcpy(hc, dc, rows * cols * sizeof(bf16), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < rows * cols; ++i) {
        float ref = bfRound(fW[i] * fW[i] + fW[i]);
        float got = __bfloat162float(hc[i]);
        if (fabsf(got - ref) > 1e-2f * fabsf(ref) + 1e-3f) ++bad;
    }
    printf("bf16x2 fma mismatches %d\n", bad);
    ok = ok && bad == 0;

    // RMSNorm to bf16
    float *hin = new float[rows * cols], *hwt = new float[cols];
    for (int i = 0; i < rows * cols; ++i) hin[i] = 4.f * rand() / RAND_MAX - 2.f;
    for (int i = 0; i < cols; ++i) hwt[i] = 0.5f + (float)rand() / RAND_MAX;
    float *din, *dwt;
    bf16 *dout;
    CUDA_CHECK(cudaMalloc(&din, rows * cols * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dwt, cols * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dout, rows * cols * sizeof(bf16)));
    CUDA_CHECK(cudaMemcpy(din, hin, rows * cols * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dwt, hwt, cols * sizeof(float), cudaMemcpyHostToDevice));
    rmsNormBf16<<<rows, 64, 64 * sizeof(float)>>>(din, dwt, dout, cols, 1e-6f);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(hc, dout, rows * cols * sizeof(bf16), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int r = 0; r < rows; ++r) {
        double ss = 0;
        for (int c = 0; c < cols; ++c) ss += (double)hin[r * cols + c] * hin[r * cols + c];
        double inv = 1.0 / sqrt(ss / cols + 1e-6);
        for (int c = 0; c < cols; ++c) {
            double ref = hin[r * cols + c] * inv * hwt[c];
            if (fabs(__bfloat162float(hc[r * cols + c]) - ref) > 8e-3 * fabs(ref) + 1e-3) ++bad;
        }
    }
    printf("rmsnorm bf16 mismatches %d\n", bad);
    ok = ok && bad == 0;
    cudaFree(dW); cudaFree(dx); cudaFree(dy); cudaFree(dc); cudaFree(din); cudaFree(dwt); cudaFree(dout);
    delete[] hW; delete[] hx; delete[] fW; delete[] fx; delete[] y; delete[] hc; delete[] hin; delete[] hwt;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
