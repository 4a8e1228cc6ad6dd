// Pre-Volta idioms that real code still uses, with the answers a GPU gives:
//  * Harris' "reduction #6" tail: warp-synchronous volatile shared memory, no __syncwarp()
//    (undefined since Volta, but every GPU runs the converged warp in lockstep);
//  * the CUDA samples' SharedMemory<T> struct for typed dynamic shared memory in templates, and
//    `extern __shared__ __align__(sizeof(T)) unsigned char smem[]`;
//  * out-of-range threads that `return` before a __syncthreads() reached by the others.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, __LINE__); \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

template <class T> struct SharedMemory {
    __device__ inline operator T *() {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }
    __device__ inline operator const T *() const {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }
};
template <> struct SharedMemory<double> {
    __device__ inline operator double *() {
        extern __shared__ double __smem_d[];
        return (double *)__smem_d;
    }
};

template <unsigned int blockSize, class T> __device__ void warpReduce(volatile T *sdata, unsigned int tid) {
    if (blockSize >= 64) sdata[tid] += sdata[tid + 32];
    if (blockSize >= 32) sdata[tid] += sdata[tid + 16];
    if (blockSize >= 16) sdata[tid] += sdata[tid + 8];
    if (blockSize >= 8) sdata[tid] += sdata[tid + 4];
    if (blockSize >= 4) sdata[tid] += sdata[tid + 2];
    if (blockSize >= 2) sdata[tid] += sdata[tid + 1];
}

