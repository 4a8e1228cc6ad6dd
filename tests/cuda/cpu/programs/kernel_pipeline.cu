// A multi-kernel pipeline as applications chain them: normalise -> square-and-clip -> block partial
// sums -> final reduction -> broadcast scale, with intermediate buffers that stay on the device,
// cudaMemcpy device-to-device, cudaMemset between stages and cudaDeviceSynchronize checks.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                              \
    do {                                                                           \
        cudaError_t err__ = (x);                                                   \
        if (err__ != cudaSuccess) {                                                \
            fprintf(stderr, "CUDA error %d: %s line %d\n", (int)err__, cudaGetErrorString(err__), __LINE__); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

__global__ void normalise(const float *in, float *out, float mean, float invStd, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (in[i] - mean) * invStd;
}

__global__ void squareClip(float *x, float limit, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fminf(x[i] * x[i], limit);
}

__global__ void partialSums(const float *x, float *partial, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

__global__ void finalSum(const float *partial, float *total, int m) {
    __shared__ float s[256];
    float acc = 0.f;
    for (int i = threadIdx.x; i < m; i += blockDim.x) acc += partial[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) *total = s[0];
}

__global__ void scaleBy(float *x, const float *total, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float inv = 1.0f / *total;
    if (i < n) x[i] *= inv;
}

int main() {
    const int n = 60000, T = 256, B = (n + T - 1) / T;
    float *h = new float[n], *r = new float[n];
    srand(10101);
    double mean = 0, var = 0;
    for (int i = 0; i < n; ++i) {
        h[i] = 5.f + 3.f * ((float)rand() / RAND_MAX - 0.5f);
        mean += h[i];
    }
    mean /= n;
    for (int i = 0; i < n; ++i) var += (h[i] - mean) * (h[i] - mean);
    float invStd = (float)(1.0 / sqrt(var / n));
    float *dIn, *dCopy, *dWork, *dPartial, *dTotal;
    CUDA_CHECK(cudaMalloc(&dIn, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dCopy, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dWork, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dPartial, B * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dTotal, sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dIn, h, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dCopy, dIn, n * sizeof(float), cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaMemset(dWork, 0, n * sizeof(float)));
    CUDA_CHECK(cudaMemset(dPartial, 0, B * sizeof(float)));
    normalise<<<B, T>>>(dCopy, dWork, (float)mean, invStd, n);
    squareClip<<<B, T>>>(dWork, 2.0f, n);
    CUDA_CHECK(cudaDeviceSynchronize());
    partialSums<<<B, T>>>(dWork, dPartial, n);
    finalSum<<<1, T>>>(dPartial, dTotal, B);
    scaleBy<<<B, T>>>(dWork, dTotal, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(r, dWork, n * sizeof(float), cudaMemcpyDeviceToHost));
    float total;
    CUDA_CHECK(cudaMemcpy(&total, dTotal, sizeof(float), cudaMemcpyDeviceToHost));
    double refTotal = 0;
    double *t = new double[n];
    for (int i = 0; i < n; ++i) {
        double z = (h[i] - (float)mean) * invStd;
        t[i] = fmin(z * z, 2.0);
        refTotal += t[i];
    }
    int bad = 0;
    double sumOut = 0;
    for (int i = 0; i < n; ++i) {
        if (fabs(r[i] - t[i] / refTotal) > 1e-4 * (t[i] / refTotal) + 1e-10) ++bad;
        sumOut += r[i];
    }
    printf("total %.4f (ref %.4f), sum after scaling %.6f, mismatches %d\n", total, refTotal, sumOut, bad);
    bool ok = bad == 0 && fabs(sumOut - 1.0) < 1e-4 && fabs(total - refTotal) < 1e-4 * refTotal;
    cudaFree(dIn); cudaFree(dCopy); cudaFree(dWork); cudaFree(dPartial); cudaFree(dTotal);
    delete[] h; delete[] r; delete[] t;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
