// __constant__ arrays and structs: polynomial coefficients and a lookup table uploaded with
// cudaMemcpyToSymbol (whole and at an offset), a struct of parameters, read back with
// cudaMemcpyFromSymbol, and a __device__ global array written by one kernel and read by another.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                                  \
    do {                                                                               \
        cudaError_t err = (x);                                                         \
        if (err != cudaSuccess) {                                                      \
            fprintf(stderr, "CUDA error: %s (%s:%d)\n", cudaGetErrorString(err), __FILE__, __LINE__); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#define DEGREE 6
#define LUT_SIZE 64

struct Params {
    float scale;
    float bias;
    int mode;
};

__constant__ float c_coeffs[DEGREE + 1];
__constant__ int c_lut[LUT_SIZE];
__constant__ Params c_params;
__device__ int d_counter[4];

__global__ void evalPoly(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], acc = 0.f;
#pragma unroll
    for (int k = DEGREE; k >= 0; --k) acc = acc * v + c_coeffs[k];  // Horner
    y[i] = c_params.mode == 1 ? acc * c_params.scale + c_params.bias : acc;
}

__global__ void lookup(const int *idx, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = c_lut[idx[i] & (LUT_SIZE - 1)];
        out[i] = v;
        atomicAdd(&d_counter[v & 3], 1);
    }
}

int main() {
    const int n = 10000;
    float h_coeffs[DEGREE + 1];
    int h_lut[LUT_SIZE];
    srand(808);
    for (int k = 0; k <= DEGREE; ++k) h_coeffs[k] = (float)rand() / RAND_MAX - 0.5f;
    for (int k = 0; k < LUT_SIZE; ++k) h_lut[k] = rand() % 1000;
    Params p = {2.5f, -1.0f, 1};
    CUDA_CHECK(cudaMemcpyToSymbol(c_coeffs, h_coeffs, sizeof(h_coeffs)));
    // upload the table in two halves, the second with an offset
    CUDA_CHECK(cudaMemcpyToSymbol(c_lut, h_lut, sizeof(int) * LUT_SIZE / 2));
    CUDA_CHECK(cudaMemcpyToSymbol(c_lut, h_lut + LUT_SIZE / 2, sizeof(int) * LUT_SIZE / 2, sizeof(int) * LUT_SIZE / 2,
                                  cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpyToSymbol(c_params, &p, sizeof(Params)));
    int zeros[4] = {0, 0, 0, 0};
    CUDA_CHECK(cudaMemcpyToSymbol(d_counter, zeros, sizeof(zeros)));

    float *hx = new float[n], *hy = new float[n];
    int *hi = new int[n], *ho = new int[n];
    for (int i = 0; i < n; ++i) {
        hx[i] = 2.f * rand() / RAND_MAX - 1.f;
        hi[i] = rand();
    }
    float *dx, *dy;
    int *di, *dout;
    CUDA_CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dy, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&di, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dout, n * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(di, hi, n * sizeof(int), cudaMemcpyHostToDevice));
    evalPoly<<<(n + 255) / 256, 256>>>(dx, dy, n);
    lookup<<<(n + 255) / 256, 256>>>(di, dout, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(hy, dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(ho, dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    int counts[4], backLut[LUT_SIZE];
    Params back;
    CUDA_CHECK(cudaMemcpyFromSymbol(counts, d_counter, sizeof(counts)));
    CUDA_CHECK(cudaMemcpyFromSymbol(backLut, c_lut, sizeof(backLut)));
    CUDA_CHECK(cudaMemcpyFromSymbol(&back, c_params, sizeof(Params)));
    int bad = 0, refCounts[4] = {0, 0, 0, 0};
    for (int i = 0; i < n; ++i) {
        double acc = 0;
        for (int k = DEGREE; k >= 0; --k) acc = acc * hx[i] + h_coeffs[k];
        acc = acc * p.scale + p.bias;
        if (fabs(hy[i] - acc) > 1e-5 * (1 + fabs(acc))) ++bad;
        int v = h_lut[hi[i] & (LUT_SIZE - 1)];
        if (ho[i] != v) ++bad;
        refCounts[v & 3]++;
    }
    for (int k = 0; k < 4; ++k) bad += counts[k] != refCounts[k];
    for (int k = 0; k < LUT_SIZE; ++k) bad += backLut[k] != h_lut[k];
    bad += back.mode != 1 || back.scale != 2.5f;
    printf("constant memory checks: %d mismatches (counts %d %d %d %d)\n", bad, counts[0], counts[1], counts[2], counts[3]);
    cudaFree(dx); cudaFree(dy); cudaFree(di); cudaFree(dout);
    delete[] hx; delete[] hy; delete[] hi; delete[] ho;
    printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
    return bad == 0 ? 0 : 1;
}
