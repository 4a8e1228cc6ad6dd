// Device-side assert() that holds, clock64()/clock() read inside a kernel (busy-loop timing printed,
// not checked), __threadfence() publishing results, and __syncthreads_count/_and/_or block votes.
#include <cstdio>
#include <cstdlib>
#include <cassert>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                                \
    do {                                                                             \
        cudaError_t e = (x);                                                         \
        if (e != cudaSuccess) {                                                      \
            fprintf(stderr, "CUDA error %s line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

__global__ void timedWork(const int *in, int *out, long long *cycles, int *votes, int n) {
    long long start = clock64();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(blockDim.x <= 1024);
    int v = i < n ? in[i] : 0;
    assert(v >= 0);  // inputs are non-negative
    int acc = 0;
    for (int k = 0; k < 64; ++k) acc += (v >> (k & 7)) & 1;
    if (i < n) out[i] = acc;
    __threadfence();
    int cnt = __syncthreads_count(v % 2 == 0);
    int all = __syncthreads_and(v < 1000000);
    int any = __syncthreads_or(v == 7);
    if (threadIdx.x == 0) {
        votes[3 * blockIdx.x + 0] = cnt;
        votes[3 * blockIdx.x + 1] = all;
        votes[3 * blockIdx.x + 2] = any;
    }
    long long stop = clock64();
    if (i < n) cycles[i] = stop - start;
}

int main() {
    const int n = 2048, T = 256, B = n / T;
    int *h = new int[n], *out = new int[n], *votes = new int[3 * B];
    long long *cyc = new long long[n];
    srand(3);
    for (int i = 0; i < n; ++i) h[i] = rand() % 100000;
    h[5] = 7;  // block 0 has a 7
    int *din, *dout, *dv;
    long long *dc;
    CUDA_CHECK(cudaMalloc(&din, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dout, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dv, 3 * B * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dc, n * sizeof(long long)));
    CUDA_CHECK(cudaMemcpy(din, h, n * sizeof(int), cudaMemcpyHostToDevice));
    timedWork<<<B, T>>>(din, dout, dc, dv, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(out, dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(votes, dv, 3 * B * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(cyc, dc, n * sizeof(long long), cudaMemcpyDeviceToHost));
    int bad = 0;
    long long maxCycles = 0;
    for (int i = 0; i < n; ++i) {
        int acc = 0;
        for (int k = 0; k < 64; ++k) acc += (h[i] >> (k & 7)) & 1;
        bad += out[i] != acc;
        bad += cyc[i] < 0;
        maxCycles = cyc[i] > maxCycles ? cyc[i] : maxCycles;
    }
    for (int b = 0; b < B; ++b) {
        int cnt = 0, any = 0;
        for (int t = 0; t < T; ++t) {
            cnt += h[b * T + t] % 2 == 0;
            any |= h[b * T + t] == 7;
        }
        bad += votes[3 * b] != cnt || votes[3 * b + 1] != 1 || votes[3 * b + 2] != any;
    }
    printf("max kernel cycles %lld (not checked); mismatches %d\n", maxCycles, bad);
    cudaFree(din); cudaFree(dout); cudaFree(dv); cudaFree(dc);
    delete[] h; delete[] out; delete[] votes; delete[] cyc;
    printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
    return bad == 0 ? 0 : 1;
}
