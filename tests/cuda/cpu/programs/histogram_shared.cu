// 256-bin histogram: privatised per-block histogram in shared memory with shared atomics, merged
// into the global histogram with one global atomicAdd per bin and block; grid-stride input loop.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define HIST_BINS 256
#define CUDA_SAFE_CALL(call)                                                              \
    do {                                                                                  \
        cudaError_t err = call;                                                           \
        if (cudaSuccess != err) {                                                         \
            fprintf(stderr, "Cuda error in file '%s' in line %i : %s.\n", __FILE__, __LINE__, \
                    cudaGetErrorString(err));                                             \
            exit(EXIT_FAILURE);                                                           \
        }                                                                                 \
    } while (0)

__global__ void histogramSharedAtomics(const unsigned char *data, unsigned int *histo, size_t n) {
    __shared__ unsigned int s_hist[HIST_BINS];
    for (int b = threadIdx.x; b < HIST_BINS; b += blockDim.x) s_hist[b] = 0;
    __syncthreads();
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&s_hist[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < HIST_BINS; b += blockDim.x) {
        unsigned int c = s_hist[b];
        if (c) atomicAdd(&histo[b], c);
    }
}

int main() {
    const size_t n = 300000;
    unsigned char *h = (unsigned char *)malloc(n);
    unsigned int ref[HIST_BINS], out[HIST_BINS];
    memset(ref, 0, sizeof(ref));
    srand(2718);
    for (size_t i = 0; i < n; ++i) {
        // skewed distribution so some bins are hot
        int r = rand();
        h[i] = (r % 4 == 0) ? (unsigned char)(r % 7) : (unsigned char)(r >> 3);
        ref[h[i]]++;
    }
    unsigned char *d_data;
    unsigned int *d_hist;
    CUDA_SAFE_CALL(cudaMalloc(&d_data, n));
    CUDA_SAFE_CALL(cudaMalloc(&d_hist, HIST_BINS * sizeof(unsigned int)));
    CUDA_SAFE_CALL(cudaMemcpy(d_data, h, n, cudaMemcpyHostToDevice));
    CUDA_SAFE_CALL(cudaMemset(d_hist, 0, HIST_BINS * sizeof(unsigned int)));
    histogramSharedAtomics<<<30, 192>>>(d_data, d_hist, n);
    CUDA_SAFE_CALL(cudaGetLastError());
    CUDA_SAFE_CALL(cudaMemcpy(out, d_hist, sizeof(out), cudaMemcpyDeviceToHost));
    int bad = 0;
    unsigned long long total = 0;
    for (int b = 0; b < HIST_BINS; ++b) {
        total += out[b];
        if (out[b] != ref[b]) ++bad;
    }
    printf("total %llu (expected %zu), bad bins %d\n", total, n, bad);
    cudaFree(d_data);
    cudaFree(d_hist);
    free(h);
    printf("%s\n", bad == 0 && total == n ? "PASSED" : "FAILED");
    return bad == 0 && total == n ? 0 : 1;
}
