// Reduction with sequential addressing and "first add during global load" (kernels #2/#3 of the
// well-known reduction series), floats, multi-pass on the device until one value remains.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                         \
    do {                                                                         \
        cudaError_t status = call;                                               \
        if (status != cudaSuccess) {                                             \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(status)); \
            exit(EXIT_FAILURE);                                                  \
        }                                                                        \
    } while (0)

__global__ void reduce2(const float *in, float *out, unsigned int n) {
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

__global__ void reduce3(const float *__restrict__ in, float *__restrict__ out, unsigned int n) {
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    float mySum = (i < n) ? in[i] : 0.0f;
    if (i + blockDim.x < n) mySum += in[i + blockDim.x];
    sdata[tid] = mySum;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = mySum;
}

static float gpuSum(int which, float *d_a, float *d_b, unsigned int n, int threads) {
    // Ping-pong between two buffers until a single partial sum is left.
    while (n > 1) {
        unsigned int per = which == 2 ? threads : threads * 2;
        unsigned int blocks = (n + per - 1) / per;
        if (which == 2)
            reduce2<<<blocks, threads, threads * sizeof(float)>>>(d_a, d_b, n);
        else
            reduce3<<<blocks, threads, threads * sizeof(float)>>>(d_a, d_b, n);
        CUDA_CHECK(cudaGetLastError());
        float *t = d_a;
        d_a = d_b;
        d_b = t;
        n = blocks;
    }
    float r;
    CUDA_CHECK(cudaMemcpy(&r, d_a, sizeof(float), cudaMemcpyDeviceToHost));
    return r;
}

int main() {
    const unsigned int n = 100003;
    float *h = new float[n];
    srand(3);
    double ref = 0;
    for (unsigned int i = 0; i < n; ++i) {
        h[i] = (float)rand() / RAND_MAX - 0.3f;
        ref += h[i];
    }
    float *d_a, *d_b;
    CUDA_CHECK(cudaMalloc(&d_a, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_b, n * sizeof(float)));
    bool ok = true;
    for (int which = 2; which <= 3; ++which) {
        for (int threads : {64, 256}) {
            CUDA_CHECK(cudaMemcpy(d_a, h, n * sizeof(float), cudaMemcpyHostToDevice));
            float s = gpuSum(which, d_a, d_b, n, threads);
            double rel = fabs(s - ref) / fabs(ref);
            printf("reduce%d threads=%d: %f vs %f (rel %.2e)\n", which, threads, s, ref, rel);
            if (!(rel < 1e-4)) ok = false;
        }
    }
    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
    delete[] h;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
