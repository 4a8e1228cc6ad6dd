// Classic reduction kernels #0 and #1: interleaved addressing with divergent branching and with
// strided indexing, each block writing a partial sum that the host finishes.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CHECK(x)                                                                  \
    {                                                                             \
        cudaError_t e = (x);                                                      \
        if (e != cudaSuccess) {                                                   \
            printf("%s failed: %s (line %d)\n", #x, cudaGetErrorString(e), __LINE__); \
            return 1;                                                             \
        }                                                                         \
    }

__global__ void reduce0(const int *g_idata, int *g_odata, unsigned int n) {
    extern __shared__ int sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if ((tid % (2 * s)) == 0) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

__global__ void reduce1(const int *g_idata, int *g_odata, unsigned int n) {
    extern __shared__ int sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        int index = 2 * s * tid;
        if (index < blockDim.x) sdata[index] += sdata[index + s];
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

int main() {
    const unsigned int n = (1 << 16) + 333;
    const int threads = 128;
    const int blocks = (n + threads - 1) / threads;
    int *h_in = (int *)malloc(n * sizeof(int));
    int *h_out = (int *)malloc(blocks * sizeof(int));
    srand(11);
    long long ref = 0;
    for (unsigned int i = 0; i < n; i++) {
        h_in[i] = (rand() & 0xFF) - 100;
        ref += h_in[i];
    }
    int *d_in, *d_out;
    CHECK(cudaMalloc(&d_in, n * sizeof(int)));
    CHECK(cudaMalloc(&d_out, blocks * sizeof(int)));
    CHECK(cudaMemcpy(d_in, h_in, n * sizeof(int), cudaMemcpyHostToDevice));
    bool ok = true;
    for (int k = 0; k < 2; ++k) {
        CHECK(cudaMemset(d_out, 0, blocks * sizeof(int)));
        if (k == 0)
            reduce0<<<blocks, threads, threads * sizeof(int)>>>(d_in, d_out, n);
        else
            reduce1<<<blocks, threads, threads * sizeof(int)>>>(d_in, d_out, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(h_out, d_out, blocks * sizeof(int), cudaMemcpyDeviceToHost));
        long long sum = 0;
        for (int b = 0; b < blocks; ++b) sum += h_out[b];
        printf("reduce%d: gpu %lld cpu %lld\n", k, sum, ref);
        if (sum != ref) ok = false;
    }
    cudaFree(d_in);
    cudaFree(d_out);
    free(h_in);
    free(h_out);
    printf(ok ? "PASSED\n" : "FAILED\n");
    return ok ? 0 : 1;
}
