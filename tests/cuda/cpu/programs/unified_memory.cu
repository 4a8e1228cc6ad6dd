// "An even easier introduction" style: cudaMallocManaged buffers touched directly by host and
// device, a grid-stride kernel, cudaDeviceSynchronize before the host reads, and a managed struct.
#include <cstdio>
#include <cmath>
#include <iostream>
#include <cuda_runtime.h>

struct Accumulator {
    int count;
    float total;
};

__global__ void add(int n, float *x, float *y) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = blockDim.x * gridDim.x;
    for (int i = index; i < n; i += stride) y[i] = x[i] + y[i];
}

__global__ void accumulate(int n, const float *y, Accumulator *acc) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] > 3.0f) {
        atomicAdd(&acc->count, 1);
        atomicAdd(&acc->total, y[i]);
    }
}

int main(void) {
    int N = 1 << 16;
    float *x, *y;
    Accumulator *acc;
    if (cudaMallocManaged(&x, N * sizeof(float)) != cudaSuccess || cudaMallocManaged(&y, N * sizeof(float)) != cudaSuccess ||
        cudaMallocManaged(&acc, sizeof(Accumulator)) != cudaSuccess) {
        std::cout << "cudaMallocManaged failed" << std::endl;
        std::cout << "FAILED" << std::endl;
        return 1;
    }
    for (int i = 0; i < N; i++) {
        x[i] = 1.0f + (i % 7) * 0.5f;
        y[i] = 2.0f;
    }
    acc->count = 0;
    acc->total = 0.f;
    int blockSize = 256;
    int numBlocks = (N + blockSize - 1) / blockSize;
    add<<<numBlocks / 4, blockSize>>>(N, x, y);
    accumulate<<<numBlocks, blockSize>>>(N, y, acc);
    cudaDeviceSynchronize();
    float maxError = 0.0f;
    int count = 0;
    double total = 0;
    for (int i = 0; i < N; i++) {
        float e = 1.0f + (i % 7) * 0.5f + 2.0f;
        maxError = fmaxf(maxError, fabsf(y[i] - e));
        if (e > 3.0f) {
            ++count;
            total += e;
        }
    }
    std::cout << "Max error: " << maxError << ", count " << acc->count << "/" << count << ", total " << acc->total << "/"
              << total << std::endl;
    bool ok = maxError == 0.0f && acc->count == count && fabs(acc->total - total) < 1e-5 * total;
    cudaFree(x);
    cudaFree(y);
    cudaFree(acc);
    std::cout << (ok ? "PASSED" : "FAILED") << std::endl;
    return ok ? 0 : 1;
}
