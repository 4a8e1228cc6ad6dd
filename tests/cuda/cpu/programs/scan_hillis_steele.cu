// Hillis-Steele inclusive scan in one block with double buffering in shared memory, applied to
// many independent segments (one block per segment) and checked exactly on integers.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK_CUDA(call)                                                               \
    if ((call) != cudaSuccess) {                                                       \
        cudaError_t err = cudaGetLastError();                                          \
        fprintf(stderr, "CUDA error calling \"" #call "\", code is %d\n", err);       \
        exit(1);                                                                       \
    }

#define SEG 512

__global__ void hillisSteeleScan(const int *in, int *out, int segLen) {
    __shared__ int temp[2][SEG];
    int tid = threadIdx.x;
    const int *src = in + blockIdx.x * segLen;
    int pout = 0, pin = 1;
    temp[pout][tid] = tid < segLen ? src[tid] : 0;
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset <<= 1) {
        pout = 1 - pout;
        pin = 1 - pout;
        if (tid >= offset)
            temp[pout][tid] = temp[pin][tid] + temp[pin][tid - offset];
        else
            temp[pout][tid] = temp[pin][tid];
        __syncthreads();
    }
    if (tid < segLen) out[blockIdx.x * segLen + tid] = temp[pout][tid];
}

int main() {
    const int segments = 100, segLen = 500;
    const int n = segments * segLen;
    int *h_in = new int[n], *h_out = new int[n];
    srand(42);
    for (int i = 0; i < n; ++i) h_in[i] = rand() % 100 - 30;
    int *d_in, *d_out;
    CHECK_CUDA(cudaMalloc(&d_in, n * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&d_out, n * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, n * sizeof(int), cudaMemcpyHostToDevice));
    hillisSteeleScan<<<segments, SEG>>>(d_in, d_out, segLen);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpy(h_out, d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
    int errors = 0;
    for (int s = 0; s < segments; ++s) {
        int acc = 0;
        for (int i = 0; i < segLen; ++i) {
            acc += h_in[s * segLen + i];
            if (h_out[s * segLen + i] != acc) ++errors;
        }
    }
    printf("errors: %d of %d\n", errors, n);
    cudaFree(d_in);
    cudaFree(d_out);
    delete[] h_in;
    delete[] h_out;
    printf(errors ? "FAILED\n" : "PASSED\n");
    return errors ? 1 : 0;
}
