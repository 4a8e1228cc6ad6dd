// Reduction #5/#6 style: template on block size, complete unrolling, grid-stride accumulation, and
// a last-warp stage over volatile shared memory made safe for independent thread scheduling with
// __syncwarp() (read, sync, write, sync).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                               \
    do {                                                                               \
        cudaError_t e_ = (call);                                                       \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "CUDA error: %s at line %d\n", cudaGetErrorString(e_), __LINE__); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

template <unsigned int blockSize>
__device__ void warpReduce(volatile double *sdata, unsigned int tid) {
    double v = sdata[tid];
#pragma unroll
    for (int offset = 32; offset > 0; offset >>= 1) {
        if (blockSize >= 2 * offset) v += sdata[tid + offset];
        __syncwarp();
        sdata[tid] = v;
        __syncwarp();
    }
}

template <unsigned int blockSize>
__global__ void reduce6(const double *g_idata, double *g_odata, unsigned int n) {
    __shared__ double sdata[blockSize];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockSize * 2) + tid;
    unsigned int gridSize = blockSize * 2 * gridDim.x;
    double sum = 0;
    while (i < n) {
        sum += g_idata[i];
        if (i + blockSize < n) sum += g_idata[i + blockSize];
        i += gridSize;
    }
    sdata[tid] = sum;
    __syncthreads();
    if (blockSize >= 512) { if (tid < 256) sdata[tid] += sdata[tid + 256]; __syncthreads(); }
    if (blockSize >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
    if (blockSize >= 128) { if (tid < 64) sdata[tid] += sdata[tid + 64]; __syncthreads(); }
    if (tid < 32) warpReduce<blockSize>(sdata, tid);
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

template <unsigned int B>
double run(const double *d_in, double *d_part, unsigned int n, int blocks) {
    reduce6<B><<<blocks, B>>>(d_in, d_part, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    double *h = new double[blocks];
    CUDA_CHECK(cudaMemcpy(h, d_part, blocks * sizeof(double), cudaMemcpyDeviceToHost));
    double s = 0;
    for (int b = 0; b < blocks; ++b) s += h[b];
    delete[] h;
    return s;
}

int main() {
    const unsigned int n = 1 << 17;
    double *h = (double *)malloc(n * sizeof(double));
    srand(99);
    double ref = 0;
    for (unsigned int i = 0; i < n; ++i) {
        h[i] = (double)rand() / RAND_MAX * 2.0 - 1.0;
        ref += h[i];
    }
    double *d_in, *d_part;
    CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&d_part, 1024 * sizeof(double)));
    CUDA_CHECK(cudaMemcpy(d_in, h, n * sizeof(double), cudaMemcpyHostToDevice));
    double r64 = run<64>(d_in, d_part, n, 40);
    double r128 = run<128>(d_in, d_part, n, 33);
    double r256 = run<256>(d_in, d_part, n, 64);
    double r512 = run<512>(d_in, d_part, n, 16);
    printf("cpu %.10f gpu %.10f %.10f %.10f %.10f\n", ref, r64, r128, r256, r512);
    bool ok = fabs(r64 - ref) < 1e-8 && fabs(r128 - ref) < 1e-8 && fabs(r256 - ref) < 1e-8 &&
              fabs(r512 - ref) < 1e-8;
    cudaFree(d_in);
    cudaFree(d_part);
    free(h);
    printf(ok ? "PASSED\n" : "FAILED\n");
    return ok ? 0 : 1;
}
