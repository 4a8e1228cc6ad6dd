// Generic device code: function templates, functors with __device__ operator(), a templated
// transform-reduce kernel, constexpr helpers, template specialisation, non-type template params,
// __host__ __device__ functions shared by host reference and kernels, and namespaces.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cuda_runtime.h>

#define CUDA_CHECK(x)                                                            \
    do {                                                                         \
        cudaError_t e = (x);                                                     \
        if (e != cudaSuccess) {                                                  \
            fprintf(stderr, "CUDA error %s line %d\n", cudaGetErrorString(e), __LINE__); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

namespace ops {
struct Square {
    template <typename T>
    __host__ __device__ T operator()(T x) const { return x * x; }
};
struct AbsDiff {
    float ref;
    __host__ __device__ float operator()(float x) const { return fabsf(x - ref); }
};
template <typename T>
struct Plus {
    __host__ __device__ T operator()(T a, T b) const { return a + b; }
    static constexpr __host__ __device__ T identity() { return T(0); }
};
template <typename T>
struct Max {
    __host__ __device__ T operator()(T a, T b) const { return a > b ? a : b; }
    static constexpr __host__ __device__ T identity() { return T(-1e30); }
};
template <>
struct Max<int> {
    __host__ __device__ int operator()(int a, int b) const { return a > b ? a : b; }
    static constexpr __host__ __device__ int identity() { return -2147483647 - 1; }
};
}  // namespace ops

constexpr __host__ __device__ int ceilDiv(int a, int b) { return (a + b - 1) / b; }

template <typename T, typename Reduce>
__device__ T warpReduce(T v, Reduce op) {
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}

template <int BLOCK, typename Tin, typename Tout, typename Transform, typename Reduce>
__global__ void transformReduce(const Tin *in, Tout *blockOut, int n, Transform f, Reduce r) {
    static_assert(BLOCK % 32 == 0, "block must be whole warps");
    __shared__ Tout warpVals[BLOCK / 32];
    Tout acc = Reduce::identity();
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x) acc = r(acc, (Tout)f(in[i]));
    acc = warpReduce(acc, r);
    if (threadIdx.x % 32 == 0) warpVals[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < BLOCK / 32 ? warpVals[threadIdx.x] : Reduce::identity();
        acc = warpReduce(acc, r);
        if (threadIdx.x == 0) blockOut[blockIdx.x] = acc;
    }
}

template <typename T, int N>
struct SmallVec {
    T v[N];
    __host__ __device__ T dot(const SmallVec &o) const {
        T s = 0;
#pragma unroll
        for (int i = 0; i < N; ++i) s += v[i] * o.v[i];
        return s;
    }
};

template <int N>
__global__ void dots(const SmallVec<double, N> *a, const SmallVec<double, N> *b, double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i].dot(b[i]);
}

template <typename Tout, int BLOCK, typename Tin, typename F, typename R>
Tout runTR(const Tin *d_in, int n, F f, R r, int blocks) {
    Tout *d_out;
    CUDA_CHECK(cudaMalloc(&d_out, blocks * sizeof(Tout)));
    transformReduce<BLOCK, Tin, Tout><<<blocks, BLOCK>>>(d_in, d_out, n, f, r);
    CUDA_CHECK(cudaGetLastError());
    Tout *h = new Tout[blocks];
    CUDA_CHECK(cudaMemcpy(h, d_out, blocks * sizeof(Tout), cudaMemcpyDeviceToHost));
    Tout acc = R::identity();
    for (int b = 0; b < blocks; ++b) acc = r(acc, h[b]);
    delete[] h;
    cudaFree(d_out);
    return acc;
}

int main() {
    const int n = 50000;
    float *hf = new float[n];
    int *hi = new int[n];
    srand(1357);
    double refSq = 0, refAbs = 0;
    float refMax = -1e30f;
    int refIMax = -2147483647 - 1;
    for (int i = 0; i < n; ++i) {
        hf[i] = 2.f * rand() / RAND_MAX - 1.f;
        hi[i] = rand() % 60001 - 30000;  // squares fit in int
        refSq += ops::Square()(hf[i]);
        refAbs += fabsf(hf[i] - 0.25f);
        refMax = fmaxf(refMax, hf[i] * hf[i]);
        refIMax = hi[i] > refIMax ? hi[i] : refIMax;
    }
    float *df;
    int *di;
    CUDA_CHECK(cudaMalloc(&df, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&di, n * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(df, hf, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(di, hi, n * sizeof(int), cudaMemcpyHostToDevice));
    const int blocks = ceilDiv(n, 256 * 8);
    double sq = runTR<double, 256>(df, n, ops::Square(), ops::Plus<double>(), blocks);
    float ad = runTR<float, 128>(df, n, ops::AbsDiff{0.25f}, ops::Plus<float>(), blocks);
    float mx = runTR<float, 64>(df, n, ops::Square(), ops::Max<float>(), blocks);
    int imx = runTR<int, 256>(di, n, ops::Square(), ops::Max<int>(), 1);  // one block: all grid-stride
    printf("sum sq %.6f/%.6f, sum |x-.25| %.4f/%.4f, max sq %.6f/%.6f\n", sq, refSq, ad, refAbs, mx, refMax);
    int refISqMax = -2147483647 - 1;
    for (int i = 0; i < n; ++i) refISqMax = hi[i] * hi[i] > refISqMax ? hi[i] * hi[i] : refISqMax;
    bool ok = fabs(sq - refSq) < 1e-3 && fabs(ad - refAbs) < 1e-2 * refAbs && mx == refMax && imx == refISqMax;
    printf("int max of squares %d/%d (max element %d)\n", imx, refISqMax, refIMax);

    const int m = 500;
    SmallVec<double, 5> *ha = new SmallVec<double, 5>[m], *hb = new SmallVec<double, 5>[m];
    for (int i = 0; i < m; ++i)
        for (int k = 0; k < 5; ++k) {
            ha[i].v[k] = rand() % 100;
            hb[i].v[k] = rand() % 100;
        }
    SmallVec<double, 5> *da, *db;
    double *dd, *hd = new double[m];
    CUDA_CHECK(cudaMalloc(&da, m * sizeof(*da)));
    CUDA_CHECK(cudaMalloc(&db, m * sizeof(*db)));
    CUDA_CHECK(cudaMalloc(&dd, m * sizeof(double)));
    CUDA_CHECK(cudaMemcpy(da, ha, m * sizeof(*da), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db, hb, m * sizeof(*db), cudaMemcpyHostToDevice));
    dots<5><<<ceilDiv(m, 128), 128>>>(da, db, dd, m);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(hd, dd, m * sizeof(double), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < m; ++i) bad += hd[i] != ha[i].dot(hb[i]);
    printf("SmallVec dots mismatches %d\n", bad);
    ok = ok && bad == 0;
    cudaFree(df); cudaFree(di); cudaFree(da); cudaFree(db); cudaFree(dd);
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
