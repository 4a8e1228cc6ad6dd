// Single-pass reduction with the "last block finishes" pattern: every block writes its partial sum,
// __threadfence() makes it visible, atomicInc on a global ticket tells the last block to arrive
// (a __shared__ bool broadcast), and that block reduces all partials. No spin-waiting between blocks.
// Also block-uniform branches that each contain their own __syncthreads().
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                              \
    do {                                                                           \
        cudaError_t e = (x);                                                       \
        if (e != cudaSuccess) {                                                    \
            fprintf(stderr, "CUDA error %s line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

__device__ unsigned int retirementCount = 0;

template <unsigned int BLOCK>
__device__ float blockReduce(float v, float *sdata) {
    unsigned int tid = threadIdx.x;
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    float r = sdata[0];
    __syncthreads();
    return r;
}

template <unsigned int BLOCK>
__global__ void reduceSinglePass(const float *in, float *partial, float *result, unsigned int n) {
    __shared__ float sdata[BLOCK];
    __shared__ bool amLast;
    float sum = 0.f;
    for (unsigned int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x) sum += in[i];
    sum = blockReduce<BLOCK>(sum, sdata);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sum;
        __threadfence();
        unsigned int ticket = atomicInc(&retirementCount, gridDim.x);
        amLast = (ticket == gridDim.x - 1);
    }
    __syncthreads();
    if (amLast) {  // block-uniform
        float s = 0.f;
        for (unsigned int i = threadIdx.x; i < gridDim.x; i += BLOCK) s += partial[i];
        s = blockReduce<BLOCK>(s, sdata);
        if (threadIdx.x == 0) {
            *result = s;
            retirementCount = 0;  // ready for the next launch
        }
    }
}

// Even and odd blocks take different (block-uniform) paths, each with its own barrier.
__global__ void uniformBranches(const int *in, int *out) {
    __shared__ int s[128];
    int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
    if (blockIdx.x % 2 == 0) {
        s[t] = in[g] * 2;
        __syncthreads();
        out[g] = s[blockDim.x - 1 - t];
    } else {
        s[t] = in[g] + 1;
        __syncthreads();
        out[g] = s[(t + 1) % blockDim.x];
    }
}

int main() {
    const unsigned int n = 123456;
    const int blocks = 37;
    float *h = new float[n];
    srand(1);
    double ref = 0;
    for (unsigned int i = 0; i < n; ++i) {
        h[i] = (float)rand() / RAND_MAX;
        ref += h[i];
    }
    float *din, *dpart, *dres;
    CUDA_CHECK(cudaMalloc(&din, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dpart, blocks * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dres, sizeof(float)));
    CUDA_CHECK(cudaMemcpy(din, h, n * sizeof(float), cudaMemcpyHostToDevice));
    bool ok = true;
    for (int rep = 0; rep < 3; ++rep) {  // the ticket must reset itself between launches
        CUDA_CHECK(cudaMemset(dres, 0, sizeof(float)));
        reduceSinglePass<256><<<blocks, 256>>>(din, dpart, dres, n);
        CUDA_CHECK(cudaGetLastError());
        float r;
        CUDA_CHECK(cudaMemcpy(&r, dres, sizeof(float), cudaMemcpyDeviceToHost));
        printf("pass %d: gpu %.4f cpu %.4f\n", rep, r, ref);
        ok = ok && fabs(r - ref) < 1e-4 * ref;
    }
    const int m = 8 * 128;
    int *hi = new int[m], *ho = new int[m], *di, *dout;
    for (int i = 0; i < m; ++i) hi[i] = rand() % 1000;
    CUDA_CHECK(cudaMalloc(&di, m * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dout, m * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(di, hi, m * sizeof(int), cudaMemcpyHostToDevice));
    uniformBranches<<<8, 128>>>(di, dout);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(ho, dout, m * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < 8; ++b)
        for (int t = 0; t < 128; ++t) {
            int e = b % 2 == 0 ? hi[b * 128 + 127 - t] * 2 : hi[b * 128 + (t + 1) % 128] + 1;
            bad += ho[b * 128 + t] != e;
        }
    printf("uniform-branch barrier mismatches: %d\n", bad);
    ok = ok && bad == 0;
    cudaFree(din); cudaFree(dpart); cudaFree(dres); cudaFree(di); cudaFree(dout);
    delete[] h; delete[] hi; delete[] ho;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
