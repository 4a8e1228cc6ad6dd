// SAXPY/DAXPY with grid-stride loops launched with fewer threads than elements, sized from the
// device's multiprocessor count, plus a templated AXPY over int for exact checking.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define gpuErrchk(ans) { gpuAssert((ans), __FILE__, __LINE__); }
inline void gpuAssert(cudaError_t code, const char *file, int line, bool abort = true) {
    if (code != cudaSuccess) {
        fprintf(stderr, "GPUassert: %s %s %d\n", cudaGetErrorString(code), file, line);
        if (abort) exit(code);
    }
}

__global__ void saxpy(int n, float a, const float *__restrict__ x, float *__restrict__ y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}

__global__ void daxpy(size_t n, double a, const double *x, double *y) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] += a * x[i];
}

template <typename T>
__global__ void axpyT(long long n, T a, const T *x, T *y) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

int main() {
    const int N = 1 << 18;
    int dev = 0, numSMs = 0;
    gpuErrchk(cudaGetDevice(&dev));
    gpuErrchk(cudaDeviceGetAttribute(&numSMs, cudaDevAttrMultiProcessorCount, dev));
    if (numSMs <= 0) numSMs = 1;
    int blocks = numSMs < 8 ? numSMs : 8;  // deliberately few: each thread loops
    printf("SMs: %d, launching %d blocks\n", numSMs, blocks);
    float *x = (float *)malloc(N * sizeof(float)), *y = (float *)malloc(N * sizeof(float));
    double *xd = (double *)malloc(N * sizeof(double)), *yd = (double *)malloc(N * sizeof(double));
    int *xi = (int *)malloc(N * sizeof(int)), *yi = (int *)malloc(N * sizeof(int));
    srand(9);
    for (int i = 0; i < N; i++) {
        x[i] = (float)rand() / RAND_MAX;
        y[i] = (float)rand() / RAND_MAX;
        xd[i] = x[i];
        yd[i] = y[i];
        xi[i] = rand() % 1000;
        yi[i] = rand() % 1000;
    }
    float *d_x, *d_y;
    double *d_xd, *d_yd;
    int *d_xi, *d_yi;
    gpuErrchk(cudaMalloc(&d_x, N * sizeof(float)));
    gpuErrchk(cudaMalloc(&d_y, N * sizeof(float)));
    gpuErrchk(cudaMalloc(&d_xd, N * sizeof(double)));
    gpuErrchk(cudaMalloc(&d_yd, N * sizeof(double)));
    gpuErrchk(cudaMalloc(&d_xi, N * sizeof(int)));
    gpuErrchk(cudaMalloc(&d_yi, N * sizeof(int)));
    gpuErrchk(cudaMemcpy(d_x, x, N * sizeof(float), cudaMemcpyHostToDevice));
    gpuErrchk(cudaMemcpy(d_y, y, N * sizeof(float), cudaMemcpyHostToDevice));
    gpuErrchk(cudaMemcpy(d_xd, xd, N * sizeof(double), cudaMemcpyHostToDevice));
    gpuErrchk(cudaMemcpy(d_yd, yd, N * sizeof(double), cudaMemcpyHostToDevice));
    gpuErrchk(cudaMemcpy(d_xi, xi, N * sizeof(int), cudaMemcpyHostToDevice));
    gpuErrchk(cudaMemcpy(d_yi, yi, N * sizeof(int), cudaMemcpyHostToDevice));
    saxpy<<<blocks, 256>>>(N, 2.0f, d_x, d_y);
    daxpy<<<blocks * 2, 128>>>(N, -3.5, d_xd, d_yd);
    axpyT<int><<<3, 64>>>(N, 7, d_xi, d_yi);
    gpuErrchk(cudaPeekAtLastError());
    gpuErrchk(cudaDeviceSynchronize());
    float *ry = (float *)malloc(N * sizeof(float));
    double *ryd = (double *)malloc(N * sizeof(double));
    int *ryi = (int *)malloc(N * sizeof(int));
    gpuErrchk(cudaMemcpy(ry, d_y, N * sizeof(float), cudaMemcpyDeviceToHost));
    gpuErrchk(cudaMemcpy(ryd, d_yd, N * sizeof(double), cudaMemcpyDeviceToHost));
    gpuErrchk(cudaMemcpy(ryi, d_yi, N * sizeof(int), cudaMemcpyDeviceToHost));
    float maxError = 0.0f;
    double maxErrD = 0.0;
    int badI = 0;
    for (int i = 0; i < N; i++) {
        maxError = fmaxf(maxError, fabsf(ry[i] - (2.0f * x[i] + y[i])));
        maxErrD = fmax(maxErrD, fabs(ryd[i] - (yd[i] - 3.5 * xd[i])));
        badI += ryi[i] != 7 * xi[i] + yi[i];
    }
    printf("Max error: %g (float) %g (double), int mismatches %d\n", maxError, maxErrD, badI);
    bool ok = maxError < 1e-6f && maxErrD < 1e-12 && badI == 0;
    cudaFree(d_x); cudaFree(d_y); cudaFree(d_xd); cudaFree(d_yd); cudaFree(d_xi); cudaFree(d_yi);
    free(x); free(y); free(xd); free(yd); free(xi); free(yi); free(ry); free(ryd); free(ryi);
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