template <unsigned int blockSize, class T> __global__ void reduce6(const T *in, T *out, unsigned int n) {
    T *sdata = SharedMemory<T>();
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockSize * 2) + tid;
    unsigned int gridSize = blockSize * 2 * gridDim.x;
    T sum = 0;
    while (i < n) {
        sum += in[i];
        if (i + blockSize < n) sum += in[i + blockSize];
        i += gridSize;
    }
    sdata[tid] = sum;
    __syncthreads();
    if (blockSize >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
    if (blockSize >= 128) { if (tid < 64) sdata[tid] += sdata[tid + 64]; __syncthreads(); }
    if (tid < 32) warpReduce<blockSize, T>(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// The samples' reduce4 tail: a local volatile pointer and `smem[tid] = mySum = mySum + ...`.
template <class T> __global__ void reduce4(const T *in, T *out, unsigned int n) {
    extern __shared__ __align__(sizeof(T)) unsigned char smem_raw[];
    T *sdata = reinterpret_cast<T *>(smem_raw);
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    T mySum = i < n ? in[i] : 0;
    sdata[tid] = mySum;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        volatile T *smem = sdata;
        smem[tid] = mySum = mySum + smem[tid + 32];
        smem[tid] = mySum = mySum + smem[tid + 16];
        smem[tid] = mySum = mySum + smem[tid + 8];
        smem[tid] = mySum = mySum + smem[tid + 4];
        smem[tid] = mySum = mySum + smem[tid + 2];
        smem[tid] = mySum = mySum + smem[tid + 1];
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// Inclusive warp scan, old style (volatile, lane-guarded, no __syncwarp), one warp per block.
__global__ void warp_scan(const int *in, int *out, int n) {
    __shared__ int s[32];
    int lane = threadIdx.x, i = blockIdx.x * 32 + lane;
    s[lane] = i < n ? in[i] : 0;
    volatile int *v = s;
    if (lane >= 1) v[lane] += v[lane - 1];
    if (lane >= 2) v[lane] += v[lane - 2];
    if (lane >= 4) v[lane] += v[lane - 4];
    if (lane >= 8) v[lane] += v[lane - 8];
    if (lane >= 16) v[lane] += v[lane - 16];
    if (i < n) out[i] = v[lane];
}

// Threads past the end return before the barrier; the rest still synchronise.
__global__ void neighbour_sum(const float *in, float *out, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    tile[threadIdx.x] = in[i];
    __syncthreads();
    int last = min((int)blockDim.x, n - (int)(blockIdx.x * blockDim.x)) - 1;
    int j = threadIdx.x < last ? threadIdx.x + 1 : threadIdx.x;
    out[i] = tile[threadIdx.x] + tile[j];
}

int main() {
    srand(12345);
    int ok = 1;
    const unsigned int n = 100000;
    int *h_i = (int *)malloc(n * sizeof(int));
    double *h_d = (double *)malloc(n * sizeof(double));
    float *h_f = (float *)malloc(n * sizeof(float));
    long long ref_i = 0;
    double ref_d = 0;
    for (unsigned int k = 0; k < n; ++k) {
        h_i[k] = rand() % 201 - 100;
        h_d[k] = (rand() % 1000) / 64.0;  // exact in binary: any summation order gives the same
        h_f[k] = (float)(rand() % 100);
        ref_i += h_i[k];
        ref_d += h_d[k];
    }
    const int blocks = 16;
    int *d_i, *d_oi, *d_scan;
    double *d_d, *d_od;
    CHECK(cudaMalloc(&d_i, n * sizeof(int)));
    CHECK(cudaMalloc(&d_d, n * sizeof(double)));
    CHECK(cudaMalloc(&d_oi, blocks * sizeof(int)));
    CHECK(cudaMalloc(&d_od, blocks * sizeof(double)));
    CHECK(cudaMalloc(&d_scan, n * sizeof(int)));
    CHECK(cudaMemcpy(d_i, h_i, n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_d, h_d, n * sizeof(double), cudaMemcpyHostToDevice));

    reduce6<256, int><<<blocks, 256, 256 * sizeof(int)>>>(d_i, d_oi, n);
    reduce6<128, double><<<blocks, 128, 128 * sizeof(double)>>>(d_d, d_od, n);
    CHECK(cudaGetLastError());
    int h_oi[blocks];
    double h_od[blocks];
    CHECK(cudaMemcpy(h_oi, d_oi, sizeof h_oi, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(h_od, d_od, sizeof h_od, cudaMemcpyDeviceToHost));
    long long got_i = 0;
    double got_d = 0;
    for (int b = 0; b < blocks; ++b) {
        got_i += h_oi[b];
        got_d += h_od[b];
    }
    printf("reduce6<int>: %lld (expected %lld)\n", got_i, ref_i);
    printf("reduce6<double>: %.4f (expected %.4f)\n", got_d, ref_d);
    ok &= got_i == ref_i && got_d == ref_d;

    // reduce4 over the first 64 * 128 ints, per block
    const int b4 = 64;
    int *h_o4 = (int *)malloc(b4 * sizeof(int));
    CHECK(cudaFree(d_oi));
    CHECK(cudaMalloc(&d_oi, b4 * sizeof(int)));
    reduce4<int><<<b4, 128, 128 * sizeof(int)>>>(d_i, d_oi, b4 * 128);
    CHECK(cudaMemcpy(h_o4, d_oi, b4 * sizeof(int), cudaMemcpyDeviceToHost));
    int bad4 = 0;
    for (int b = 0; b < b4; ++b) {
        int s = 0;
        for (int k = 0; k < 128; ++k) s += h_i[b * 128 + k];
        bad4 += s != h_o4[b];
    }
    printf("reduce4<int>: %d of %d blocks wrong\n", bad4, b4);
    ok &= bad4 == 0;

    const int ns = 1000;
    warp_scan<<<(ns + 31) / 32, 32>>>(d_i, d_scan, ns);
    int *h_scan = (int *)malloc(ns * sizeof(int));
    CHECK(cudaMemcpy(h_scan, d_scan, ns * sizeof(int), cudaMemcpyDeviceToHost));
    int bad_scan = 0;
    for (int w = 0; w * 32 < ns; ++w) {
        int acc = 0;
        for (int l = 0; l < 32 && w * 32 + l < ns; ++l) {
            acc += h_i[w * 32 + l];
            bad_scan += acc != h_scan[w * 32 + l];
        }
    }
    printf("warp_scan: %d wrong\n", bad_scan);
    ok &= bad_scan == 0;

    const int nn = 1000;  // the last of 4 blocks of 256 has 232 live threads
    float *d_f, *d_of;
    CHECK(cudaMalloc(&d_f, nn * sizeof(float)));
    CHECK(cudaMalloc(&d_of, nn * sizeof(float)));
    CHECK(cudaMemcpy(d_f, h_f, nn * sizeof(float), cudaMemcpyHostToDevice));
    neighbour_sum<<<(nn + 255) / 256, 256>>>(d_f, d_of, nn);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    float *h_of = (float *)malloc(nn * sizeof(float));
    CHECK(cudaMemcpy(h_of, d_of, nn * sizeof(float), cudaMemcpyDeviceToHost));
    int bad_nb = 0;
    for (int k = 0; k < nn; ++k) {
        int blockEnd = (k / 256) * 256 + 255 < nn - 1 ? (k / 256) * 256 + 255 : nn - 1;
        int j = k < blockEnd ? k + 1 : k;
        bad_nb += h_of[k] != h_f[k] + h_f[j];
    }
    printf("neighbour_sum with early return: %d wrong\n", bad_nb);
    ok &= bad_nb == 0;

    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
