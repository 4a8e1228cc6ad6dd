// Dense GEMV (thread-per-row and warp-per-row with shuffles) and sparse CSR SpMV (scalar
// thread-per-row and vector warp-per-row) on a random matrix, each against a host reference.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_CHECK(e)                                                                \
    do {                                                                             \
        cudaError_t _e = (e);                                                        \
        if (_e != cudaSuccess) {                                                     \
            fprintf(stderr, "CUDA error %s (%s:%d)\n", cudaGetErrorString(_e), __FILE__, __LINE__); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

__global__ void gemvThreadPerRow(const float *A, const float *x, float *y, int m, int n) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        float s = 0.f;
        for (int j = 0; j < n; ++j) s += A[row * n + j] * x[j];
        y[row] = s;
    }
}

__global__ void gemvWarpPerRow(const float *__restrict__ A, const float *__restrict__ x, float *__restrict__ y,
                               int m, int n, float alpha, float beta) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int lane = threadIdx.x % warpSize;
    if (row >= m) return;
    float s = 0.f;
    for (int j = lane; j < n; j += warpSize) s += A[(size_t)row * n + j] * __ldg(x + j);
    for (int off = warpSize / 2; off; off >>= 1) s += __shfl_down_sync(0xffffffff, s, off);
    if (lane == 0) y[row] = alpha * s + beta * y[row];
}

__global__ void spmvCsrScalar(int rows, const int *rowPtr, const int *colIdx, const float *vals, const float *x,
                              float *y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float dot = 0;
        for (int jj = rowPtr[row]; jj < rowPtr[row + 1]; jj++) dot += vals[jj] * x[colIdx[jj]];
        y[row] = dot;
    }
}

__global__ void spmvCsrVector(int rows, const int *rowPtr, const int *colIdx, const float *vals, const float *x,
                              float *y) {
    __shared__ float vals_sh[128];
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int warpId = tid / 32, lane = tid & 31;
    int row = warpId;
    float sum = 0.f;
    if (row < rows) {
        for (int jj = rowPtr[row] + lane; jj < rowPtr[row + 1]; jj += 32) sum += vals[jj] * x[colIdx[jj]];
    }
    vals_sh[threadIdx.x] = sum;
    __syncwarp();
    // tree in shared memory within each warp, synchronised with __syncwarp
    for (int off = 16; off > 0; off >>= 1) {
        float other = lane < off ? vals_sh[threadIdx.x + off] : 0.f;
        __syncwarp();
        if (lane < off) vals_sh[threadIdx.x] += other;
        __syncwarp();
    }
    if (lane == 0 && row < rows) y[row] = vals_sh[threadIdx.x];
}

int main() {
    const int m = 300, n = 257;
    srand(1717);
    std::vector<float> A(m * n), x(n), y0(m), y1(m), y2(m);
    for (auto &v : A) v = (float)rand() / RAND_MAX - 0.5f;
    for (auto &v : x) v = (float)rand() / RAND_MAX - 0.5f;
    for (auto &v : y0) v = (float)rand() / RAND_MAX;
    // CSR from A with ~10% density, varying row lengths (row 5 empty)
    std::vector<int> rowPtr(1, 0), colIdx;
    std::vector<float> vals;
    for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j)
            if (i != 5 && rand() % 10 == 0) {
                colIdx.push_back(j);
                vals.push_back(A[i * n + j]);
            }
        rowPtr.push_back((int)colIdx.size());
    }
    int nnz = (int)vals.size();
    float *dA, *dx, *dy, *dvals;
    int *drp, *dci;
    CUDA_CHECK(cudaMalloc(&dA, A.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dy, m * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dvals, nnz * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&drp, (m + 1) * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dci, nnz * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(dA, A.data(), A.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dvals, vals.data(), nnz * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(drp, rowPtr.data(), (m + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dci, colIdx.data(), nnz * sizeof(int), cudaMemcpyHostToDevice));
    double worst = 0;
    // 1. thread per row
    gemvThreadPerRow<<<(m + 127) / 128, 128>>>(dA, dx, dy, m, n);
    CUDA_CHECK(cudaMemcpy(y1.data(), dy, m * sizeof(float), cudaMemcpyDeviceToHost));
    // 2. warp per row, y = 1.5 A x + 0.5 y0
    CUDA_CHECK(cudaMemcpy(dy, y0.data(), m * sizeof(float), cudaMemcpyHostToDevice));
    gemvWarpPerRow<<<(m * 32 + 255) / 256, 256>>>(dA, dx, dy, m, n, 1.5f, 0.5f);
    CUDA_CHECK(cudaMemcpy(y2.data(), dy, m * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < m; ++i) {
        double s = 0;
        for (int j = 0; j < n; ++j) s += (double)A[i * n + j] * x[j];
        worst = fmax(worst, fabs(y1[i] - s));
        worst = fmax(worst, fabs(y2[i] - (1.5 * s + 0.5 * y0[i])));
    }
    printf("gemv max error %.3e\n", worst);
    bool ok = worst < 1e-4;
    // 3. spmv scalar and vector
    std::vector<double> ref(m, 0.0);
    for (int i = 0; i < m; ++i)
        for (int k = rowPtr[i]; k < rowPtr[i + 1]; ++k) ref[i] += (double)vals[k] * x[colIdx[k]];
    for (int variant = 0; variant < 2; ++variant) {
        CUDA_CHECK(cudaMemset(dy, 0xFF, m * sizeof(float)));  // NaN poison
        if (variant == 0)
            spmvCsrScalar<<<(m + 63) / 64, 64>>>(m, drp, dci, dvals, dx, dy);
        else
            spmvCsrVector<<<(m * 32 + 127) / 128, 128>>>(m, drp, dci, dvals, dx, dy);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaMemcpy(y1.data(), dy, m * sizeof(float), cudaMemcpyDeviceToHost));
        double e = 0;
        for (int i = 0; i < m; ++i) e = fmax(e, fabs(y1[i] - ref[i]));
        if (!(e < 1e-5)) ok = false;
        printf("spmv %s: nnz %d max error %.3e\n", variant ? "vector" : "scalar", nnz, e);
    }
    cudaFree(dA); cudaFree(dx); cudaFree(dy); cudaFree(dvals); cudaFree(drp); cudaFree(dci);
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
