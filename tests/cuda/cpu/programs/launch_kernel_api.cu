// Launch styles beyond `<<<>>>` in plain host code: cudaLaunchKernel with an argument array
// (by address and with the kernel itself, templates too), and launches inside lambdas and
// std::thread bodies that use constants the lambda does not capture (not odr-used, so legal).
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <cuda_runtime.h>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, __LINE__); \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

struct Affine {
    float scale;
    float shift;
};

__global__ void axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}

__global__ void apply(Affine f, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = f.scale * y[i] + f.shift;
}

template <class T> __global__ void fill(T *p, T v, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) p[i] = v;
}

int main() {
    const int n = 5000;
    constexpr int kBlock = 128;
    float *x, *y;
    int *counts;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMalloc(&counts, n * sizeof(int)));
    float *hx = (float *)malloc(n * sizeof(float)), *hy = (float *)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) {
        hx[i] = (float)(rand() % 100);
        hy[i] = (float)(rand() % 100);
    }
    CHECK(cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y, hy, n * sizeof(float), cudaMemcpyHostToDevice));

    // cudaLaunchKernel by address, with the kernel itself, with a struct argument and a template
    float a = 2.0f;
    int nn = n;
    void *args[] = {&a, &x, &y, &nn};
    CHECK(cudaLaunchKernel((const void *)axpy, dim3((n + kBlock - 1) / kBlock), dim3(kBlock), args, 0, 0));
    CHECK(cudaLaunchKernel(axpy, dim3((n + kBlock - 1) / kBlock), dim3(kBlock), args));
    Affine f = {0.5f, 1.0f};
    void *args2[] = {&f, &y, &nn};
    CHECK(cudaLaunchKernel((void *)apply, dim3((n + kBlock - 1) / kBlock), dim3(kBlock), args2, 0, nullptr));
    int seven = 7;
    void *args3[] = {&counts, &seven, &nn};
    CHECK(cudaLaunchKernel(fill<int>, dim3(8), dim3(kBlock), args3, 0, 0));
    // an invalid configuration comes back from the call
    cudaError_t bad = cudaLaunchKernel((const void *)axpy, dim3(1), dim3(4096), args, 0, 0);
    printf("oversized cudaLaunchKernel: %s\n", cudaGetErrorName(bad));
    cudaGetLastError();
    CHECK(cudaDeviceSynchronize());

    int ok = bad == cudaErrorInvalidConfiguration;
    float *ry = (float *)malloc(n * sizeof(float));
    int *rc = (int *)malloc(n * sizeof(int));
    CHECK(cudaMemcpy(ry, y, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(rc, counts, n * sizeof(int), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; ++i) {
        float want = 0.5f * (hy[i] + 4.0f * hx[i]) + 1.0f;
        wrong += ry[i] != want || rc[i] != 7;
    }
    printf("cudaLaunchKernel: %d wrong\n", wrong);
    ok &= wrong == 0;

    // launches inside lambdas and threads that use uncaptured constants
    auto run = [y](float v) { fill<<<(n + kBlock - 1) / kBlock, kBlock>>>(y, v, n); };
    run(3.0f);
    std::thread worker([counts] { fill<<<(n + 255) / 256, 256>>>(counts, 11, n); });
    worker.join();
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(ry, y, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(rc, counts, n * sizeof(int), cudaMemcpyDeviceToHost));
    wrong = 0;
    for (int i = 0; i < n; ++i) wrong += ry[i] != 3.0f || rc[i] != 11;
    printf("launches in lambdas: %d wrong\n", wrong);
    ok &= wrong == 0;

    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    CHECK(cudaFree(counts));
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
