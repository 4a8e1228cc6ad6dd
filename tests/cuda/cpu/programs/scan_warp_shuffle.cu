// Block-wide inclusive scan built from warp shuffles (__shfl_up_sync), a scan of warp totals by the
// first warp, and a decoupled multi-block pass (block totals scanned on the host) -- floats.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                                 \
    do {                                                                                 \
        cudaError_t e = (call);                                                          \
        if (e != cudaSuccess) {                                                          \
            printf("CUDA error %d (%s) at line %d\n", (int)e, cudaGetErrorString(e), __LINE__); \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

__device__ __forceinline__ float warpInclusiveScan(float v, unsigned lane) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        float up = __shfl_up_sync(0xffffffff, v, d);
        if (lane >= d) v += up;
    }
    return v;
}

__global__ void blockScan(const float *in, float *out, float *blockTotals, int n) {
    __shared__ float warpSums[32];
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float v = gid < n ? in[gid] : 0.0f;
    v = warpInclusiveScan(v, lane);
    if (lane == 31) warpSums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int nw = blockDim.x >> 5;
        float s = lane < nw ? warpSums[lane] : 0.0f;
        s = warpInclusiveScan(s, lane);
        if (lane < nw) warpSums[lane] = s;
    }
    __syncthreads();
    if (warp > 0) v += warpSums[warp - 1];
    if (gid < n) out[gid] = v;
    if (threadIdx.x == blockDim.x - 1) blockTotals[blockIdx.x] = v;
}

__global__ void addOffsets(float *out, const float *offsets, int n) {
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid < n && blockIdx.x > 0) out[gid] += offsets[blockIdx.x - 1];
}

int main() {
    const int n = 100000, threads = 512;
    const int blocks = (n + threads - 1) / threads;
    float *h = (float *)malloc(n * sizeof(float));
    float *r = (float *)malloc(n * sizeof(float));
    float *tot = (float *)malloc(blocks * sizeof(float));
    srand(8);
    for (int i = 0; i < n; ++i) h[i] = (float)rand() / RAND_MAX;
    float *d_in, *d_out, *d_tot;
    CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_tot, blocks * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice));
    blockScan<<<blocks, threads>>>(d_in, d_out, d_tot, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(tot, d_tot, blocks * sizeof(float), cudaMemcpyDeviceToHost));
    for (int b = 1; b < blocks; ++b) tot[b] += tot[b - 1];
    CUDA_CHECK(cudaMemcpy(d_tot, tot, blocks * sizeof(float), cudaMemcpyHostToDevice));
    addOffsets<<<blocks, threads>>>(d_out, d_tot, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(r, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    double acc = 0;
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        acc += h[i];
        if (fabs(r[i] - acc) > 5e-5 * acc + 1e-3) {
            if (bad < 3) printf("mismatch at %d: %f vs %f\n", i, r[i], acc);
            ++bad;
        }
    }
    printf("scan of %d floats, %d mismatches, total %.3f\n", n, bad, r[n - 1]);
    cudaFree(d_in); cudaFree(d_out); cudaFree(d_tot);
    free(h); free(r); free(tot);
    printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
    return bad == 0 ? 0 : 1;
}
