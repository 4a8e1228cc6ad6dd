// Warp-shuffle reduction: __shfl_down_sync within warps, a shared array of warp sums, then one
// atomicAdd per block; also a max-reduction with __shfl_xor_sync (butterfly) to exercise both forms.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cfloat>
#include <cstring>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                                 \
    do {                                                                                 \
        cudaError_t err = call;                                                          \
        if (err != cudaSuccess) {                                                        \
            fprintf(stderr, "CUDA error in %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err)); \
            exit(EXIT_FAILURE);                                                          \
        }                                                                                \
    } while (0)

#define FULL_MASK 0xffffffffu

__inline__ __device__ float warpReduceSum(float val) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        val += __shfl_down_sync(FULL_MASK, val, offset);
    return val;
}

__inline__ __device__ float warpReduceMax(float val) {
    for (int mask = 16; mask > 0; mask >>= 1) val = fmaxf(val, __shfl_xor_sync(FULL_MASK, val, mask));
    return val;
}

__inline__ __device__ float blockReduceSum(float val) {
    static __shared__ float shared[32];
    int lane = threadIdx.x % warpSize;
    int wid = threadIdx.x / warpSize;
    val = warpReduceSum(val);
    if (lane == 0) shared[wid] = val;
    __syncthreads();
    val = (threadIdx.x < blockDim.x / warpSize) ? shared[lane] : 0.0f;
    if (wid == 0) val = warpReduceSum(val);
    return val;
}

__global__ void deviceReduceBlockAtomicKernel(const float *in, float *out, int N) {
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) sum += in[i];
    sum = blockReduceSum(sum);
    if (threadIdx.x == 0) atomicAdd(out, sum);
}

__global__ void deviceReduceWarpAtomicMax(const float *in, int *outBits, int N) {
    float m = -FLT_MAX;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) m = fmaxf(m, in[i]);
    m = warpReduceMax(m);
    // all lanes hold the max after a butterfly; lane 0 publishes. Values are positive, so int order works.
    if ((threadIdx.x & (warpSize - 1)) == 0) atomicMax(outBits, __float_as_int(m));
}

int main() {
    const int N = 200000;
    float *h = (float *)malloc(N * sizeof(float));
    srand(5);
    double ref = 0;
    float refMax = 0;
    for (int i = 0; i < N; ++i) {
        h[i] = 0.5f + (float)rand() / RAND_MAX;
        ref += h[i];
        refMax = fmaxf(refMax, h[i]);
    }
    float *d_in, *d_out;
    int *d_max;
    CUDA_CHECK(cudaMalloc(&d_in, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_max, sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d_in, h, N * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_out, 0, sizeof(float)));
    CUDA_CHECK(cudaMemset(d_max, 0, sizeof(int)));
    int threads = 256, blocks = 48;
    deviceReduceBlockAtomicKernel<<<blocks, threads>>>(d_in, d_out, N);
    CUDA_CHECK(cudaGetLastError());
    deviceReduceWarpAtomicMax<<<blocks, 96>>>(d_in, d_max, N);
    CUDA_CHECK(cudaGetLastError());
    float sum;
    int maxBits;
    CUDA_CHECK(cudaMemcpy(&sum, d_out, sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&maxBits, d_max, sizeof(int), cudaMemcpyDeviceToHost));
    float gmax;
    memcpy(&gmax, &maxBits, sizeof(float));
    double rel = fabs(sum - ref) / ref;
    printf("sum gpu=%f cpu=%f rel=%.3e; max gpu=%f cpu=%f\n", sum, ref, rel, gmax, refMax);
    bool ok = rel < 1e-5 && gmax == refMax;
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_max);
    free(h);
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
