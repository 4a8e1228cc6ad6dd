// Bitonic sort of key/value pairs in shared memory: each block sorts an independent array of
// SHARED_SIZE elements, alternating direction per block; values follow their keys.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include <utility>
#include <cuda_runtime.h>

#define SHARED_SIZE 1024
#define checkCudaErrors(x)                                                           \
    do {                                                                             \
        cudaError_t e = (x);                                                         \
        if (e != cudaSuccess) {                                                      \
            fprintf(stderr, "%s(%d): %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

__device__ inline void Comparator(unsigned &keyA, unsigned &valA, unsigned &keyB, unsigned &valB, unsigned dir) {
    if ((keyA > keyB) == dir) {
        unsigned t = keyA; keyA = keyB; keyB = t;
        t = valA; valA = valB; valB = t;
    }
}

__global__ void bitonicSortShared(unsigned *d_DstKey, unsigned *d_DstVal, const unsigned *d_SrcKey,
                                  const unsigned *d_SrcVal, unsigned arrayLength, unsigned dirBase) {
    __shared__ unsigned s_key[SHARED_SIZE];
    __shared__ unsigned s_val[SHARED_SIZE];
    unsigned dir = dirBase ^ (blockIdx.x & 1);
    d_SrcKey += blockIdx.x * arrayLength + threadIdx.x;
    d_SrcVal += blockIdx.x * arrayLength + threadIdx.x;
    d_DstKey += blockIdx.x * arrayLength + threadIdx.x;
    d_DstVal += blockIdx.x * arrayLength + threadIdx.x;
    s_key[threadIdx.x] = d_SrcKey[0];
    s_val[threadIdx.x] = d_SrcVal[0];
    s_key[threadIdx.x + arrayLength / 2] = d_SrcKey[arrayLength / 2];
    s_val[threadIdx.x + arrayLength / 2] = d_SrcVal[arrayLength / 2];
    for (unsigned size = 2; size < arrayLength; size <<= 1) {
        unsigned ddd = dir ^ ((threadIdx.x & (size / 2)) != 0);
        for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            unsigned pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
            Comparator(s_key[pos + 0], s_val[pos + 0], s_key[pos + stride], s_val[pos + stride], ddd);
        }
    }
    for (unsigned stride = arrayLength / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        unsigned pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
        Comparator(s_key[pos + 0], s_val[pos + 0], s_key[pos + stride], s_val[pos + stride], dir);
    }
    __syncthreads();
    d_DstKey[0] = s_key[threadIdx.x];
    d_DstVal[0] = s_val[threadIdx.x];
    d_DstKey[arrayLength / 2] = s_key[threadIdx.x + arrayLength / 2];
    d_DstVal[arrayLength / 2] = s_val[threadIdx.x + arrayLength / 2];
}

int main() {
    const unsigned arrayLength = SHARED_SIZE, batch = 16, N = arrayLength * batch;
    std::vector<unsigned> hk(N), hv(N), ok_k(N), ok_v(N);
    srand(1001);
    for (unsigned i = 0; i < N; ++i) {
        hk[i] = rand() % 5000;  // duplicates on purpose
        hv[i] = i;
    }
    unsigned *dk, *dv, *ok, *ov;
    checkCudaErrors(cudaMalloc(&dk, N * sizeof(unsigned)));
    checkCudaErrors(cudaMalloc(&dv, N * sizeof(unsigned)));
    checkCudaErrors(cudaMalloc(&ok, N * sizeof(unsigned)));
    checkCudaErrors(cudaMalloc(&ov, N * sizeof(unsigned)));
    checkCudaErrors(cudaMemcpy(dk, hk.data(), N * sizeof(unsigned), cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemcpy(dv, hv.data(), N * sizeof(unsigned), cudaMemcpyHostToDevice));
    bitonicSortShared<<<batch, arrayLength / 2>>>(ok, ov, dk, dv, arrayLength, 1);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaDeviceSynchronize());
    checkCudaErrors(cudaMemcpy(ok_k.data(), ok, N * sizeof(unsigned), cudaMemcpyDeviceToHost));
    checkCudaErrors(cudaMemcpy(ok_v.data(), ov, N * sizeof(unsigned), cudaMemcpyDeviceToHost));
    int errors = 0;
    for (unsigned b = 0; b < batch; ++b) {
        bool asc = (1 ^ (b & 1)) != 0;
        std::vector<unsigned> ref(hk.begin() + b * arrayLength, hk.begin() + (b + 1) * arrayLength);
        std::sort(ref.begin(), ref.end());
        if (!asc) std::reverse(ref.begin(), ref.end());
        std::vector<bool> seen(arrayLength, false);
        for (unsigned i = 0; i < arrayLength; ++i) {
            unsigned k = ok_k[b * arrayLength + i], v = ok_v[b * arrayLength + i];
            if (k != ref[i]) ++errors;
            // value must be a valid, unused index into this batch whose key matches
            if (v < b * arrayLength || v >= (b + 1) * arrayLength || seen[v - b * arrayLength] || hk[v] != k)
                ++errors;
            else
                seen[v - b * arrayLength] = true;
        }
    }
    printf("bitonic sort of %u arrays of %u: %d errors\n", batch, arrayLength, errors);
    cudaFree(dk); cudaFree(dv); cudaFree(ok); cudaFree(ov);
    printf(errors == 0 ? "PASSED\n" : "FAILED\n");
    return errors == 0 ? 0 : 1;
}
