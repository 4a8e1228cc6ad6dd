// Half-precision kernels with cuda_fp16.h: __half2 arithmetic (__hfma2, __hmul2, __hadd2),
// conversions (__float2half_rn, __half2float, __floats2half2_rn, __half22float2, __low2float), a
// half AXPY over half2 pairs, a ReLU with __hgt, and a dot product that accumulates in float.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                              \
    do {                                                                              \
        cudaError_t e = (call);                                                       \
        if (e != cudaSuccess) {                                                       \
            fprintf(stderr, "CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

__global__ void haxpy2(int n2, __half a, const __half2 *x, __half2 *y) {
    __half2 a2 = __half2half2(a);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n2; i += blockDim.x * gridDim.x)
        y[i] = __hfma2(a2, x[i], y[i]);
}

__global__ void scaleShiftRelu(const __half *in, __half *out, float scale, float shift, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half v = __hadd(__hmul(in[i], __float2half(scale)), __float2half_rn(shift));
        out[i] = __hgt(v, __float2half(0.0f)) ? v : __float2half(0.0f);
    }
}

__global__ void dotHalf2(const __half2 *a, const __half2 *b, float *result, int n2) {
    __shared__ float partial[256];
    float acc = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n2; i += blockDim.x * gridDim.x) {
        float2 p = __half22float2(__hmul2(a[i], b[i]));
        acc += p.x + p.y;
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, partial[0]);
}

__global__ void packPairs(const float *src, __half2 *dst, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) dst[i] = __floats2half2_rn(src[2 * i], src[2 * i + 1]);
}

__global__ void unpackLow(const __half2 *src, float *lo, float *hi, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        lo[i] = __low2float(src[i]);
        hi[i] = __high2float(src[i]);
    }
}

int main() {
    const int n = 8192, n2 = n / 2;
    __half *hx = (__half *)malloc(n * sizeof(__half)), *hy = (__half *)malloc(n * sizeof(__half));
    float *fx = (float *)malloc(n * sizeof(float)), *fy = (float *)malloc(n * sizeof(float));
    srand(16);
    for (int i = 0; i < n; ++i) {
        fx[i] = (float)rand() / RAND_MAX * 2.f - 1.f;
        fy[i] = (float)rand() / RAND_MAX * 2.f - 1.f;
        hx[i] = __float2half(fx[i]);
        hy[i] = __float2half(fy[i]);
        fx[i] = __half2float(hx[i]);  // reference uses the rounded inputs
        fy[i] = __half2float(hy[i]);
    }
    __half *dx, *dy, *dout;
    float *dres, *dsrc, *dlo, *dhi;
    CUDA_CHECK(cudaMalloc(&dx, n * sizeof(__half)));
    CUDA_CHECK(cudaMalloc(&dy, n * sizeof(__half)));
    CUDA_CHECK(cudaMalloc(&dout, n * sizeof(__half)));
    CUDA_CHECK(cudaMalloc(&dres, sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dsrc, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dlo, n2 * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dhi, n2 * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dx, hx, n * sizeof(__half), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dy, hy, n * sizeof(__half), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dres, 0, sizeof(float)));
    bool ok = true;

    // dot product first (inputs untouched)
    dotHalf2<<<8, 256>>>((const __half2 *)dx, (const __half2 *)dy, dres, n2);
    CUDA_CHECK(cudaGetLastError());
    float dot;
    CUDA_CHECK(cudaMemcpy(&dot, dres, sizeof(float), cudaMemcpyDeviceToHost));
    double refDot = 0, absDot = 0;
    for (int i = 0; i < n; ++i) {
        refDot += (double)fx[i] * fy[i];
        absDot += fabs((double)fx[i] * fy[i]);
    }
    printf("half2 dot %.4f ref %.4f\n", dot, refDot);
    if (!(fabs(dot - refDot) < 2e-3 * absDot)) ok = false;

    // relu(scale*x + shift)
    scaleShiftRelu<<<(n + 255) / 256, 256>>>(dx, dout, 1.5f, 0.25f, n);
    CUDA_CHECK(cudaMemcpy(hy, dout, n * sizeof(__half), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        float r = fmaxf(1.5f * fx[i] + 0.25f, 0.f);
        if (fabsf(__half2float(hy[i]) - r) > 4e-3f * (1.f + fabsf(r))) ++bad;
    }
    printf("relu mismatches %d\n", bad);
    ok = ok && bad == 0;

    // y = 0.5*x + y in half2; y was overwritten above, so restore it
    for (int i = 0; i < n; ++i) hy[i] = __float2half(fy[i]);
    CUDA_CHECK(cudaMemcpy(dy, hy, n * sizeof(__half), cudaMemcpyHostToDevice));
    haxpy2<<<4, 128>>>(n2, __float2half(0.5f), (const __half2 *)dx, (__half2 *)dy);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(hy, dy, n * sizeof(__half), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < n; ++i) {
        float r = 0.5f * fx[i] + fy[i];
        if (fabsf(__half2float(hy[i]) - r) > 2e-3f * (1.f + fabsf(r))) ++bad;
    }
    printf("haxpy2 mismatches %d\n", bad);
    ok = ok && bad == 0;

    // pack/unpack round trip
    CUDA_CHECK(cudaMemcpy(dsrc, fx, n * sizeof(float), cudaMemcpyHostToDevice));
    packPairs<<<(n2 + 127) / 128, 128>>>(dsrc, (__half2 *)dout, n2);
    unpackLow<<<(n2 + 127) / 128, 128>>>((const __half2 *)dout, dlo, dhi, n2);
    CUDA_CHECK(cudaGetLastError());
    float *lo = (float *)malloc(n2 * sizeof(float)), *hi = (float *)malloc(n2 * sizeof(float));
    CUDA_CHECK(cudaMemcpy(lo, dlo, n2 * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hi, dhi, n2 * sizeof(float), cudaMemcpyDeviceToHost));
    bad = 0;
    for (int i = 0; i < n2; ++i) bad += (lo[i] != fx[2 * i]) + (hi[i] != fx[2 * i + 1]);  // exact: already half values
    printf("pack/unpack mismatches %d\n", bad);
    ok = ok && bad == 0;

    cudaFree(dx); cudaFree(dy); cudaFree(dout); cudaFree(dres); cudaFree(dsrc); cudaFree(dlo); cudaFree(dhi);
    free(hx); free(hy); free(fx); free(fy); free(lo); free(hi);
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
