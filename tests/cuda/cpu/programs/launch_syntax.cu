// Launch-syntax corner cases seen in real code: templates with nested template arguments right before
// <<<, shifts (>>) inside the launch configuration, launches split over several lines with comments,
// spaces around <<< >>>, launches inside macros, a "<<<" in a string literal, and the typed
// extern __shared__ __align__ idiom shared by two template instantiations.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                            \
    do {                                                                         \
        cudaError_t e = (x);                                                     \
        if (e != cudaSuccess) {                                                  \
            fprintf(stderr, "CUDA error %s line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define LAUNCH_1D(kernel, n, ...) kernel<<<((n) + 127) >> 7, 128>>>(__VA_ARGS__)

template <typename T>
struct Plus {
    __device__ T operator()(T a, T b) const { return a + b; }
};
template <typename T>
struct Times {
    __device__ T operator()(T a, T b) const { return a * b; }
};

template <typename Op, typename T = int>
__global__ void combine(const T *a, const T *b, T *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = Op()(a[i], b[i]);
}

template <typename T>
__global__ void reverseTyped(T *d, int n) {
    extern __shared__ __align__(sizeof(T)) unsigned char my_smem[];
    T *s = reinterpret_cast<T *>(my_smem);
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    if (base + t < n) s[t] = d[base + t];
    __syncthreads();
    int len = min((int)blockDim.x, n - base);
    if (t < len) d[base + t] = s[len - 1 - t];
}

int main() {
    const int n = 1000;
    int *ha = new int[n], *hb = new int[n], *hc = new int[n];
    double *hd = new double[n];
    srand(5);
    for (int i = 0; i < n; ++i) {
        ha[i] = rand() % 100;
        hb[i] = rand() % 100;
        hd[i] = i * 0.5;
    }
    int *a, *b, *c;
    double *dd;
    CUDA_CHECK(cudaMalloc(&a, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&b, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&c, n * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&dd, n * sizeof(double)));
    CUDA_CHECK(cudaMemcpy(a, ha, n * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b, hb, n * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dd, hd, n * sizeof(double), cudaMemcpyHostToDevice));
    printf("launch syntax test: a<<<b, c>>>(d) in a string must not be rewritten\n");
    int bad = 0;

    combine<Plus<int>><<<(n + 255) >> 8, 256>>>(a, b, c, n);  // nested template + shift
    CUDA_CHECK(cudaMemcpy(hc, c, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) bad += hc[i] != ha[i] + hb[i];

    combine<Times<int>, int>
        <<<dim3((n + 63) / 64, 1, 1),   // grid
           dim3(64),                    /* block */
           0>>>(a,
                b,
                c, n);
    CUDA_CHECK(cudaMemcpy(hc, c, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) bad += hc[i] != ha[i] * hb[i];

    LAUNCH_1D(combine<Plus<int>>, n, c, a, c, n);  // c = a*b + a
    CUDA_CHECK(cudaMemcpy(hc, c, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) bad += hc[i] != ha[i] * hb[i] + ha[i];

    reverseTyped<int> <<< (n + 127) / 128 , 128 , 128 * sizeof(int) >>> (a, n);
    reverseTyped<double><<<(n + 127) / 128, 128, 128 * sizeof(double)>>>(dd, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(hc, a, n * sizeof(int), cudaMemcpyDeviceToHost));
    double *rd = new double[n];
    CUDA_CHECK(cudaMemcpy(rd, dd, n * sizeof(double), cudaMemcpyDeviceToHost));
    for (int blk = 0; blk * 128 < n; ++blk) {
        int base = blk * 128, len = n - base < 128 ? n - base : 128;
        for (int t = 0; t < len; ++t) {
            bad += hc[base + t] != ha[base + len - 1 - t];
            bad += rd[base + t] != hd[base + len - 1 - t];
        }
    }
    printf("launch syntax mismatches: %d\n", bad);
    cudaFree(a); cudaFree(b); cudaFree(c); cudaFree(dd);
    delete[] ha; delete[] hb; delete[] hc; delete[] hd; delete[] rd;
    printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
    return bad == 0 ? 0 : 1;
}
