// Dynamic shared memory: the SharedMemory<T> accessor struct specialised per type (a common sample
// idiom), several arrays carved out of one extern __shared__ buffer, and the size passed at launch
// (with an alignment-aware layout mixing double, int and char).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                                \
    do {                                                                             \
        cudaError_t e = (x);                                                         \
        if (e != cudaSuccess) {                                                      \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

template <class T>
struct SharedMemory {
    __device__ inline operator T *() {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }
    __device__ inline operator const T *() const {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }
};

template <>
struct SharedMemory<double> {
    __device__ inline operator double *() {
        extern __shared__ double __smem_d[];
        return (double *)__smem_d;
    }
};

// Block-reverse through a typed dynamic buffer.
template <typename T>
__global__ void reverseBlocks(T *d, int n) {
    T *s = SharedMemory<T>();
    int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    if (base + t < n) s[t] = d[base + t];
    __syncthreads();
    int len = min((int)blockDim.x, n - base);
    if (t < len) d[base + t] = s[len - 1 - t];
}

// Three arrays in one buffer: doubles first (8-byte aligned), then ints, then chars.
__global__ void carveOut(const double *vals, const int *keys, double *outVals, int *outKeys, char *outFlags, int n) {
    extern __shared__ __align__(8) unsigned char smem[];
    double *sVals = reinterpret_cast<double *>(smem);
    int *sKeys = reinterpret_cast<int *>(sVals + blockDim.x);
    char *sFlags = reinterpret_cast<char *>(sKeys + blockDim.x);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    sVals[threadIdx.x] = i < n ? vals[i] : 0.0;
    sKeys[threadIdx.x] = i < n ? keys[i] : 0;
    sFlags[threadIdx.x] = (i < n && keys[i] % 2 == 0) ? 1 : 0;
    __syncthreads();
    // each thread reads its neighbour's entries (rotated by one within the block)
    int j = (threadIdx.x + 1) % blockDim.x;
    if (i < n) {
        outVals[i] = sVals[j] * 2.0;
        outKeys[i] = sKeys[j] + 1;
        outFlags[i] = sFlags[j];
    }
}

int main() {
    const int n = 5000, B = 128;
    const int blocks = (n + B - 1) / B;
    float *hf = new float[n], *rf = new float[n];
    double *hv = new double[n], *ov = new double[n];
    int *hk = new int[n], *ok_ = new int[n];
    char *of = new char[n];
    srand(44);
    for (int i = 0; i < n; ++i) {
        hf[i] = (float)rand();
        hv[i] = (double)rand() / RAND_MAX;
        hk[i] = rand();
    }
    float *df;
    double *dd, *dv, *dov;
    int *dk, *dok;
    char *dof;
    CUDA_CHECK(cudaMalloc(&df, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dd, n * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&dv, n * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&dov, n * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&dk, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dok, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dof, n));
    CUDA_CHECK(cudaMemcpy(df, hf, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dd, hv, n * sizeof(double), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dv, hv, n * sizeof(double), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dk, hk, n * sizeof(int), cudaMemcpyHostToDevice));
    reverseBlocks<float><<<blocks, B, B * sizeof(float)>>>(df, n);
    reverseBlocks<double><<<blocks, B, B * sizeof(double)>>>(dd, n);
    size_t smem = B * (sizeof(double) + sizeof(int) + sizeof(char));
    carveOut<<<blocks, B, smem>>>(dv, dk, dov, dok, dof, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(rf, df, n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(ov, dd, n * sizeof(double), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < blocks; ++b) {
        int base = b * B, len = (n - base) < B ? (n - base) : B;
        for (int t = 0; t < len; ++t) {
            bad += rf[base + t] != hf[base + len - 1 - t];
            bad += ov[base + t] != hv[base + len - 1 - t];
        }
    }
    CUDA_CHECK(cudaMemcpy(ov, dov, n * sizeof(double), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(ok_, dok, n * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(of, dof, n, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
        int b = i / B, t = i % B;
        int src = b * B + (t + 1) % B;
        double v = src < n ? hv[src] : 0.0;
        int k = src < n ? hk[src] : 0;
        char f = (src < n && hk[src] % 2 == 0) ? 1 : 0;
        bad += ov[i] != v * 2.0;
        bad += ok_[i] != k + 1;
        bad += of[i] != f;
    }
    printf("dynamic shared memory mismatches: %d\n", bad);
    cudaFree(df); cudaFree(dd); cudaFree(dv); cudaFree(dov); cudaFree(dk); cudaFree(dok); cudaFree(dof);
    delete[] hf; delete[] rf; delete[] hv; delete[] ov; delete[] hk; delete[] ok_; delete[] of;
    printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
    return bad == 0 ? 0 : 1;
}
